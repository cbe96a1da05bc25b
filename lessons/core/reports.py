"""The numbers every evaluation reports: shares, means, percentages and goal verdicts, one way each.

Introduced in notebook 04 (the grading loop's goal table); the evaluations of notebooks 05 and 06 use the same
helpers, and `lessons.core.prose` turns their numbers into the findings' sentences (a percentage is `prose.pct`). Each helper says what it does
with an empty input (None, never a division by zero) so that a table cell and a sentence agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any


def share_where(items: Sequence[Any], predicate: Callable[[Any], Any]) -> float | None:
    """The share of `items` for which `predicate` holds (its result read as a bool); None for no items."""
    return sum(bool(predicate(item)) for item in items) / len(items) if items else None


def mean_or_none(values: Sequence[float]) -> float | None:
    """The mean of `values`; None for no values."""
    return sum(values) / len(values) if values else None


def mean_present(values: Iterable[Any]) -> float | None:
    """The mean of the values that are present (a pandas column: None and NaN left out); None when none is."""
    import pandas as pd

    present = pd.Series(values).dropna()
    return float(present.astype(float).mean()) if len(present) else None


def count_where(items: Sequence[Any], predicate: Callable[[Any], Any]) -> tuple[int, int]:
    """(how many of `items` satisfy `predicate`, how many items there are)."""
    return sum(bool(predicate(item)) for item in items), len(items)
