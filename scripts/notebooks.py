"""Generate the notebooks from their masters: `masters/NN_topic.py` → `solutions/` and `notebooks/`.

Each notebook has one master, `masters/NN_topic.py`, in jupytext's percent format: `# %% [markdown]`
cells (the Markdown commented with `# `), `# %%` code cells, tags as `# %% tags=["exercise"]`, and the
notebook metadata (kernelspec, `agentic_rag.quick_parameters`) in the YAML header. Open it in
JupyterLab as a notebook (right click → Open With → Notebook, jupytext) or edit it as text. From it:

- `solutions/NN_topic.ipynb`: the solved notebook, no outputs, stable cell ids c000, c001, …;
- `notebooks/NN_topic.ipynb`: the learner copy (`checks.exercises.learner_notebook`: answers blanked).

    python -m scripts.notebooks            # regenerate every notebook from masters/  (make notebooks)
    python -m scripts.notebooks --check    # exit 1 naming every stale file (the tests run this)

Tooling only (needs jupytext, in the dev extra): nothing in lessons/ imports this module.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat

from checks.exercises import BEGIN, END, learner_notebook

ROOT = Path(__file__).resolve().parents[1]
MASTERS = "masters"
FIX = "run `make notebooks` (python -m scripts.notebooks)"

# Notebook metadata a master's header may set; render() adds the fixed `language_info`.
NOTEBOOK_METADATA = ("kernelspec", "agentic_rag")
LANGUAGE_INFO = {"name": "python"}
# Cell metadata a master may set. A new key (issue 22: a language and the hash of the translated text)
# is added here and then filtered by a wrapper of render(); anything else is an error, never dropped.
CELL_METADATA = ("tags",)
CELL_TYPES = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell,
              "raw": nbformat.v4.new_raw_cell}

# What a master generates: (folder under the project root, master path → notebook).
Output = tuple[str, Callable[[Path], nbformat.NotebookNode]]


class MasterError(ValueError):
    """A master that cannot be turned into a notebook; the message names the file and the fix."""


def _jupytext():
    try:
        import jupytext
    except ImportError as error:  # pragma: no cover - the dev extra is installed wherever tests run
        raise SystemExit("scripts.notebooks needs jupytext, which the dev extra installs: "
                         "run `scripts/setup.sh dev`, then `make notebooks` again") from error
    return jupytext


def render(master_path: Path) -> nbformat.NotebookNode:
    """The solved notebook a master describes: its cells (type, source, tags) with ids c000, c001, …,
    and its header's metadata; no outputs. Raises MasterError naming the file on anything unexpected."""
    master_path = Path(master_path)
    try:
        parsed = _jupytext().reads(master_path.read_text(encoding="utf-8"), fmt="py:percent")
    except Exception as error:
        raise MasterError(f"{master_path}: jupytext cannot read it as a percent-format script ({error}); "
                          "fix the `# %%` cell markers or the YAML header") from error

    header = {k: v for k, v in parsed.metadata.items() if k != "jupytext"}
    unknown = sorted(set(header) - set(NOTEBOOK_METADATA))
    if unknown:
        raise MasterError(f"{master_path}: unexpected notebook metadata {unknown} in the header; "
                          f"a master's header holds only {list(NOTEBOOK_METADATA)} (remove the others, or "
                          "add the key to scripts/notebooks.py NOTEBOOK_METADATA if the notebooks need it)")
    if "kernelspec" not in header:
        raise MasterError(f"{master_path}: the YAML header has no `kernelspec`; copy it from another master")
    if "quick_parameters" not in header.get("agentic_rag", {}):
        raise MasterError(f"{master_path}: the YAML header has no `agentic_rag: quick_parameters:` "
                          "(the small sizes the test suite runs; see CONTRIBUTING.md)")

    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": header["kernelspec"], "language_info": dict(LANGUAGE_INFO),
                   "agentic_rag": header["agentic_rag"]}
    for number, cell in enumerate(parsed.cells):
        where = f"{master_path}, cell {number} ({cell.source.splitlines()[0][:60] if cell.source else 'empty'!r})"
        if cell.cell_type not in CELL_TYPES:
            raise MasterError(f"{where}: cell type {cell.cell_type!r} is not one of {sorted(CELL_TYPES)}")
        extra = sorted(set(cell.metadata) - set(CELL_METADATA))
        if extra:
            raise MasterError(f"{where}: unexpected cell metadata {extra} on its `# %%` line; a master's cells "
                              f"carry only {list(CELL_METADATA)} (remove the others)")
        new = CELL_TYPES[cell.cell_type](cell.source)
        if cell.metadata.get("tags"):
            new.metadata["tags"] = list(cell.metadata["tags"])
        new["id"] = f"c{number:03d}"
        nb.cells.append(new)
    nbformat.validate(nb)
    return nb


def learner(master_path: Path) -> nbformat.NotebookNode:
    """The learner copy a master describes: render() with the exercise answers blanked."""
    try:
        return learner_notebook(render(master_path))
    except MasterError:
        raise
    except ValueError as error:
        raise MasterError(f"{master_path}: {error}\n(an exercise cell needs one {BEGIN!r} … {END!r} block)") from error


OUTPUTS: list[Output] = [("solutions", render), ("notebooks", learner)]


def notebook_text(nb: nbformat.NotebookNode) -> str:
    """A notebook as it is written to disk (what nbformat.write writes)."""
    return nbformat.writes(nb) + "\n"


def masters(root: Path = ROOT) -> list[Path]:
    return sorted((root / MASTERS).glob("[0-9][0-9]_*.py"))


def sync(root: Path = ROOT, check_only: bool = False, outputs: list[Output] = OUTPUTS) -> list[str]:
    """Write (or, with `check_only`, compare) every generated notebook; returns the stale ones as
    'path: why' lines, paths relative to `root`. A generated notebook without a master is stale too
    (it is reported, never deleted)."""
    found = masters(root)
    if not found:
        raise MasterError(f"no masters in {root / MASTERS} (expected masters/NN_topic.py files)")
    stale = []
    for folder, make in outputs:
        for master in found:
            target = root / folder / f"{master.stem}.ipynb"
            expected = notebook_text(make(master))
            if not target.exists():
                why = "missing"
            elif target.read_text(encoding="utf-8") != expected:
                why = f"differs from {MASTERS}/{master.name}"
            else:
                continue
            stale.append(f"{target.relative_to(root)}: {why}")
            if not check_only:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(expected, encoding="utf-8")
        names = {m.stem for m in found}
        for orphan in sorted((root / folder).glob("*.ipynb")):
            if orphan.stem not in names:
                stale.append(f"{orphan.relative_to(root)}: no master {MASTERS}/{orphan.stem}.py "
                             "(delete the notebook, or add its master)")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming every stale file")
    args = parser.parse_args(argv)
    try:
        stale = sync(ROOT, check_only=args.check)
    except MasterError as error:
        print(error, file=sys.stderr)
        return 1
    orphans = [s for s in stale if "no master" in s]
    if args.check and stale:
        print(f"{len(stale)} generated notebook(s) out of date — {FIX}:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    written = [s for s in stale if s not in orphans]
    print(("regenerated:\n  " + "\n  ".join(written)) if written else "every notebook is up to date")
    if orphans:
        print("not generated by any master:\n  " + "\n  ".join(orphans), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
