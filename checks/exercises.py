"""Make the learner notebooks from the solution notebooks (the masters).

`solutions/NN_*.ipynb` is the master of each notebook. In its cells tagged `exercise`, the answer
sits between `### BEGIN SOLUTION` and `### END SOLUTION` lines; the learner copy in `notebooks/`
has `pass  # YOUR CODE HERE` there instead, at the same indentation. Outputs are stripped.

    python -m checks.exercises            # regenerate notebooks/ from solutions/
    python -m checks.exercises --check    # exit 1 if notebooks/ is out of date (the tests run this)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from lessons.settings import PROJECT_ROOT

EXERCISE_TAG = "exercise"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BLANK = "pass  # YOUR CODE HERE"


def blank_source(source: str) -> str:
    """Replace every solution block in `source` with `pass  # YOUR CODE HERE`."""
    out, inside = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN!r} in:\n{source}")
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + BLANK)
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


def learner_notebook(master: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner copy of a master notebook: exercise answers blanked, no outputs."""
    nb = nbformat.from_dict(master)
    for cell in nb.cells:
        if cell.cell_type == "code" and EXERCISE_TAG in cell.metadata.get("tags", []):
            if BEGIN not in cell.source:
                raise ValueError(f"exercise cell without a {BEGIN!r} block:\n{cell.source}")
            cell.source = blank_source(cell.source)
    return strip_outputs(nb)


def _render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def sync(solutions: Path, notebooks: Path, check_only: bool) -> list[str]:
    """Write (or, with `check_only`, compare) every learner notebook; returns the names that differ."""
    stale = []
    for master_path in sorted(solutions.glob("*.ipynb")):
        expected = _render(learner_notebook(nbformat.read(master_path, as_version=4)))
        target = notebooks / master_path.name
        if not target.exists() or target.read_text() != expected:
            stale.append(master_path.name)
            if not check_only:
                target.write_text(expected)
    return stale


def count_exercises(nb: nbformat.NotebookNode) -> int:
    return sum(1 for c in nb.cells if c.cell_type == "code" and EXERCISE_TAG in c.metadata.get("tags", []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report notebooks that are out of date")
    args = parser.parse_args(argv)
    stale = sync(PROJECT_ROOT / "solutions", PROJECT_ROOT / "notebooks", args.check)
    if args.check and stale:
        print("out of date (run `python -m checks.exercises`): " + ", ".join(stale), file=sys.stderr)
        return 1
    print(("regenerated: " + ", ".join(stale)) if stale else "learner notebooks are up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
