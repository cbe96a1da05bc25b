"""The notebooks in solutions/ and notebooks/ are exactly what their masters (masters/NN_*.py) generate.

Fast: nothing is executed. `python -m scripts.notebooks` regenerates them; `--check` is what runs here.
"""

import shutil

import nbformat
import pytest

from checks.exercises import BEGIN, BLANK, EXERCISE_TAG
from lessons.settings import PROJECT_ROOT
from scripts.notebooks import FIX, MasterError, main, masters, notebook_text, render, sync

MASTERS = masters(PROJECT_ROOT)
FIRST = "00_setup"


def test_every_notebook_has_a_master():
    assert MASTERS, "no masters/NN_*.py found"
    for folder in ("solutions", "notebooks"):
        names = sorted(p.stem for p in (PROJECT_ROOT / folder).glob("*.ipynb"))
        assert names == [m.stem for m in MASTERS], f"{folder}/ and masters/ hold different notebooks"


def test_generated_notebooks_are_up_to_date():
    stale = sync(PROJECT_ROOT, check_only=True)
    assert not stale, "generated notebooks out of date with masters/ — " + FIX + ":\n  " + "\n  ".join(stale)


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.name)
def test_a_master_renders_a_notebook_the_course_can_run(master):
    nb = render(master)
    assert [c["id"] for c in nb.cells] == [f"c{i:03d}" for i in range(len(nb.cells))]
    assert nb.metadata["kernelspec"]["name"] == "python3"
    quick = nb.metadata["agentic_rag"]["quick_parameters"]
    parameters = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(parameters) == 1, f"{master.name}: expected one cell tagged parameters"
    for name in quick:
        assert f"{name} =" in parameters[0].source, f"{master.name}: quick parameter {name} not in the parameters cell"
    exercises = [c for c in nb.cells if EXERCISE_TAG in c.metadata.get("tags", [])]
    assert exercises and all(BEGIN in c.source for c in exercises), f"{master.name}: exercises without a solution"
    assert all(c.cell_type == "code" and not c.outputs for c in nb.cells if c.cell_type == "code")


def _copy_project(tmp_path, names=(FIRST,)):
    """A project root in tmp_path with some masters, generated."""
    (tmp_path / "masters").mkdir()
    for name in names:
        shutil.copy(PROJECT_ROOT / "masters" / f"{name}.py", tmp_path / "masters")
    written = sync(tmp_path)
    assert sorted(written) == sorted(f"{folder}/{n}.ipynb: missing" for folder in ("solutions", "notebooks")
                                     for n in names)
    return tmp_path


def test_generation_writes_what_is_committed(tmp_path):
    root = _copy_project(tmp_path)
    for folder in ("solutions", "notebooks"):
        assert (root / folder / f"{FIRST}.ipynb").read_text() == (PROJECT_ROOT / folder / f"{FIRST}.ipynb").read_text()
    learner = nbformat.read(root / "notebooks" / f"{FIRST}.ipynb", as_version=4)
    blanks = [c for c in learner.cells if EXERCISE_TAG in c.metadata.get("tags", [])]
    assert blanks and all(BLANK in c.source and BEGIN not in c.source for c in blanks)
    assert sync(root, check_only=True) == []


def test_the_check_fails_on_an_edited_master_and_names_both_files(tmp_path):
    root = _copy_project(tmp_path)
    master = root / "masters" / f"{FIRST}.py"
    text = master.read_text()
    assert "# ## 1. The chat model" in text
    master.write_text(text.replace("# ## 1. The chat model", "# ## 1. The chat model, edited"))
    before = {p: p.read_text() for p in root.glob("*/*.ipynb")}
    stale = sync(root, check_only=True)
    assert stale == [f"solutions/{FIRST}.ipynb: differs from masters/{FIRST}.py",
                     f"notebooks/{FIRST}.ipynb: differs from masters/{FIRST}.py"]
    assert {p: p.read_text() for p in root.glob("*/*.ipynb")} == before, "--check must not write"
    sync(root)
    assert "The chat model, edited" in (root / "notebooks" / f"{FIRST}.ipynb").read_text()
    assert sync(root, check_only=True) == []


def test_the_check_fails_on_a_hand_edited_or_missing_or_orphan_notebook(tmp_path):
    root = _copy_project(tmp_path)
    learner = root / "notebooks" / f"{FIRST}.ipynb"
    learner.write_text(learner.read_text().replace(BLANK, "binary_score: str = 'yes'"))
    (root / "solutions" / f"{FIRST}.ipynb").unlink()
    shutil.copy(learner, root / "notebooks" / "99_orphan.ipynb")
    assert sync(root, check_only=True) == [
        f"solutions/{FIRST}.ipynb: missing",
        f"notebooks/{FIRST}.ipynb: differs from masters/{FIRST}.py",
        "notebooks/99_orphan.ipynb: no master masters/99_orphan.py (delete the notebook, or add its master)",
    ]


def test_the_command_exits_1_naming_every_stale_file(tmp_path, monkeypatch, capsys):
    root = _copy_project(tmp_path)
    (root / "solutions" / f"{FIRST}.ipynb").write_text("{}")
    monkeypatch.setattr("scripts.notebooks.ROOT", root)
    assert main(["--check"]) == 1
    err = capsys.readouterr().err
    assert f"solutions/{FIRST}.ipynb" in err and "make notebooks" in err
    assert main([]) == 0
    assert main(["--check"]) == 0


def test_a_master_with_metadata_the_notebooks_do_not_carry_is_an_error(tmp_path):
    text = (PROJECT_ROOT / "masters" / f"{FIRST}.py").read_text()
    bad = tmp_path / f"{FIRST}.py"
    bad.write_text(text.replace('# %% tags=["parameters"]', '# %% tags=["parameters"] lang="zh"', 1))
    with pytest.raises(MasterError, match=r"00_setup\.py, cell 1 .*unexpected cell metadata \['lang'\]"):
        render(bad)
    bad.write_text(text.replace("#   kernelspec:", "#   widgets: {}\n#   kernelspec:", 1))
    with pytest.raises(MasterError, match=r"00_setup\.py: unexpected notebook metadata \['widgets'\]"):
        render(bad)


def test_notebook_text_is_what_nbformat_writes(tmp_path):
    nb = render(MASTERS[0])
    nbformat.write(nb, tmp_path / "nb.ipynb")
    assert (tmp_path / "nb.ipynb").read_text() == notebook_text(nb)
