"""The course autograder: checks for the exercises, with hints that teach.

A check cell in a notebook calls e.g. `checks.nb00.check_grade_schema(RelevanceGrade)`. It prints
✅ or ❌ with a hint and never raises, so a notebook with an unfinished exercise still runs to the
end. From the command line, `python -m checks notebooks/00_setup.ipynb` runs a notebook and prints
every check's result (exit code 1 when one fails).

Writing a check: raise `Hint("what to look at", zh="看哪里")` for a wrong answer, or call
`expect(condition, "hint", zh="提示")`; any other exception from the learner's code is reported as such.
Checks speak the notebook's language (`lessons.core.i18n.course_language()`: the Chinese copy in
`notebooks/zh/` gets the ✅ / ❌ lines and the hints in Chinese). A check of a translated notebook gives
every hint and its exercise name a `zh=` twin; tests/test_i18n.py fails on one without.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lessons.core.i18n import ENGLISH, course_language
from lessons.core.settings import get_settings

# The lines a check prints, per language.
MESSAGES = {
    "en": {
        "failed": "❌ {exercise}: not yet.\n   Hint: {hint}",
        "passed": "✅ {exercise}: passed.",
        "raised": "your code raised {kind}: {error}",
        "error": "❌ {exercise}: {message}",
    },
    "zh": {
        "failed": "❌ {exercise}：还没通过。\n   提示：{hint}",
        "passed": "✅ {exercise}：通过。",
        "raised": "你的代码抛出了 {kind}：{error}",
        "error": "❌ {exercise}：{message}",
    },
}


def _in_language(english: str, translations: dict[str, str | None]) -> str:
    language = course_language()
    return english if language == ENGLISH else (translations.get(language) or english)


class Hint(AssertionError):
    """A failed check; the message is a teaching hint, not a bare assert. `zh=` is its Chinese twin,
    shown in the Chinese copy of the notebook."""

    def __init__(self, hint: str, *, zh: str | None = None):
        super().__init__(_in_language(hint, {"zh": zh}))


def expect(condition: bool, hint: str, *, zh: str | None = None) -> None:
    """Fail the current check with `hint` (or, in the Chinese copy, its twin `zh`) unless `condition` holds."""
    if not condition:
        raise Hint(hint, zh=zh)


def _log(exercise: str, passed: bool, message: str) -> None:
    path = get_settings().check_log
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


def run_check(exercise: str, check: Callable[[], Any], *, zh: str | None = None) -> CheckResult:
    """Run `check`; print ✅ or ❌ with the hint; return whether it passed. `zh` is the exercise's Chinese name."""
    messages = MESSAGES[course_language()]
    exercise = _in_language(exercise, {"zh": zh})
    try:
        check()
    except Hint as hint:
        message = str(hint)
        print(messages["failed"].format(exercise=exercise, hint=message))
        _log(exercise, False, message)
        return CheckResult(False)
    except Exception as error:  # noqa: BLE001 - the learner's code raised: shown and logged as feedback, not a traceback
        message = messages["raised"].format(kind=type(error).__name__, error=error)
        print(messages["error"].format(exercise=exercise, message=message))
        _log(exercise, False, message)
        return CheckResult(False)
    print(messages["passed"].format(exercise=exercise))
    _log(exercise, True, "")
    return CheckResult(True)
