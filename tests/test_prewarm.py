"""The workshop pre-warm: each step runs once, a second run does nothing, changes re-run only what they touch.

The real steps are slow (a full notebook run is tens of minutes), so most tests drive `prewarm()` with
steps whose work is a counter; the course's own steps are checked for their keys, conditions and
error messages with the slow parts monkeypatched.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tools import prewarm as pw
from tools.notebook_runner import NotebookRun


def counting_step(name: str, tmp_path: Path, *, inputs=None, prerequisite=True, fail=False, present=None):
    """A step that counts its runs in a file and depends on `inputs` (a file whose text is the input)."""
    counter = tmp_path / f"{name.replace(':', '_')}.runs"

    def run() -> str:
        runs = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(runs))
        if fail:
            raise RuntimeError(f"{name} broke")
        return f"{name} run {runs}"

    return pw.Step(
        name,
        f"the {name} step",
        inputs=lambda: inputs.read_text() if inputs else name,
        run=run,
        prerequisite=prerequisite,
        outputs_present=present or (lambda: True),
    ), counter


def runs_of(counter: Path) -> int:
    return int(counter.read_text()) if counter.exists() else 0


def quiet_prewarm(steps, tmp_path, **kwargs):
    return pw.prewarm(
        steps, stamp=tmp_path / "prewarm" / "stamp.json", progress=False, disk={"work": tmp_path}, **kwargs
    )


def test_second_run_does_nothing_and_says_so(tmp_path):
    a, a_runs = counting_step("a", tmp_path)
    b, b_runs = counting_step("b", tmp_path)
    first = quiet_prewarm([a, b], tmp_path)
    assert [r.status for r in first.results] == ["built", "built"]
    assert first.ok and not first.nothing_to_do
    assert "READY — built 2 step(s)" in first.markdown()
    second = quiet_prewarm([a, b], tmp_path)
    assert (runs_of(a_runs), runs_of(b_runs)) == (1, 1)
    assert [r.status for r in second.results] == ["up to date", "up to date"]
    assert second.nothing_to_do and "nothing to do" in second.markdown()
    # the earlier detail and seconds are reported, not invented
    assert second.results[0].detail == "a run 1"
    assert second.results[0].seconds == round(first.results[0].seconds, 1)


def test_a_changed_input_reruns_only_its_step(tmp_path):
    source = tmp_path / "input.txt"
    source.write_text("v1")
    a, a_runs = counting_step("a", tmp_path, inputs=source)
    b, b_runs = counting_step("b", tmp_path)
    quiet_prewarm([a, b], tmp_path)
    source.write_text("v2")
    report = quiet_prewarm([a, b], tmp_path)
    assert [r.status for r in report.results] == ["built", "up to date"]
    assert (runs_of(a_runs), runs_of(b_runs)) == (2, 1)


def test_missing_outputs_rebuild_even_with_the_same_key(tmp_path):
    marker = tmp_path / "built-output"
    a, a_runs = counting_step("a", tmp_path, present=marker.exists)
    quiet_prewarm([a], tmp_path)
    assert runs_of(a_runs) == 1
    marker.write_text("now present")
    assert quiet_prewarm([a], tmp_path).results[0].status == "up to date"
    marker.unlink()  # e.g. `make clean-cache`
    assert quiet_prewarm([a], tmp_path).results[0].status == "built"
    assert runs_of(a_runs) == 2


def test_force_reruns_an_up_to_date_step(tmp_path):
    a, a_runs = counting_step("a", tmp_path)
    quiet_prewarm([a], tmp_path)
    quiet_prewarm([a], tmp_path, force=True)
    assert runs_of(a_runs) == 2


def test_a_failed_prerequisite_stops_the_run_and_is_not_stamped(tmp_path):
    a, _ = counting_step("a", tmp_path, fail=True)
    b, b_runs = counting_step("b", tmp_path)
    report = quiet_prewarm([a, b], tmp_path)
    assert [r.status for r in report.results] == ["FAILED", "not run"]
    assert "a broke" in report.results[0].detail
    assert runs_of(b_runs) == 0
    assert not report.ok and "NOT READY: a failed" in report.markdown()
    assert "a" not in pw.read_stamp(tmp_path / "prewarm" / "stamp.json")


def test_a_failed_notebook_does_not_stop_the_next_and_is_retried(tmp_path):
    bad, bad_runs = counting_step("notebook:01", tmp_path, prerequisite=False, fail=True)
    good, good_runs = counting_step("notebook:02", tmp_path, prerequisite=False)
    report = quiet_prewarm([bad, good], tmp_path)
    assert [r.status for r in report.results] == ["FAILED", "built"]
    again = quiet_prewarm([bad, good], tmp_path)
    assert [r.status for r in again.results] == ["FAILED", "up to date"]
    assert (runs_of(bad_runs), runs_of(good_runs)) == (2, 1)


def test_not_needed_steps_are_reported_with_their_reason(tmp_path):
    a, a_runs = counting_step("a", tmp_path)
    a.not_needed = lambda: "DeepSeek is the active model"
    report = quiet_prewarm([a], tmp_path)
    assert report.results[0].status == "not needed"
    assert report.results[0].detail == "DeepSeek is the active model"
    assert runs_of(a_runs) == 0 and report.ok


def test_report_files_and_disk_usage(tmp_path):
    (tmp_path / "blob").write_bytes(b"x" * 5000)
    a, _ = counting_step("a", tmp_path)
    report = quiet_prewarm([a], tmp_path)
    assert report.disk["work"] >= 5000
    saved = json.loads((tmp_path / "prewarm" / "report.json").read_text())
    assert saved["ok"] and saved["results"][0]["status"] == "built"
    assert (tmp_path / "prewarm" / "report.md").read_text() == report.markdown()


def test_a_corrupt_stamp_names_the_file_and_the_fix(tmp_path):
    stamp = tmp_path / "prewarm" / "stamp.json"
    stamp.parent.mkdir()
    stamp.write_text("{not json")
    a, _ = counting_step("a", tmp_path)
    with pytest.raises(pw.PrewarmError, match=r"stamp\.json.*Delete it"):
        quiet_prewarm([a], tmp_path)


def test_select_steps_only_skip_and_unknown_names(tmp_path):
    steps = [counting_step(n, tmp_path)[0] for n in ["install", "corpus", "notebook:00_setup", "notebook:01_chunking"]]

    def names(chosen):
        return [s.name for s in chosen]

    assert names(pw.select_steps(steps, skip_notebooks=True)) == ["install", "corpus"]
    assert names(pw.select_steps(steps, ["notebooks"])) == ["notebook:00_setup", "notebook:01_chunking"]
    assert names(pw.select_steps(steps, ["01_chunking", "install"])) == ["install", "notebook:01_chunking"]
    with pytest.raises(pw.PrewarmError, match="no such step.*corpus"):
        pw.select_steps(steps, ["corpse"])


def test_hash_files_sees_content_and_names(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.txt").write_text("one")
    first = pw.hash_files([folder], tmp_path)
    assert pw.hash_files([folder], tmp_path) == first
    (folder / "a.txt").write_text("two")
    second = pw.hash_files([folder], tmp_path)
    (folder / "a.txt").rename(folder / "b.txt")
    assert len({first, second, pw.hash_files([folder], tmp_path)}) == 3


# --- the course's steps ---------------------------------------------------------------------------------


def test_default_steps_cover_every_slow_thing_in_order(fresh_settings):
    steps = pw.default_steps(fresh_settings())
    names = [s.name for s in steps]
    assert names[:4] == ["install", "model", "corpus", "kb-index"]
    notebooks = sorted(p.stem for p in (pw.PROJECT_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert names[4:] == [pw.NOTEBOOK_PREFIX + n for n in notebooks]
    assert all(not s.prerequisite for s in steps[4:]) and all(s.prerequisite for s in steps[:4])


def test_model_step_is_not_needed_with_deepseek_or_a_shared_server(fresh_settings, monkeypatch):
    assert pw.model_step(fresh_settings()).not_needed() is None
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    fresh_settings.cache_clear()
    assert pw.model_step(fresh_settings()).not_needed() == "DeepSeek is the active model"
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    monkeypatch.setenv("AGENTIC_RAG_SERVER_URL", "http://10.0.0.5:8080")
    fresh_settings.cache_clear()
    assert "10.0.0.5" in pw.model_step(fresh_settings()).not_needed()


def test_switching_the_model_changes_the_notebook_keys_not_the_corpus_key(fresh_settings, monkeypatch, tmp_path):
    local = fresh_settings()
    nb = pw.notebook_step(pw.PROJECT_ROOT / "notebooks" / "00_setup.ipynb", local)
    corpus = pw.corpus_step(local)
    keys = pw.step_key(nb.inputs()), pw.step_key(corpus.inputs())
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    fresh_settings.cache_clear()
    deepseek = fresh_settings()
    assert pw.step_key(pw.notebook_step(pw.PROJECT_ROOT / "notebooks" / "00_setup.ipynb", deepseek).inputs()) != keys[0]
    assert pw.step_key(pw.corpus_step(deepseek).inputs()) == keys[1]


def test_notebook_key_follows_the_notebook_file(fresh_settings, tmp_path):
    settings = fresh_settings()
    copy = tmp_path / "00_setup.ipynb"
    copy.write_bytes((pw.PROJECT_ROOT / "notebooks" / "00_setup.ipynb").read_bytes())
    before = pw.step_key(pw.notebook_step(copy, settings).inputs())
    nb = nbformat.read(copy, as_version=4)
    nb.cells[1].source += "\nN_SIMILARITY_SENTENCES = 2"
    nbformat.write(nb, copy)
    assert pw.step_key(pw.notebook_step(copy, settings).inputs()) != before


def test_notebook_step_runs_full_size_and_reports_usage(fresh_settings, monkeypatch, tmp_path):
    calls = []

    def fake_execute(path, *, quick, out_dir, **_):
        calls.append((Path(path).name, quick))
        return NotebookRun(
            notebook=str(path),
            passed=True,
            seconds=61.2,
            model="qwen-test",
            llm_calls=5,
            cached_calls=3,
            input_tokens=1200,
            output_tokens=80,
        )

    monkeypatch.setattr("tools.notebook_runner.execute_notebook", fake_execute)
    step = pw.notebook_step(pw.PROJECT_ROOT / "notebooks" / "00_setup.ipynb", fresh_settings(), out_dir=tmp_path)
    detail = step.run()
    assert calls == [("00_setup.ipynb", False)]
    assert "61 s" in detail and "5 LLM calls (3 cached)" in detail and "qwen-test" in detail


def test_a_failing_notebook_names_itself(fresh_settings, monkeypatch, tmp_path):
    monkeypatch.setattr(
        "tools.notebook_runner.execute_notebook",
        lambda path, **_: NotebookRun(
            notebook=str(path), passed=False, seconds=3.0, model="m", error="ZeroDivisionError: boom"
        ),
    )
    step = pw.notebook_step(pw.PROJECT_ROOT / "notebooks" / "00_setup.ipynb", fresh_settings(), out_dir=tmp_path)
    with pytest.raises(pw.PrewarmError, match=r"00_setup\.ipynb failed at full size(.|\n)*boom"):
        step.run()


def test_model_step_rejects_a_file_with_the_wrong_hash(fresh_settings, monkeypatch, tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"not a model")
    monkeypatch.setattr(
        "lessons.core.local_model.resolve_local_model",
        lambda progress=True: type("M", (), {"path": fake, "alias": "x"})(),
    )
    with pytest.raises(Exception, match="expected cc324af0.*run `make prewarm` again"):
        pw.model_step(fresh_settings()).run()


def test_install_step_trusts_setup_sh_stamp(tmp_path):
    for name in ("pyproject.toml", "requirements.lock"):
        (tmp_path / name).write_text(name)
    (tmp_path / ".venv").mkdir()
    step = pw.install_step(tmp_path)
    assert not step.outputs_present()
    (tmp_path / ".venv" / (pw._setup_stamp_prefix(tmp_path) + "dev")).touch()
    assert not step.outputs_present(), "a dev-only install has no local model runtime"
    (tmp_path / ".venv" / (pw._setup_stamp_prefix(tmp_path) + "local,dev")).touch()
    assert step.outputs_present()


def test_cli_lists_and_rejects_unknown_steps(fresh_settings, capsys):
    assert pw.main(["--list", "--skip-notebooks"]) == 0
    listed = capsys.readouterr().out
    assert "install" in listed and "kb-index" in listed and "notebook:" not in listed
    assert pw.main(["--only", "nonsense"]) == 2
    assert "no such step" in capsys.readouterr().err


def test_every_notebook_opens_with_the_four_front_matter_rows():
    """The workshop guide relies on it: what you learn, prerequisites, time, and which model made the numbers."""
    for path in sorted((pw.PROJECT_ROOT / "solutions").glob("*.ipynb")):
        first = nbformat.read(path, as_version=4).cells[0]
        assert first.cell_type == "markdown", f"{path.name}: the first cell is not the front matter"
        for row in ("**You will learn**", "**Prerequisites**", "**Time**", "**Numbers in the text**"):
            assert row in first.source, f"{path.name}: front matter lacks {row}"
        time_row = next(line for line in first.source.splitlines() if "**Time**" in line)
        assert "offline" in time_row and "DeepSeek" in time_row, f"{path.name}: Time must give offline and DeepSeek"
