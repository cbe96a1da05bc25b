"""The autograder plumbing and the notebook runner's parameter injection."""

import json

import nbformat
import pytest

from checks import Hint, expect, run_check
from checks.exercises import BLANK, blank_source, learner_notebook
from tools.notebook_runner import NotebookRun, inject_parameters, summary_markdown


def test_solution_blocks_are_blanked_at_their_indentation():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x * 2\n    ### END SOLUTION\n\nprint(f)"
    assert blank_source(source) == f"def f(x):\n    {BLANK}\n\nprint(f)"


@pytest.mark.parametrize(
    "source", ["### BEGIN SOLUTION\nx", "### END SOLUTION", "### BEGIN SOLUTION\n### BEGIN SOLUTION"]
)
def test_unbalanced_markers_are_rejected(source):
    with pytest.raises(ValueError):
        blank_source(source)


def test_learner_copy_has_no_outputs_and_no_answers():
    master = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(
        "x = 1\n### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION", metadata={"tags": ["exercise"]}
    )
    cell.outputs = [nbformat.v4.new_output("stream", text="42")]
    master.cells = [cell]
    learner = learner_notebook(master)
    assert "42" not in learner.cells[0].source and learner.cells[0].outputs == []
    assert "answer = 42" in master.cells[0].source  # the master is untouched


def test_run_check_reports_hints_and_errors_and_logs_them(tmp_path, monkeypatch, fresh_settings, capsys):
    log = tmp_path / "checks.jsonl"
    monkeypatch.setenv("AGENTIC_RAG_CHECK_LOG", str(log))
    assert run_check("ok", lambda: expect(True, "unused"))
    assert not run_check("hinted", lambda: expect(False, "look at the sign"))
    assert not run_check("crashed", lambda: 1 / 0)
    out = capsys.readouterr().out
    assert "✅ ok" in out and "Hint: look at the sign" in out and "ZeroDivisionError" in out
    results = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["exercise"], r["passed"]) for r in results] == [("ok", True), ("hinted", False), ("crashed", False)]
    assert issubclass(Hint, AssertionError)


def test_parameters_are_injected_right_after_the_parameters_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import x"),
        nbformat.v4.new_code_cell("N = 100", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print(N)"),
    ]
    inject_parameters(nb, {"N": 5, "NAME": "zh"})
    assert nb.cells[2].source.endswith("N = 5\nNAME = 'zh'")
    assert nb.cells[2].metadata["tags"] == ["injected-parameters"]


def test_summary_lists_each_notebook_and_failures():
    runs = [
        NotebookRun("notebooks/00.ipynb", True, 12.3, "qwen", 4, 2, 100, 20, [{"passed": True}]),
        NotebookRun("notebooks/01.ipynb", False, 1.0, "qwen", error="NameError: x"),
    ]
    text = summary_markdown(runs)
    assert "| notebooks/00.ipynb | passed | 12.3 | qwen | 4 (2) | 100 / 20 | 1/1 |" in text
    assert "### notebooks/01.ipynb failed" in text and "NameError: x" in text


def test_a_full_size_run_has_no_cell_limit_and_a_quick_run_has_one(tmp_path, monkeypatch):
    # A cold full-size cell can run for more than an hour on 2 cores (notebook 02); a quick run must not hang CI.
    import tools.notebook_runner as runner

    limits = []

    class RecordingClient:
        def __init__(self, nb, timeout, **_):
            limits.append(timeout)

        def execute(self):
            return None

    monkeypatch.setattr(runner, "NotebookClient", RecordingClient)
    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), path)
    assert runner.execute_notebook(path).passed
    runner.execute_notebook(path, quick=True)
    runner.execute_notebook(path, timeout=60)
    assert limits == [-1, runner.QUICK_CELL_TIMEOUT, 60]
    runner.main([str(path), "--out", str(tmp_path / "out"), "--cell-timeout", "7"])
    assert limits[-1] == 7


def test_the_runner_reports_where_the_time_went():
    import nbformat

    from tools.notebook_runner import cell_seconds

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("# a comment\nslow()"),
        nbformat.v4.new_code_cell("fast()"),
        nbformat.v4.new_code_cell("never_ran()"),
    ]
    nb.cells[1].metadata["execution"] = {
        "iopub.execute_input": "2026-12-01T10:00:00.000Z",
        "shell.execute_reply": "2026-12-01T10:01:30.500Z",
    }
    nb.cells[2].metadata["execution"] = {
        "iopub.execute_input": "2026-12-01T10:01:31.000Z",
        "shell.execute_reply": "2026-12-01T10:01:32.000Z",
    }
    rows = cell_seconds(nb)
    assert rows == [
        {"cell": 1, "seconds": 90.5, "first line": "slow()"},
        {"cell": 2, "seconds": 1.0, "first line": "fast()"},
    ]
    assert cell_seconds(nb, top=1) == rows[:1]
