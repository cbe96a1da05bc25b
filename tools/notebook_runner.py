"""Execute notebooks headless: the test suite runs them small, the course run runs them full size.

Introduced in notebook 00 (setup). A notebook's sample sizes live in its cell tagged `parameters`
(papermill's convention); the runner injects overrides in a new cell right after it, tagged
`injected-parameters`. `quick=True` applies the small sizes stored in the notebook's metadata
(`metadata.agentic_rag.quick_parameters`), which is what the test suite uses.

    python -m tools.notebook_runner                      # every notebook, full size → runs/<time>/
    python -m tools.notebook_runner --quick notebooks/00_setup.ipynb

Each run writes the executed copies and `summary.md` / `summary.json`: per notebook whether it
passed, seconds, the model used, LLM calls and tokens, and the exercise checks' results.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from lessons.core.settings import PROJECT_ROOT

PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"


@dataclass
class NotebookRun:
    notebook: str
    passed: bool
    seconds: float
    model: str
    llm_calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    checks: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    executed_path: str | None = None
    slowest_cells: list[dict[str, Any]] = field(default_factory=list)  # where the time went: cell, seconds, first line


def cell_seconds(nb: nbformat.NotebookNode, top: int = 5) -> list[dict[str, Any]]:
    """The `top` slowest code cells of an executed notebook (nbclient records each cell's start and end)."""
    from datetime import datetime

    rows = []
    for number, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type != "code" or "iopub.execute_input" not in timing or "shell.execute_reply" not in timing:
            continue
        start, end = (
            datetime.fromisoformat(timing[key])  # Python ≥ 3.11 reads the "Z" suffix
            for key in ("iopub.execute_input", "shell.execute_reply")
        )
        first = next((line for line in cell.source.splitlines() if line.strip() and not line.startswith("#")), "")
        rows.append({"cell": number, "seconds": round((end - start).total_seconds(), 1), "first line": first[:100]})
    return sorted(rows, key=lambda row: -row["seconds"])[:top]


def quick_parameters(nb: nbformat.NotebookNode) -> dict[str, Any]:
    """The small sizes a notebook declares for the test suite."""
    return dict(nb.metadata.get("agentic_rag", {}).get("quick_parameters", {}))


def inject_parameters(nb: nbformat.NotebookNode, parameters: dict[str, Any]) -> nbformat.NotebookNode:
    """Insert a cell assigning `parameters` right after the `parameters` cell (or first, if none)."""
    if not parameters:
        return nb
    source = "# Injected by tools.notebook_runner\n" + "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": [INJECTED_TAG]})
    cells = nb.cells
    index = next((i + 1 for i, c in enumerate(cells) if PARAMETERS_TAG in c.metadata.get("tags", [])), 0)
    cells.insert(index, cell)
    return nb


@contextlib.contextmanager
def _environment(**values: str):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def suite_order() -> list[Path]:
    """The notebooks tests/test_notebooks.py runs, in its order: every solutions/ notebook, then the English learner
    copies (notebooks/, exercises blank; their chat-model calls come from the solutions' cache), then the Chinese copies
    (notebooks/zh/). `benchmarks/bench_notebooks.py --quick` measures the same order."""
    solutions = sorted((PROJECT_ROOT / "solutions").glob("*.ipynb"))
    learner = [PROJECT_ROOT / "notebooks" / p.name for p in solutions]
    return [*solutions, *learner, *sorted((PROJECT_ROOT / "notebooks" / "zh").glob("*.ipynb"))]


# Seconds one cell may run in a quick (test-size) run before the run fails: a hang must not stall CI.
# Full-size runs have no per-cell limit by default: with the LLM cache cold, one cell legitimately runs
# for more than an hour on 2 cores (notebook 02's LLM-technique evaluation did), and `make prewarm` from an empty cache must not fail there.
QUICK_CELL_TIMEOUT = 3600


