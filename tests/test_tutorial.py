"""docs/tutorial.md is executable documentation: every `>>>` example runs as a doctest."""
from __future__ import annotations

import doctest
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"


def test_tutorial_examples_print_what_the_tutorial_says():
    result = doctest.testfile(str(TUTORIAL), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 30
    assert result.failed == 0
