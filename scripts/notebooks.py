"""Generate the notebooks from their masters: `masters/NN_topic.py` → `solutions/` and `notebooks/`.

Each notebook has one master, `masters/NN_topic.py`, in jupytext's percent format: `# %% [markdown]`
cells (the Markdown commented with `# `), `# %%` code cells, tags as `# %% tags=["exercise"]`, and the
notebook metadata (kernelspec, `agentic_rag.quick_parameters`) in the YAML header. Open it in
JupyterLab as a notebook (right click → Open With → Notebook, jupytext) or edit it as text. From it:

- `solutions/NN_topic.ipynb`: the solved notebook, no outputs, stable cell ids c000, c001, …;
- `notebooks/NN_topic.ipynb`: the learner copy (`checks.exercises.learner_notebook`: answers blanked);
- `notebooks/zh/NN_topic.ipynb`: the Chinese learner copy — the same code, the Chinese Markdown — once
  the master has Chinese twins (below). No Chinese solutions copy: the solved code is the English one.

Translations sit beside the English in the same master: a Chinese twin is a Markdown cell directly
after the English cell it translates, marked `# %% [markdown] lang="zh" translates="<hash>"`, where the
hash is `source_hash()` of the English cell's text (SHA-256, first 12 hex digits). The English copies
drop the twins. A master without twins is "untranslated" (reported, no zh copy yet); a master with
twins must have one for every English Markdown cell, each translating the English as it is now — a
twin whose English changed since (the hash differs) is stale and named, with the new hash, by
`--check`. `--translations` prints every master's state. Strings the code cells print come from
`lessons.core.i18n.t()`, so the code is the same in both languages.

    python -m scripts.notebooks                  # regenerate every notebook from masters/  (make notebooks)
    python -m scripts.notebooks --check          # exit 1 naming every stale file and twin (the tests run this)
    python -m scripts.notebooks --translations   # each master: translated, untranslated, or what is missing

Tooling only (needs jupytext, in the dev extra): nothing in lessons/ imports this module.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from checks.exercises import BEGIN, END, learner_notebook
from lessons.core.i18n import ENGLISH, LANGUAGES, notebook_folder

ROOT = Path(__file__).resolve().parents[1]
MASTERS = "masters"
FIX = "run `make notebooks` (python -m scripts.notebooks)"

# Notebook metadata a master's header may set; render() adds the fixed `language_info`.
NOTEBOOK_METADATA = ("kernelspec", "agentic_rag")
LANGUAGE_INFO = {"name": "python"}
# Cell metadata a master may set: tags, and on a translation twin its language and the hash of the English
# text it translates (a master with twins lists them in its header's `cell_metadata_filter` too, so that
# JupyterLab keeps them). Anything else is an error, never dropped.
CELL_METADATA = ("tags", "lang", "translates")
TWIN_LANGUAGES = tuple(language for language in LANGUAGES if language != ENGLISH)
HASH_LENGTH = 12
CELL_TYPES = {
    "markdown": nbformat.v4.new_markdown_cell,
    "code": nbformat.v4.new_code_cell,
    "raw": nbformat.v4.new_raw_cell,
}

# What a master generates: (folder under the project root, master path → notebook).
Output = tuple[str, Callable[[Path], nbformat.NotebookNode]]


class MasterError(ValueError):
    """A master that cannot be turned into a notebook; the message names the file and the fix."""


def _jupytext():
    try:
        import jupytext
    except ImportError as error:  # pragma: no cover - the dev extra is installed wherever tests run
        raise SystemExit(
            "scripts.notebooks needs jupytext, which the dev extra installs: "
            "run `scripts/setup.sh dev`, then `make notebooks` again"
        ) from error
    return jupytext


def source_hash(text: str) -> str:
    """What a twin's `translates=` records: the first 12 hex digits of the English text's SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


@dataclass
class MasterCell:
    """One English cell of a master, with its translation twins (language → (text, `translates` hash))."""

    cell: nbformat.NotebookNode
    where: str
    twins: dict[str, tuple[str, str]] = field(default_factory=dict)


def _first_line(source: str) -> str:
    return repr(source.splitlines()[0][:60] if source else "empty")


