"""No measured figure is typed into a notebook's prose: findings are rendered from the run.

A Markdown cell outside the front matter (the first cell, whose table states the measured times) may not
carry a percentage, a decimal score or an "n/m" count. Constants the text names — a goal, a parameter's
value — are written as code (`0.90`, `95%`) or as a formula ($1/61$), which this check leaves alone; a
figure a run measured belongs in a code cell that renders it from the run's variables.
"""

import re
from pathlib import Path

import pytest

from lessons.core.settings import PROJECT_ROOT

jupytext = pytest.importorskip("jupytext")

MASTERS = sorted((PROJECT_ROOT / "masters").glob("*.py"))
FIGURE = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?\s?%|\d+\.\d{2,}|\d+/\d+)(?![\w/])")
CODE_OR_MATH = re.compile(r"`[^`]*`|\$[^$]*\$")


def typed_figures(markdown: str) -> list[str]:
    """The figures in `markdown` outside code spans and formulas."""
    return FIGURE.findall(CODE_OR_MATH.sub(" ", markdown))


def test_the_check_finds_typed_figures_and_leaves_constants_alone():
    assert typed_figures("recall rose to 0.92 (83%), 5/6 questions") == ["0.92", "83%", "5/6"]
    assert typed_figures("the goal is `0.90`; at most $1/61$; notebook 02, 2 cores, version 2.2.0") == []


@pytest.mark.parametrize("master", MASTERS, ids=lambda p: p.name)
def test_no_measured_figure_is_typed_into_the_prose(master: Path):
    notebook = jupytext.read(master)
    prose = [c for c in notebook.cells if c.cell_type == "markdown"]
    offenders = [
        (number, figures)
        for number, cell in enumerate(prose[1:], 2)
        if cell.metadata.get("lang") is None and (figures := typed_figures(cell.source))
    ]
    assert not offenders, (
        f"{master.name}: Markdown cells (counted from the top, the front matter is 1) carry typed figures {offenders}. "
        "Render measured figures from the run's variables in a code cell (lessons.core.prose), or write a constant as code."
    )
