"""The one measurement harness of the course's evaluations: run a piece of work, meter its chat-model calls, time
it, and (when asked) record its error instead of losing the run.

Introduced in notebook 05 (three-agent verification); the pipeline evaluation of notebook 06 and the method
comparison of notebook 07 measure each question through it, so their seconds, calls and tokens mean the same thing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lessons.core.models import LocalServerCrashed
from lessons.core.usage import UsageMeter, metered


@dataclass
class Measurement:
    """What `measure` saw: the work's result (None when it failed), its seconds, its meter, and its error."""

    value: Any
    seconds: float
    meter: UsageMeter
    error: str | None = None

    def cost(self) -> dict[str, Any]:
        """The result-table columns of the cost: seconds, then the meter's counts (`UsageMeter.counts`)."""
        return {"seconds": self.seconds, **self.meter.counts()}


def measure(work: Callable[[], Any], *, catch: bool = False, error_chars: int | None = 300) -> Measurement:
    """Run `work()` inside a fresh `metered()` block and time it.

    With `catch`, an exception becomes the measurement's `error` ("Type: message", the message cut to `error_chars`)
    so one failing question does not lose the run — except `LocalServerCrashed`, which every later question would
    hit too: it is raised, to stop the run and say why. Without `catch`, exceptions propagate."""
    error = value = None
    with metered() as meter:
        started = time.perf_counter()
        try:
            value = work()
        except LocalServerCrashed:
            raise
        except Exception as exc:  # recorded in the row when asked; raised otherwise
            if not catch:
                raise
            message = str(exc) if error_chars is None else str(exc)[:error_chars]
            error = f"{type(exc).__name__}: {message}"
        seconds = time.perf_counter() - started
    return Measurement(value, seconds, meter, error)
