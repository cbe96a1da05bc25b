"""Learner copies of the notebooks: exercise answers blanked, outputs stripped.

Each notebook's master is `masters/NN_topic.py` (jupytext percent format). In its cells tagged
`exercise`, the answer sits between `### BEGIN SOLUTION` and `### END SOLUTION` lines; the learner copy
in `notebooks/` has `pass  # YOUR CODE HERE` there instead, at the same indentation (in `notebooks/zh/`,
`pass  # 在这里写你的代码`).
`python -m scripts.notebooks` (`make notebooks`) writes `solutions/` and, through `learner_notebook`
below, `notebooks/` — and `notebooks/zh/` for a master with Chinese twins (the same blanked code, its
comments in Chinese where a code cell has a twin, the Chinese Markdown); `--check` names every stale file.
"""

from __future__ import annotations

import nbformat

EXERCISE_TAG = "exercise"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# What a learner copy has where the answer was, by the copy's language (the comment is the reader's).
BLANKS = {"en": "pass  # YOUR CODE HERE", "zh": "pass  # 在这里写你的代码"}
BLANK = BLANKS["en"]


def blank_source(source: str, blank: str = BLANK) -> str:
    """Replace every solution block in `source` with `blank` (`pass  # YOUR CODE HERE`)."""
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN!r} in:\n{source}")
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + blank)
        elif stripped == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r} in:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r} in:\n{source}")
    return "\n".join(out)


def strip_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def learner_notebook(master: nbformat.NotebookNode, language: str = "en") -> nbformat.NotebookNode:
    """The learner copy of a master notebook: exercise answers blanked (with `BLANKS[language]`), no outputs."""
    if language not in BLANKS:
        raise ValueError(f"no exercise blank for language {language!r}: add one to BLANKS in checks/exercises.py")
    nb = nbformat.from_dict(master)
    for cell in nb.cells:
        if cell.cell_type == "code" and EXERCISE_TAG in cell.metadata.get("tags", []):
            if BEGIN not in cell.source:
                raise ValueError(f"exercise cell without a {BEGIN!r} block:\n{cell.source}")
            cell.source = blank_source(cell.source, BLANKS[language])
    return strip_outputs(nb)


def count_exercises(nb: nbformat.NotebookNode) -> int:
    return sum(1 for c in nb.cells if c.cell_type == "code" and EXERCISE_TAG in c.metadata.get("tags", []))


if __name__ == "__main__":
    raise SystemExit(
        "the learner notebooks are generated with the solutions now: run `make notebooks` (python -m scripts.notebooks)"
    )
