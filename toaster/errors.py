"""Errors a user can cause. The CLI prints them as one line and exits with code 2."""
from __future__ import annotations


class ToasterError(Exception):
    """A user-facing error with an optional source position (file, line, column)."""

    def __init__(self, message: str, *, file: str | None = None,
                 line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column

    def located(self, file: str | None = None, line: int | None = None,
                column: int | None = None) -> "ToasterError":
        """Fill in position fields that are still unknown."""
        self.file = self.file or file
        self.line = self.line if self.line is not None else line
        self.column = self.column if self.column is not None else column
        return self

    def __str__(self) -> str:
        where = ""
        if self.file is not None or self.line is not None:
            where = f"{self.file or '<input>'}"
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        return f"{where}{self.kind}: {self.message}"

    kind = "error"


class SqlSyntaxError(ToasterError):
    kind = "syntax error"


class SemanticError(ToasterError):
    """Unknown or ambiguous names, type errors."""
    kind = "error"


class UnsupportedError(ToasterError):
    """A construct (or a backend gap) that toaster does not support yet."""
    kind = "not supported yet"


class InputError(ToasterError):
    """A malformed input row; the batch holding it is rejected whole."""
    kind = "bad input"


class UnknownNameError(ToasterError, KeyError):
    """A map or result name the engine does not have (still a KeyError for old callers)."""
    kind = "error"
