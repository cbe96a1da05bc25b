"""Helpers shared by the benchmark scripts."""

import json
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def machine() -> dict:
    """Where a result was measured: the CPU (`cpu_summary`: two VMs sold as one kind can differ — in speed, and in
    the packaged cross-encoder's scores by up to 0.1 between an AVX2 and an AVX-512 CPU), the runtime build installed
    (`describe_installed`), Python and the date."""
    import os

    from lessons.core.runtime_build import cpu_summary, describe_installed

    return {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "cpu": cpu_summary(),
        "runtime": describe_installed(),
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


def question_file(path: Path) -> list:
    """The questions of a benchmarks/questions/ file (JSON lines; a writer's `note` is dropped)."""
    from lessons.ingest.questions import Question

    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such question set — write it (JSON lines, as benchmarks/questions/README.md)"
        )
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                questions.append(Question.model_validate({k: v for k, v in json.loads(line).items() if k != "note"}))
            except ValueError as error:
                raise ValueError(f"{path}, line {number}: {error}") from None
    return questions