def execute_notebook(
    path: str | Path,
    *,
    quick: bool = False,
    parameters: dict[str, Any] | None = None,
    out_dir: str | Path | None = None,
    timeout: int | None = None,
) -> NotebookRun:
    """Run one notebook top to bottom in a fresh kernel, with its folder as the working directory.

    `timeout` is the per-cell limit in seconds (-1: none); left at None it is `QUICK_CELL_TIMEOUT` for a
    quick run and no limit at full size. Introduced for the headless course run and the notebook tests.
    """
    from lessons.core.models import active_model_info

    if timeout is None:
        timeout = QUICK_CELL_TIMEOUT if quick else -1
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    overrides = {**(quick_parameters(nb) if quick else {}), **(parameters or {})}
    inject_parameters(nb, overrides)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with tempfile.TemporaryDirectory() as tmp:
        usage_file, check_log = Path(tmp) / "usage.json", Path(tmp) / "checks.jsonl"
        started = time.perf_counter()
        error = None
        with _environment(AGENTIC_RAG_USAGE_FILE=str(usage_file), AGENTIC_RAG_CHECK_LOG=str(check_log)):
            try:
                client.execute()
            except CellExecutionError as exc:
                error = str(exc)[-3000:]
            except Exception as exc:  # noqa: BLE001 - a kernel death or timeout is a failed run, reported like one
                error = f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - started
        usage = json.loads(usage_file.read_text()) if usage_file.exists() else {}
        checks = _read_json_lines(check_log)
    executed_path = None
    if out_dir is not None:
        out = Path(out_dir) / path.parent.name / path.name
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out)
        executed_path = str(out)
    return NotebookRun(
        notebook=str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path),
        passed=error is None,
        seconds=round(seconds, 1),
        model=active_model_info().name,
        llm_calls=usage.get("calls", 0),
        cached_calls=usage.get("cached_calls", 0),
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        checks=checks,
        error=error,
        executed_path=executed_path,
        slowest_cells=cell_seconds(nb),
    )


def summary_markdown(runs: list[NotebookRun]) -> str:
    """The one-page summary of a run, as a Markdown table."""
    lines = [
        "| notebook | result | seconds | model | LLM calls (cached) | tokens in / out | checks passed |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for run in runs:
        passed_checks = sum(1 for c in run.checks if c.get("passed"))
        lines.append(
            f"| {run.notebook} | {'passed' if run.passed else 'FAILED'} | {run.seconds:.1f} | {run.model} | "
            f"{run.llm_calls} ({run.cached_calls}) | {run.input_tokens:,} / {run.output_tokens:,} | "
            f"{passed_checks}/{len(run.checks)} |"
        )
    failures = [run for run in runs if not run.passed]
    for run in failures:
        lines += ["", f"### {run.notebook} failed", "```", (run.error or "").strip()[-1500:], "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute course notebooks headless and write a summary.")
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: every notebooks/*.ipynb)")
    parser.add_argument("--quick", action="store_true", help="use each notebook's small test sizes")
    parser.add_argument("--out", default=None, help="output folder (default: runs/<date-time>)")
    parser.add_argument(
        "--cell-timeout",
        type=int,
        default=None,
        help=f"seconds one cell may run, -1 for no limit (default: {QUICK_CELL_TIMEOUT} with --quick, "
        "no limit at full size)",
    )
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.notebooks] or sorted((PROJECT_ROOT / "notebooks").glob("*.ipynb"))
    out_dir = Path(args.out or PROJECT_ROOT / "runs" / time.strftime("%Y%m%d-%H%M%S"))
    runs = []
    for path in paths:
        print(f"running {path} …", flush=True)
        run = execute_notebook(path, quick=args.quick, out_dir=out_dir, timeout=args.cell_timeout)
        print(f"  {'passed' if run.passed else 'FAILED'} in {run.seconds:.1f} s, {run.llm_calls} LLM calls", flush=True)
        runs.append(run)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps([asdict(r) for r in runs], indent=2))
    (out_dir / "summary.md").write_text(summary_markdown(runs))
    print(f"\nSummary: {out_dir / 'summary.md'}\n")
    print(summary_markdown(runs))
    return 0 if all(r.passed for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
