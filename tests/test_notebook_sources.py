"""The notebooks in solutions/, notebooks/ and notebooks/zh/ are exactly what their masters (masters/NN_*.py)
generate, every Chinese twin translates the English text as it is now, and a Chinese code twin's lines stand in
the places of the English comments, the code untouched.

Fast: nothing is executed. `python -m scripts.notebooks` regenerates them; `--check` is what runs here.
"""

import ast
import io
import re
import shutil
import tokenize

import nbformat
import pytest

from checks.exercises import BEGIN, BLANK, BLANKS, EXERCISE_TAG, learner_notebook
from lessons.core.settings import PROJECT_ROOT
from scripts.notebooks import (
    FIX,
    MasterError,
    learner,
    main,
    masters,
    notebook_text,
    parse,
    render,
    source_hash,
    sync,
    translated_learner,
    translation,
    translations,
)

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
    translated = [n for n in names if translation(tmp_path / "masters" / f"{n}.py", "zh").status == "translated"]
    assert sorted(written) == sorted(
        [f"{folder}/{n}.ipynb: missing" for folder in ("solutions", "notebooks") for n in names]
        + [f"notebooks/zh/{n}.ipynb: missing" for n in translated]
    )
    return tmp_path


def test_generation_writes_what_is_committed(tmp_path):
    root = _copy_project(tmp_path)
    for folder in ("solutions", "notebooks", "notebooks/zh"):
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
    before = {p: p.read_text() for p in root.glob("**/*.ipynb")}
    stale = sync(root, check_only=True)
    assert stale[:2] == [
        f"solutions/{FIRST}.ipynb: differs from masters/{FIRST}.py",
        f"notebooks/{FIRST}.ipynb: differs from masters/{FIRST}.py",
    ]
    # the edited English cell's Chinese twin is now stale, named by master and cell, with the new hash
    assert len(stale) == 3 and re.fullmatch(
        rf"masters/{FIRST}\.py, cell c\d{{3}} \('## 1\. The chat model, edited'\): its zh twin is stale — "
        r"it translates [0-9a-f]{12}, but the English text changed \(now [0-9a-f]{12}\); .*",
        stale[2],
    ), stale
    assert {p: p.read_text() for p in root.glob("**/*.ipynb")} == before, "--check must not write"
    assert sync(root) == stale, "writing fixes the notebooks, never the stale twin"
    assert "The chat model, edited" in (root / "notebooks" / f"{FIRST}.ipynb").read_text()
    assert sync(root, check_only=True) == stale[2:]


