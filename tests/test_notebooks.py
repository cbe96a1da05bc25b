"""Every notebook runs top to bottom offline, and every exercise check fails blank and passes solved."""

from pathlib import Path

import nbformat
import pytest

from checks.exercises import count_exercises
from lessons.core.settings import PROJECT_ROOT
from tools.notebook_runner import execute_notebook, suite_order
from tools.zh_outputs import unexplained_findings

pytestmark = pytest.mark.notebook

# solutions/, then the English learner copies, then the Chinese ones (notebooks/zh/, one per translated master)
SUITE = suite_order()


def test_there_are_notebooks():
    assert any(p.parent.name == "solutions" for p in SUITE), "no notebooks found in solutions/"


# That notebooks/ and solutions/ are generated from masters/ is tests/test_notebook_sources.py (fast).


@pytest.mark.parametrize(
    "path",
    SUITE,
    ids=lambda p: str(p.relative_to(PROJECT_ROOT)),
)
def test_notebook_runs_and_its_checks_behave(path: Path, request, tmp_path):
    exercises = count_exercises(nbformat.read(path, as_version=4))
    chinese = path.parent.name == "zh"
    run = execute_notebook(path, quick=True, out_dir=tmp_path if chinese else None)
    request.config.notebook_runs.append(run)
    assert run.passed, f"{run.notebook} failed:\n{run.error}"
    assert len(run.checks) == exercises, f"expected {exercises} check results, got {run.checks}"
    if path.parent.name == "solutions":
        failed = [c for c in run.checks if not c["passed"]]
        assert not failed, f"a check fails on the solution: {failed}"
    else:
        passed = [c for c in run.checks if c["passed"]]
        assert not passed, f"a check passes on the blank exercise, so it cannot fail: {passed}"
    if chinese:  # a Chinese reader meets no English sentence in the outputs but the ones shown on purpose
        english = unexplained_findings(Path(run.executed_path))
        assert not english, (
            f"{run.notebook} shows English in its outputs (python -m tools.zh_outputs lists them): translate the "
            "message with t(), show the reader's language, or name the cell in tools.zh_outputs.ON_PURPOSE with "
            "the reason:\n  " + "\n  ".join(f"cell {n} [{kind}]: {text[:120]}" for n, kind, text in english)
        )
