"""Errors a user can cause (one line, exit code 2) and internal errors (a defect; exit code 3)."""
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


class CardinalityError(ToasterError):
    """A result read while a scalar subquery returns more than one row."""
    kind = "error"


class UsageError(ToasterError):
    """A bad command-line flag, pass name, pass option or API argument."""
    kind = "error"


class EngineStartError(ToasterError):
    """An engine's runtime did not start (e.g. Spark's JVM: no Java, a bad master, a time-out)."""
    kind = "error"


class InternalError(Exception):
    """A defect inside toaster: an exception raised by a pass. Not the user's fault; the CLI
    prints one line naming the pass and its stage and exits with code 3 (`--traceback` for more)."""

    def __init__(self, pass_name: str, stage: str, file: str | None, cause: BaseException,
                 during: str = ""):
        self.during = during       # e.g. "printing its output" when a dump hook failed
        self.pass_name = pass_name
        self.stage = stage
        self.file = file
        self.cause = cause
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" on {self.file}" if self.file else ""
        detail = str(self.cause).strip().splitlines()
        detail = detail[0] if detail else ""
        during = f" while {self.during}" if self.during else ""
        return (f"internal error in pass {self.pass_name} (stage {self.stage}){during}{where}: "
                f"{type(self.cause).__name__}{': ' + detail if detail else ''}")


class UnknownNameError(ToasterError, KeyError):
    """A map or result name the engine does not have (still a KeyError for old callers)."""
    kind = "error"


class IntegerOverflowError(ToasterError):
    """An integer value (a map's value or an arithmetic result feeding one) left the 64-bit
    range [-2^63, 2^63) during a batch; the batch is rolled back whole."""
    kind = "integer overflow"


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