def test_the_check_fails_on_a_hand_edited_or_missing_or_orphan_notebook(tmp_path):
    root = _copy_project(tmp_path)
    learner = root / "notebooks" / f"{FIRST}.ipynb"
    learner.write_text(learner.read_text().replace(BLANK, "binary_score: str = 'yes'"))
    (root / "solutions" / f"{FIRST}.ipynb").unlink()
    shutil.copy(learner, root / "notebooks" / "99_orphan.ipynb")
    shutil.copy(learner, root / "notebooks" / "zh" / "99_orphan.ipynb")
    assert sync(root, check_only=True) == [
        f"solutions/{FIRST}.ipynb: missing",
        f"notebooks/{FIRST}.ipynb: differs from masters/{FIRST}.py",
        "notebooks/99_orphan.ipynb: no master masters/99_orphan.py (delete the notebook, or add its master)",
        (
            "notebooks/zh/99_orphan.ipynb: no master masters/99_orphan.py with zh twins (delete the notebook, or "
            "translate its master)"
        ),
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
    bad.write_text(text.replace('# %% tags=["parameters"]', '# %% tags=["parameters"] owner="me"', 1))
    with pytest.raises(MasterError, match=r"00_setup\.py, cell 2 .*unexpected cell metadata \['owner'\]"):
        render(bad)
    bad.write_text(text.replace("#   kernelspec:", "#   widgets: {}\n#   kernelspec:", 1))
    with pytest.raises(MasterError, match=r"00_setup\.py: unexpected notebook metadata \['widgets'\]"):
        render(bad)


# The house rule (CONTRIBUTING.md, "Shape of a notebook"): split a longer cell where a step ends, or move its logic to
# lessons/.
MAX_CELL_LINES = 25


@pytest.mark.parametrize("notebook", sorted((PROJECT_ROOT / "solutions").glob("*.ipynb")), ids=lambda p: p.name)
def test_no_code_cell_is_longer_than_the_house_rule(notebook):
    cells = nbformat.read(notebook, as_version=4).cells
    long = [f"{c.id} ({len(c.source.splitlines())} lines)" for c in cells
            if c.cell_type == "code" and len(c.source.splitlines()) > MAX_CELL_LINES]  # fmt: skip
    assert not long, (
        f"solutions/{notebook.name}: code cells over {MAX_CELL_LINES} lines: {', '.join(long)} — split them in "
        f"masters/{notebook.stem}.py where a step ends (a cell per step), or move the logic into lessons/"
    )


def test_notebook_text_is_what_nbformat_writes(tmp_path):
    nb = render(MASTERS[0])
    nbformat.write(nb, tmp_path / "nb.ipynb")
    assert (tmp_path / "nb.ipynb").read_text() == notebook_text(nb)


# --- translations: Chinese twins beside the English in the same master -------------------------------------

ZH_FOLDER = PROJECT_ROOT / "notebooks" / "zh"
# Masters with twins, found without parsing (a master another engineer is editing must not break collection).
WITH_TWINS = [m.stem for m in MASTERS if 'lang="zh"' in m.read_text(encoding="utf-8")]


def test_every_chinese_copy_comes_from_a_translated_master_and_no_master_is_half_translated():
    states = {s.master.stem: s for s in translations(PROJECT_ROOT)}
    translated = sorted(name for name, s in states.items() if s.status == "translated")
    assert FIRST in translated
    assert sorted(p.stem for p in ZH_FOLDER.glob("*.ipynb")) == translated == sorted(WITH_TWINS)
    for name, state in states.items():
        assert state.status in ("translated", "untranslated"), f"{name}: " + "\n".join(state.problems)
        if state.status == "untranslated":
            assert not (ZH_FOLDER / f"{name}.ipynb").exists()


@pytest.mark.parametrize("name", WITH_TWINS)
def test_a_chinese_copy_has_the_english_code_and_chinese_markdown(name):
    english = nbformat.read(PROJECT_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    chinese = nbformat.read(ZH_FOLDER / f"{name}.ipynb", as_version=4)
    assert chinese.metadata["agentic_rag"]["language"] == "zh"
    assert [(c.id, c.cell_type, c.metadata) for c in chinese.cells] == [
        (c.id, c.cell_type, c.metadata) for c in english.cells
    ]
    for en, zh in zip(english.cells, chinese.cells, strict=True):
        if en.cell_type == "code":
            assert _without_comments(zh.source) == _without_comments(en.source), (
                f"{name} {en.id}: the code differs between the languages (not only its comments)"
            )
            blanks = en.source.count(BLANK)
            assert zh.source.count(BLANKS["zh"]) == blanks and BLANK not in zh.source, f"{name} {en.id}: the blanks"
        else:
            cjk = len(re.findall(r"[\u4e00-\u9fff]", zh.source))
            assert cjk > len(zh.source) / 10, f"{name} {en.id}: the Chinese copy's Markdown is not Chinese"
            assert zh.source != en.source


# What must stay word for word in a comment: the exercise markers and pragmas.
KEPT = re.compile(r"### (?:BEGIN|END) SOLUTION|noqa[:\w, ]*|fmt: ?\w+|type: ?ignore")


def _without_comments(source):
    """A cell's code as Python reads it (its AST; comments are not in it), and what its comments must keep."""
    tree = compile(source, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    comments = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    return ast.dump(tree), [kept for comment in comments for kept in KEPT.findall(comment)]


def test_english_copies_drop_the_twins_and_keep_their_cell_ids():
    nb = render(PROJECT_ROOT / "masters" / f"{FIRST}.py")
    assert not [c for c in nb.cells if re.search(r"[\u4e00-\u9fff]{4}", c.source) and c.cell_type == "markdown"]
    _, cells = parse(PROJECT_ROOT / "masters" / f"{FIRST}.py")
    assert [c.cell.id for c in cells] == [c.id for c in nb.cells] == [f"c{i:03d}" for i in range(len(nb.cells))]
    assert all(set(c.twins) == {"zh"} for c in cells if c.cell.cell_type == "markdown")


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.name)
def test_a_master_with_twins_keeps_them_through_jupyterlab(master):
    """Saving from JupyterLab (jupytext) changes nothing: the header's filter keeps a twin's lang and translates,
    Markdown and code twins keep their place, and the header's keys are in the order jupytext writes them."""
    import jupytext

    text = master.read_text()
    assert "cell_metadata_filter: tags,lang,translates,-all" in text
    parsed = jupytext.reads(text, fmt="py:percent")
    assert jupytext.writes(parsed, fmt="py:percent") == text, (
        f"{master.name}: saving it from JupyterLab would rewrite it (sort the header's keys, or fix the blank lines "
        "between cells as jupytext writes them)"
    )


def _master_with(tmp_path, edit):
    text = (PROJECT_ROOT / "masters" / f"{FIRST}.py").read_text()
    (tmp_path / "masters").mkdir(exist_ok=True)
    path = tmp_path / "masters" / f"{FIRST}.py"
    path.write_text(edit(text))
    return path


def _as_jupytext_writes(text, keep=lambda cell: True):
    """A master's text with only the cells `keep` accepts, as jupytext writes it (with the blank lines between cells
    it puts there: a master's must be those, or its cells get `lines_to_next_cell`, which parse() refuses)."""
    import jupytext

    nb = jupytext.reads(text, fmt="py:percent")
    nb.cells = [cell for cell in nb.cells if keep(cell)]
    for cell in nb.cells:
        cell.metadata.pop("lines_to_next_cell", None)
    return jupytext.writes(nb, fmt="py:percent")


def _drop_twins(text):
    """The master without its Markdown and code twins."""
    return _as_jupytext_writes(text, lambda cell: "lang" not in cell.metadata)


def test_an_untranslated_master_gets_no_chinese_copy_and_is_no_error(tmp_path):
    master = _master_with(tmp_path, _drop_twins)
    assert "lang=" not in master.read_text()
    assert translation(master, "zh").status == "untranslated"
    assert sync(tmp_path) == [f"solutions/{FIRST}.ipynb: missing", f"notebooks/{FIRST}.ipynb: missing"]
    assert not (tmp_path / "notebooks" / "zh").exists()
    assert notebook_text(render(master)) == (PROJECT_ROOT / "solutions" / f"{FIRST}.ipynb").read_text()
    with pytest.raises(MasterError, match="no zh twins"):
        translated_learner(master, "zh")


def test_a_missing_twin_in_a_translated_master_is_named(tmp_path):
    def drop_one(text):
        return re.sub(
            r'(# ## 5\. Timings and usage\n(#[^\n]*\n)*)\n# %% \[markdown\] lang="zh"[^\n]*\n(#[^\n]*\n)*', r"\1", text
        )

    master = _master_with(tmp_path, drop_one)
    state = translation(master, "zh")
    assert state.status == "incomplete" and len(state.problems) == 1
    english = next(c for c in parse(master)[1] if c.cell.source.startswith("## 5."))
    assert state.problems[0].startswith(f"{master}, cell {english.cell.id} ('## 5. Timings and usage'): no zh twin")
    assert f'translates=\\"{source_hash(english.cell.source)}\\"' in state.problems[0].replace('"', '\\"')


@pytest.mark.parametrize(
    "edit, error",
    [
        (
            lambda s: s.replace('lang="zh" translates=', 'lang="fr" translates=', 1),
            r"lang='fr' is not a translation language",
        ),
        (lambda s: s.replace('lang="zh" translates="', 'lang="zh" translates="x', 1), r"is not the 12-hex-digit hash"),
        (
            lambda s: s.replace('# %% [markdown] lang="zh"', '# %% lang="zh"', 1),
            r"this zh code twin follows no English code cell",
        ),
        (
            lambda s: s.replace('# %% [markdown] lang="zh"', '# %% [markdown] lang="zh" tags=["exercise"]', 1),
            r"must be an untagged Markdown or code cell",
        ),
        (
            lambda s: s.replace("# %% [markdown]\n# ## 1. The chat model", "# %%\n# ## 1. The chat model", 1),
            r"follows no English Markdown cell",
        ),
    ],
)
def test_a_malformed_twin_is_an_error_naming_the_master_and_cell(tmp_path, edit, error):
    master = _master_with(tmp_path, edit)
    with pytest.raises(MasterError, match=rf"00_setup\.py, cell \d+ .*{error}"):
        render(master)


def test_the_translations_command_reports_untranslated_masters(tmp_path, monkeypatch, capsys):
    root = _copy_project(tmp_path)
    (root / "masters" / "98_untranslated.py").write_text(_drop_twins((root / "masters" / f"{FIRST}.py").read_text()))
    monkeypatch.setattr("scripts.notebooks.ROOT", root)
    assert main(["--translations"]) == 0
    out = capsys.readouterr().out
    assert f"{FIRST}.py [zh]: translated" in out and "98_untranslated.py [zh]: untranslated" in out
    assert main([]) == 0, "an untranslated master is no error"
    assert not (root / "notebooks" / "zh" / "98_untranslated.ipynb").exists()
    assert (root / "notebooks" / "98_untranslated.ipynb").exists()


# --- code twins: a `# …` line for each comment of the English cell ------------------------------------------

TINY = """# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       N: 1
#   jupytext:
#     cell_metadata_filter: tags,lang,translates,-all
#     notebook_metadata_filter: agentic_rag
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Tiny

# %% [markdown] lang="zh" translates="{markdown}"
# # 小例子

# %% tags=["parameters"]
{parameters}

# %% lang="zh" translates="{parameters_hash}"
{parameters_zh}

# %% tags=["exercise"]
{exercise}

# %% lang="zh" translates="{exercise_hash}"
{exercise_zh}
"""
PARAMETERS = "# Parameters\nN = 3  # how many chunks  # noqa: E501\nNAMES = ['a', 'b']"
PARAMETERS_ZH = "# 参数\n# 多少个块  # noqa: E501"
# What the Chinese copy shows: the English code, the twin's comments.
PARAMETERS_IN_ZH = "# 参数\nN = 3  # 多少个块  # noqa: E501\nNAMES = ['a', 'b']"
EXERCISE = (
    "def double(x):\n    # twice x, as an int\n    ### BEGIN SOLUTION\n    return 2 * x  # an int stays one\n"
    "    ### END SOLUTION"
)
EXERCISE_ZH = "# x 的两倍，整数"


def _tiny(
    tmp_path, parameters=PARAMETERS, parameters_zh=PARAMETERS_ZH, exercise=EXERCISE, exercise_zh=EXERCISE_ZH, **options
):
    """A master of three cells, each with a zh twin; `english=` replaces the English parameters after hashing (a
    twin left stale), `without=` names the code twins to leave out ("parameters", "exercise")."""
    path = tmp_path / "masters" / "00_tiny.py"
    path.parent.mkdir(exist_ok=True)
    text = TINY.format(
        markdown=source_hash("# Tiny"),
        parameters=options.get("english") or parameters,
        parameters_hash=source_hash(parameters),
        parameters_zh=parameters_zh,
        exercise=exercise,
        exercise_hash=source_hash(exercise),
        exercise_zh=exercise_zh,
    )
    left_out = {
        source_hash(parameters) if name == "parameters" else source_hash(exercise)
        for name in options.get("without", ())
    }
    path.write_text(_as_jupytext_writes(text, lambda cell: cell.metadata.get("translates") not in left_out))
    return path


def test_a_code_twin_gives_the_chinese_copy_its_comments_and_the_english_copies_none(tmp_path):
    master = _tiny(tmp_path)
    assert translation(master, "zh").status == "translated"
    assert [c.source for c in render(master).cells] == ["# Tiny", PARAMETERS, EXERCISE]
    chinese = translated_learner(master, "zh")
    assert [c.id for c in chinese.cells] == ["c000", "c001", "c002"]
    assert chinese.cells[1].source == PARAMETERS_IN_ZH and chinese.cells[1].metadata.tags == ["parameters"]
    # the exercise is blanked where the English one is: the Chinese learner copy gets no answer (and the comment
    # inside the answer needs no twin line)
    assert chinese.cells[2].source == f"def double(x):\n    # x 的两倍，整数\n    {BLANKS['zh']}"
    english = learner(master)
    assert english.cells[2].source == f"def double(x):\n    # twice x, as an int\n    {BLANK}"


def test_each_twin_line_stands_where_its_english_comment_stands(tmp_path):
    english = (
        "# Parameters\n"
        "N = 3  # how many chunks\n"
        'NAMES = ["a # not a comment",  # a name with a hash\n'
        '         "b"]\n'
        "if N:\n"
        "    # an indented comment\n"
        "    N += 1  # noqa: E501\n"
        "TOTAL = N  # the total  # fmt: skip"
    )
    twin = "# 参数\n# 多少个块\n# 带井号的名字\n    # 缩进的注释\n# 总数  # fmt: skip"
    master = _tiny(tmp_path, parameters=english, parameters_zh=twin)
    assert render(master).cells[1].source == english
    assert translated_learner(master, "zh").cells[1].source == (
        "# 参数\n"
        "N = 3  # 多少个块\n"
        'NAMES = ["a # not a comment",  # 带井号的名字\n'
        '         "b"]\n'
        "if N:\n"
        "    # 缩进的注释\n"
        "    N += 1  # noqa: E501\n"
        "TOTAL = N  # 总数  # fmt: skip"
    )


def test_a_learner_copy_in_a_language_without_a_blank_is_an_error():
    with pytest.raises(ValueError, match=r"no exercise blank for language 'fr': add one to BLANKS in checks/exercises"):
        learner_notebook(render(PROJECT_ROOT / "masters" / f"{FIRST}.py"), "fr")


@pytest.mark.parametrize("twin, lines", [(PARAMETERS_ZH + "\n# 多出来的一行", 3), ("# 参数", 1)], ids=["more", "fewer"])
def test_a_code_twin_with_more_or_fewer_lines_than_comments_is_refused_naming_the_cell(tmp_path, twin, lines):
    counts = rf"twin of .*cell c001 \('# Parameters'\) has {lines} line\(s\), but the English cell has 2 comment\(s\)"
    with pytest.raises(MasterError, match=rf"00_tiny\.py, cell \d+ .*{counts} to translate; .*Add or remove"):
        parse(_tiny(tmp_path, parameters_zh=twin))


@pytest.mark.parametrize(
    "twin, error",
    [
        (PARAMETERS_IN_ZH, r"line 2 of this zh twin of .*cell c001 .*'N = 3  # 多少个块  # noqa: E501', is not a comm"),
        ("# 参数\n\n# 多少个块  # noqa: E501", r"line 2 of this zh twin of .*cell c001 .*'', is not a comment"),
        (
            "# 参数\n# 多少个块",
            (
                r"line 2 of this zh twin of .*cell c001 .*, '# 多少个块', does not keep what the English comment "
                r"'# how many chunks  # noqa: E501' keeps word for word, \['noqa: E501'\]"
            ),
        ),
        ("### BEGIN SOLUTION\n# 多少个块  # noqa: E501", r"line 1 of this zh twin .*does not keep what"),
    ],
    ids=["code", "a blank line", "a pragma dropped", "an exercise marker"],
)
def test_a_code_twin_line_that_is_no_comment_or_drops_a_pragma_is_refused(tmp_path, twin, error):
    with pytest.raises(MasterError, match=rf"00_tiny\.py, cell \d+ .*{error}"):
        parse(_tiny(tmp_path, parameters_zh=twin))


def test_a_stale_code_twin_is_reported_and_its_lines_stay_in_place_until_a_comment_is_added(tmp_path):
    # the English comment changed: stale, named with the new hash; the twin's lines are still used
    edited = PARAMETERS.replace("how many chunks", "how many chunks to keep")
    state = translation(_tiny(tmp_path, english=edited), "zh")
    assert state.status == "incomplete" and len(state.problems) == 1
    assert "cell c001 ('# Parameters'): its zh twin is stale" in state.problems[0]
    assert f"now {source_hash(edited)}" in state.problems[0]
    assert translated_learner(_tiny(tmp_path, english=edited), "zh").cells[1].source == PARAMETERS_IN_ZH
    # the English code changed: the Chinese copy runs the new code, with the twin's comments
    master = _tiny(tmp_path, english=PARAMETERS.replace("N = 3", "N = 30"))
    assert "its zh twin is stale" in translation(master, "zh").problems[0]
    assert translated_learner(master, "zh").cells[1].source == PARAMETERS_IN_ZH.replace("N = 3", "N = 30")
    assert any("00_tiny.py, cell c001" in line and "stale" in line for line in sync(tmp_path, check_only=True))
    # the English cell gained a comment: the twin has a line too few, an error until it has one more
    with pytest.raises(MasterError, match=r"c001 \('# Parameters'\) has 2 line\(s\), but the English cell has 3 comm"):
        parse(_tiny(tmp_path, english=PARAMETERS + "  # two names"))


def test_a_commented_code_cell_without_a_twin_in_a_translated_master_is_named(tmp_path):
    master = _tiny(tmp_path, without=("parameters",))
    assert 'lang="zh"' in master.read_text() and "# 参数" not in master.read_text()
    state = translation(master, "zh")
    assert state.status == "incomplete" and (state.code_twins, state.commented) == (1, 2)
    expected = (
        f"{master}, cell c001 ('# Parameters'): its comments have no zh twin — add "
        f'`# %% lang="zh" translates="{source_hash(PARAMETERS)}"` directly after it: a `# …` line for each of its '
        "comments, translated"
    )
    assert state.problems == [expected]
    assert translated_learner(master, "zh").cells[1].source == PARAMETERS, "until then the English cell is shown"


def test_an_exercise_whose_only_comments_are_in_its_solution_needs_no_twin(tmp_path):
    """The learner copies blank the solution, comments and all: nothing there to translate."""
    exercise = "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x  # twice x\n    ### END SOLUTION"
    master = _tiny(tmp_path, exercise=exercise, exercise_zh="", without=("exercise",))
    state = translation(master, "zh")
    assert (state.status, state.problems, state.code_twins, state.commented) == ("translated", [], 1, 1)
    assert translated_learner(master, "zh").cells[2].source == f"def double(x):\n    {BLANKS['zh']}"