def parse(master_path: Path) -> tuple[dict, list[MasterCell]]:
    """A master's notebook metadata and its English cells (ids c000, c001, … over the English cells only),
    each with its twins. Raises MasterError naming the file and the cell on anything unexpected."""
    master_path = Path(master_path)
    try:
        parsed = _jupytext().reads(master_path.read_text(encoding="utf-8"), fmt="py:percent")
    except Exception as error:
        raise MasterError(
            f"{master_path}: jupytext cannot read it as a percent-format script ({error}); "
            "fix the `# %%` cell markers or the YAML header"
        ) from error

    header = {k: v for k, v in parsed.metadata.items() if k != "jupytext"}
    unknown = sorted(set(header) - set(NOTEBOOK_METADATA))
    if unknown:
        raise MasterError(
            f"{master_path}: unexpected notebook metadata {unknown} in the header; "
            f"a master's header holds only {list(NOTEBOOK_METADATA)} (remove the others, or "
            "add the key to scripts/notebooks.py NOTEBOOK_METADATA if the notebooks need it)"
        )
    if "kernelspec" not in header:
        raise MasterError(f"{master_path}: the YAML header has no `kernelspec`; copy it from another master")
    if "quick_parameters" not in header.get("agentic_rag", {}):
        raise MasterError(
            f"{master_path}: the YAML header has no `agentic_rag: quick_parameters:` "
            "(the small sizes the test suite runs; see CONTRIBUTING.md)"
        )

    metadata = {
        "kernelspec": header["kernelspec"],
        "language_info": dict(LANGUAGE_INFO),
        "agentic_rag": header["agentic_rag"],
    }
    cells: list[MasterCell] = []
    for number, cell in enumerate(parsed.cells):
        where = f"{master_path}, cell {number} ({_first_line(cell.source)})"
        if cell.cell_type not in CELL_TYPES:
            raise MasterError(f"{where}: cell type {cell.cell_type!r} is not one of {sorted(CELL_TYPES)}")
        extra = sorted(set(cell.metadata) - set(CELL_METADATA))
        if extra:
            raise MasterError(
                f"{where}: unexpected cell metadata {extra} on its `# %%` line; a master's cells "
                f"carry only {list(CELL_METADATA)} (remove the others)"
            )
        if "lang" in cell.metadata or "translates" in cell.metadata:
            _add_twin(cells, cell, where)
            continue
        new = CELL_TYPES[cell.cell_type](cell.source)
        if cell.metadata.get("tags"):
            new.metadata["tags"] = list(cell.metadata["tags"])
        new["id"] = f"c{len(cells):03d}"
        cells.append(MasterCell(new, f"{master_path}, cell {new['id']} ({_first_line(cell.source)})"))
    return metadata, cells


def _add_twin(cells: list[MasterCell], cell: nbformat.NotebookNode, where: str) -> None:
    language, translates = cell.metadata.get("lang"), cell.metadata.get("translates")
    how = (
        f'a twin is a Markdown cell `# %% [markdown] lang="{TWIN_LANGUAGES[0]}" translates="<hash>"` '
        "directly after the English Markdown cell it translates"
    )
    if language not in TWIN_LANGUAGES:
        raise MasterError(f"{where}: lang={language!r} is not a translation language {list(TWIN_LANGUAGES)}; {how}")
    if not isinstance(translates, str) or not re.fullmatch(f"[0-9a-f]{{{HASH_LENGTH}}}", translates):
        raise MasterError(
            f"{where}: translates={translates!r} is not the {HASH_LENGTH}-hex-digit hash of the "
            f"English text; {how} (`python -m scripts.notebooks --translations` prints the hashes)"
        )
    if cell.cell_type != "markdown" or cell.metadata.get("tags"):
        raise MasterError(
            f"{where}: a {language} twin must be an untagged Markdown cell (the code is the same "
            "in every language; printed strings come from lessons.core.i18n.t()); " + how
        )
    if not cells or cells[-1].cell.cell_type != "markdown":
        raise MasterError(f"{where}: this {language} twin follows no English Markdown cell; {how}")
    if language in cells[-1].twins:
        raise MasterError(f"{where}: a second {language} twin of {cells[-1].where}; {how}")
    cells[-1].twins[language] = (cell.source, translates)


def _notebook(metadata: dict, cells: list[nbformat.NotebookNode], master_path: Path) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = nbformat.from_dict(metadata)
    nb.cells = cells
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as error:  # pragma: no cover - parse() builds valid cells
        raise MasterError(f"{master_path}: the generated notebook is not valid ({error})") from error
    return nb


def render(master_path: Path) -> nbformat.NotebookNode:
    """The solved notebook a master describes: its English cells (type, source, tags) with ids c000, c001, …,
    and its header's metadata; no outputs, no translation twins. Raises MasterError naming the file on
    anything unexpected."""
    metadata, cells = parse(master_path)
    return _notebook(metadata, [c.cell for c in cells], master_path)


@dataclass
class Translation:
    """How far a master is translated into one language: "translated", "untranslated" (no twins at all),
    or "incomplete" (twins, but `problems` names each English Markdown cell without a current twin)."""

    master: Path
    language: str
    status: str
    twins: int
    problems: list[str]


def translation(master_path: Path, language: str) -> Translation:
    """Whether every English Markdown cell of a master has a `language` twin translating its current text."""
    _, cells = parse(master_path)
    markdown = [c for c in cells if c.cell.cell_type == "markdown"]
    twinned = [c for c in markdown if language in c.twins]
    if not twinned:
        return Translation(Path(master_path), language, "untranslated", 0, [])
    problems = []
    for c in markdown:
        now = source_hash(c.cell.source)
        if language not in c.twins:
            problems.append(
                f'{c.where}: no {language} twin — add `# %% [markdown] lang="{language}" '
                f'translates="{now}"` with its translation directly after it'
            )
        elif c.twins[language][1] != now:
            problems.append(
                f"{c.where}: its {language} twin is stale — it translates {c.twins[language][1]}, "
                f"but the English text changed (now {now}); update the translation, then set "
                f'translates="{now}"'
            )
    return Translation(Path(master_path), language, "incomplete" if problems else "translated", len(twinned), problems)


