"""Numbers into sentences: the findings of a notebook are rendered from its own results.

Introduced in notebook 02 (retrieval tricks); every notebook's findings use it. A findings cell
builds Markdown from the result tables and displays it, so a learner who re-runs reads text that
matches their numbers, and words that depend on a direction ("helps", "hurts") follow the sign.

- `pct(0.8333)` → "83%"; `num(0.8333)` → "0.83"; `signed(-0.05)` → "−0.050"; `share(5, 6)` → "5/6".
- `direction(delta, up, down, flat)` picks the word for the measured sign (|delta| ≤ `tolerance` is flat).
"""

from __future__ import annotations

import math

MINUS = "−"


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def pct(value: float | None, digits: int = 0) -> str:
    """A share as a percentage: 0.8333 → "83%"; None or NaN → "n/a"."""
    return "n/a" if _missing(value) else f"{100 * value:.{digits}f}%"


def num(value: float | None, digits: int = 2) -> str:
    """A decimal with a fixed number of digits; None or NaN → "n/a"."""
    return "n/a" if _missing(value) else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    """A difference with its sign, using a true minus: +0.045, −0.020, ±0.000."""
    if _missing(value):
        return "n/a"
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0:
        return f"±{text}"
    return f"+{text}" if value > 0 else f"{MINUS}{text}"


def share(count: int, total: int) -> str:
    """ "count/total", the raw numbers behind a rate."""
    return f"{count}/{total}"


def direction(delta: float | None, up: str, down: str, flat: str, tolerance: float = 0.0) -> str:
    """The word for a measured change: `up` when delta > tolerance, `down` when < −tolerance, else `flat`."""
    if _missing(delta) or abs(delta) <= tolerance:
        return flat
    return up if delta > 0 else down
