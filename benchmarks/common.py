"""Helpers shared by the benchmark scripts."""

import json
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def machine() -> dict:
    import os

    return {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
    }


def save(name: str, results: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **results}, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {path}")
    return path


def best_of(fn, repeat: int = 3) -> float:
    """Fastest wall time of `repeat` runs of fn(), in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