def translated_learner(master_path: Path, language: str) -> nbformat.NotebookNode:
    """The learner copy in `language`: the English learner copy's code, each Markdown cell its twin's text,
    and `agentic_rag.language` in the metadata. Raises MasterError when the master has no twins."""
    _, cells = parse(master_path)
    if not any(language in c.twins for c in cells):
        raise MasterError(
            f"{master_path}: no {language} twins, so no {language} copy; see CONTRIBUTING.md (Translations)"
        )
    nb = learner(master_path)
    for cell, source in zip(nb.cells, cells, strict=True):
        if language in source.twins:
            cell.source = source.twins[language][0]
    nb.metadata["agentic_rag"] = {**nb.metadata["agentic_rag"], "language": language}
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


def _write_or_compare(root: Path, target: Path, expected: str, master: Path, check_only: bool) -> str | None:
    if not target.exists():
        why = "missing"
    elif target.read_text(encoding="utf-8") != expected:
        why = f"differs from {MASTERS}/{master.name}"
    else:
        return None
    if not check_only:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(expected, encoding="utf-8")
    return f"{target.relative_to(root)}: {why}"


def _orphans(root: Path, folder: str, names: set[str], why: str) -> list[str]:
    return [
        f"{orphan.relative_to(root)}: {why.format(stem=orphan.stem)}"
        for orphan in sorted((root / folder).glob("*.ipynb"))
        if orphan.stem not in names
    ]


def translations(root: Path = ROOT) -> list[Translation]:
    """Every master's state in every translation language."""
    return [translation(master, language) for language in TWIN_LANGUAGES for master in masters(root)]


def sync(root: Path = ROOT, check_only: bool = False, outputs: list[Output] = OUTPUTS) -> list[str]:
    """Write (or, with `check_only`, compare) every generated notebook; returns what is out of date as
    'path: why' lines, paths relative to `root`: stale or missing notebooks, and every stale or missing
    twin of a translated master (named by master and cell; not fixed by writing). A generated notebook
    without a master (or, in a language folder, without twins) is reported, never deleted."""
    found = masters(root)
    if not found:
        raise MasterError(f"no masters in {root / MASTERS} (expected masters/NN_topic.py files)")
    stale = []
    names = {m.stem for m in found}
    for folder, make in outputs:
        for master in found:
            line = _write_or_compare(
                root, root / folder / f"{master.stem}.ipynb", notebook_text(make(master)), master, check_only
            )
            stale += [line] if line else []
        stale += _orphans(
            root, folder, names, f"no master {MASTERS}/{{stem}}.py (delete the notebook, or add its master)"
        )
    for language in TWIN_LANGUAGES:
        folder = notebook_folder(language)
        state = [translation(master, language) for master in found]
        done = [s.master for s in state if s.status != "untranslated"]
        for master in done:
            line = _write_or_compare(
                root,
                root / folder / f"{master.stem}.ipynb",
                notebook_text(translated_learner(master, language)),
                master,
                check_only,
            )
            stale += [line] if line else []
        for s in state:
            stale += [problem.replace(f"{root}/", "") for problem in s.problems]
        stale += _orphans(
            root,
            folder,
            {m.stem for m in done},
            f"no master {MASTERS}/{{stem}}.py with {language} twins (delete the notebook, or translate its master)",
        )
    return stale


def _is_written(line: str) -> bool:
    return line.endswith(": missing") or f": differs from {MASTERS}/" in line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming every stale file")
    parser.add_argument(
        "--translations",
        action="store_true",
        help="change nothing; print how far each master is translated (and the hashes twins need)",
    )
    args = parser.parse_args(argv)
    try:
        if args.translations:
            for s in translations(ROOT):
                print(f"{s.master.name} [{s.language}]: {s.status}" + (f" ({s.twins} twins)" if s.twins else ""))
                for problem in s.problems:
                    print("  " + problem.replace(f"{ROOT}/", ""))
            return 0
        stale = sync(ROOT, check_only=args.check)
    except MasterError as error:
        print(error, file=sys.stderr)
        return 1
    problems = [s for s in stale if not _is_written(s)]
    if args.check and stale:
        print(
            f"{len(stale)} generated notebook(s) or translation twin(s) out of date — {FIX}, and update the "
            "named twins:\n  " + "\n  ".join(stale),
            file=sys.stderr,
        )
        return 1
    written = [s for s in stale if _is_written(s)]
    print(("regenerated:\n  " + "\n  ".join(written)) if written else "every notebook is up to date")
    if problems:
        print("to fix by hand:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
