"""The course autograder: checks for the exercises, with hints that teach.

A check cell in a notebook calls e.g. `checks.nb00.check_grade_schema(RelevanceGrade)`. It prints
✅ or ❌ with a hint and never raises, so a notebook with an unfinished exercise still runs to the
end. From the command line, `python -m checks notebooks/00_setup.ipynb` runs a notebook and prints
every check's result (exit code 1 when one fails).

Writing a check: raise `Hint("what to look at")` for a wrong answer; any other exception from the
learner's code is reported as such.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any


class Hint(AssertionError):
    """A failed check; the message is a teaching hint, not a bare assert."""


def expect(condition: bool, hint: str) -> None:
    """Fail the current check with `hint` unless `condition` holds."""
    if not condition:
        raise Hint(hint)


def _log(exercise: str, passed: bool, message: str) -> None:
    path = os.environ.get("AGENTIC_RAG_CHECK_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps({"exercise": exercise, "passed": passed, "message": message}) + "\n")


class CheckResult:
    """Whether a check passed; true or false like a bool, and silent as a notebook cell's value."""

    def __init__(self, passed: bool):
        self.passed = passed

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"CheckResult(passed={self.passed})"

    def _ipython_display_(self) -> None:
        """Show nothing: the check has already printed its ✅ or ❌ line."""


def run_check(exercise: str, check: Callable[[], Any]) -> CheckResult:
    """Run `check`; print ✅ or ❌ with the hint; return whether it passed."""
    try:
        check()
    except Hint as hint:
        message = str(hint)
        print(f"❌ {exercise}: not yet.\n   Hint: {message}")
        _log(exercise, False, message)
        return CheckResult(False)
    except Exception as error:  # the learner's code raised: show it as feedback, not a traceback
        message = f"your code raised {type(error).__name__}: {error}"
        print(f"❌ {exercise}: {message}")
        _log(exercise, False, message)
        return CheckResult(False)
    print(f"✅ {exercise}: passed.")
    _log(exercise, True, "")
    return CheckResult(True)
