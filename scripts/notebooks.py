"""Generate the notebooks from their masters: `masters/NN_topic.py` → `solutions/` and `notebooks/`.

Each notebook has one master, `masters/NN_topic.py`, in jupytext's percent format: `# %% [markdown]`
cells (the Markdown commented with `# `), `# %%` code cells, tags as `# %% tags=["exercise"]`, and the
notebook metadata (kernelspec, `agentic_rag.quick_parameters`) in the YAML header. Open it in
JupyterLab as a notebook (right click → Open With → Notebook, jupytext) or edit it as text. From it:

- `solutions/NN_topic.ipynb`: the solved notebook, no outputs, stable cell ids c000, c001, …;
- `notebooks/NN_topic.ipynb`: the learner copy (`checks.exercises.learner_notebook`: answers blanked);
- `notebooks/zh/NN_topic.ipynb`: the Chinese learner copy — the same code (its comments in Chinese where
  a cell has a twin), the Chinese Markdown — once the master has Chinese twins (below). No Chinese
  solutions copy: the solved code is the English one.

Translations sit beside the English in the same master: a Chinese twin is a cell directly after the
English cell it translates, marked `# %% [markdown] lang="zh" translates="<hash>"` after a Markdown cell and
`# %% lang="zh" translates="<hash>"` after a code cell, where the hash is `source_hash()` of the English
cell's text (SHA-256, first 12 hex digits). A twin carries no tags: the Chinese copy keeps the English
cell's id and tags. The English copies drop the twins. A master without twins is "untranslated" (reported,
no zh copy yet); a master with twins must have one for every English Markdown cell and every code cell
with comments a learner reads, each translating the English as it is now — a twin whose English changed since
(the hash differs) is stale and named, with the new hash, by `--check`. `--translations` prints every master's
state.

A code twin holds only the translated comments: one `# …` line for each comment of the English cell, in order —
every comment but the exercise markers `### BEGIN SOLUTION` / `### END SOLUTION`, the comments that hold nothing
but pragmas (`# noqa: E501`, `# fmt: skip`), and, in an exercise cell, those inside its solution (the learner
copies blank it). The Chinese copy is the English cell with its i-th such comment replaced by the twin's i-th line
where it stands (after code, on a line of its own, indented), so its code is the English code. A comment that
needs no translation is repeated as it is; a pragma inside a translated comment stays word for word
(`# 多少个块  # noqa: E501`). A twin line that is not a comment or changes a pragma, and a twin with more or fewer
lines than the English cell has comments (the English gained or lost one), is a MasterError naming the master,
the cell, both counts and the fix. A cell without such comments needs no twin. An exercise cell's copy is blanked
like the English one, so the Chinese learner copy gets its blank, `pass  # 在这里写你的代码`, at the same place.
A stale code twin is still used (its lines in the English comments' places) until it is updated; `--check`
names it. Strings the code cells print come from `lessons.core.i18n.t()`, so the code is the same in both
languages.

    python -m scripts.notebooks                  # regenerate every notebook from masters/  (make notebooks)
    python -m scripts.notebooks --check          # exit 1 naming every stale file and twin (the tests run this)
    python -m scripts.notebooks --translations   # each master: translated, untranslated, or what is missing

Tooling only (needs jupytext, in the dev extra): nothing in lessons/ imports this module.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import sys
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from checks.exercises import BEGIN, END, EXERCISE_TAG, learner_notebook
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
# Tool pragmas inside a comment: a translation keeps them word for word (`_kept()`).
PRAGMA = re.compile(
    r"\b(?:noqa\b(?::\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?"
    r"|fmt:\s*(?:skip|off|on)\b"
    r"|type:\s*ignore\b(?:\[[^\]]*\])?"
    r"|pragma:[^#]*)"
)
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
    """One English cell of a master, with its translation twins: language → (the cell's text in that language, the
    twin's `translates` hash); for a code cell, that text is the English code with the twin's comments in place."""

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


def _kept(comment: str) -> list[str]:
    """What a translation must keep word for word in a comment: an exercise marker (whole) and its pragmas."""
    marker = [comment.strip()] if comment.strip() in (BEGIN, END) else []
    return marker + [pragma.strip() for pragma in PRAGMA.findall(comment)]


def translatable_comments(source: str, exercise: bool = False) -> list[tokenize.TokenInfo]:
    """The comments of a code cell a translation changes, in order, as `tokenize` reads them: every comment but the
    exercise markers, those that hold nothing but pragmas (`# noqa: E501`), and, in an `exercise` cell, those
    inside its solution (the learner copies blank them). Raises SyntaxError on source tokenize cannot read."""
    found, inside = [], False
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type != tokenize.COMMENT:
                continue
            if token.string.strip() in (BEGIN, END):
                inside = exercise and token.string.strip() == BEGIN
            elif not inside and PRAGMA.sub("", token.string).strip("# "):
                found.append(token)
    except tokenize.TokenError as error:
        raise SyntaxError(f"{error.args[0]} (line {error.args[1][0]})") from error
    return found


def _with_comments(source: str, comments: list[tokenize.TokenInfo], texts: list[str]) -> str:
    """`source` with each of its `comments` (tokens of it) replaced by the text at the same place in `texts`; the
    rest of each line stays as it is."""
    lines = source.split("\n")
    for comment, text in zip(comments, texts, strict=True):
        (row, start), (_, end) = comment.start, comment.end
        lines[row - 1] = lines[row - 1][:start] + text + lines[row - 1][end:]
    return "\n".join(lines)


def _twin_how(language: str) -> str:
    return (
        f'a twin is a cell `# %% [markdown] lang="{language}" translates="<hash>"` directly after the English '
        f'Markdown cell it translates, or `# %% lang="{language}" translates="<hash>"` directly after an English '
        "code cell (a `# …` line for each of its comments, in order, translated)"
    )


def _add_twin(cells: list[MasterCell], cell: nbformat.NotebookNode, where: str) -> None:
    language, translates = cell.metadata.get("lang"), cell.metadata.get("translates")
    how = _twin_how(TWIN_LANGUAGES[0] if language not in TWIN_LANGUAGES else language)
    if language not in TWIN_LANGUAGES:
        raise MasterError(f"{where}: lang={language!r} is not a translation language {list(TWIN_LANGUAGES)}; {how}")
    if not isinstance(translates, str) or not re.fullmatch(f"[0-9a-f]{{{HASH_LENGTH}}}", translates):
        raise MasterError(
            f"{where}: translates={translates!r} is not the {HASH_LENGTH}-hex-digit hash of the "
            f"English text; {how} (`python -m scripts.notebooks --translations` prints the hashes)"
        )
    if cell.cell_type not in ("markdown", "code") or cell.metadata.get("tags"):
        raise MasterError(
            f"{where}: a {language} twin must be an untagged Markdown or code cell (the {language} copy keeps "
            "the English cell's tags); " + how
        )
    kind = "Markdown" if cell.cell_type == "markdown" else "code"
    if not cells or cells[-1].cell.cell_type != cell.cell_type:
        raise MasterError(f"{where}: this {language} {kind} twin follows no English {kind} cell; {how}")
    english = cells[-1]
    if language in english.twins:
        raise MasterError(f"{where}: a second {language} twin of {english.where}; {how}")
    text = cell.source if cell.cell_type == "markdown" else _translated_code(english, cell.source, language, where)
    english.twins[language] = (text, translates)


def _translated_code(english: MasterCell, twin: str, language: str, where: str) -> str:
    """The English code cell with the twin's lines as its translatable comments (see the module's docstring)."""
    try:
        comments = translatable_comments(english.cell.source, EXERCISE_TAG in english.cell.metadata.get("tags", []))
    except SyntaxError as error:
        raise MasterError(f"{english.where}: tokenize cannot read this code cell ({error})") from error
    lines = twin.split("\n") if twin else []
    rule = (
        f"a {language} code twin holds a `# …` line for each comment of the English cell, in order (none for the "
        "exercise markers, for comments that hold only pragmas, or inside an exercise's solution; a comment that "
        "needs no translation is repeated as it is)"
    )
    for number, line in enumerate(lines, 1):
        if not line.lstrip().startswith("#"):
            raise MasterError(
                f"{where}: line {number} of this {language} twin of {english.where}, {line!r}, is not a comment; {rule}"
            )
    if len(lines) != len(comments):
        raise MasterError(
            f"{where}: this {language} twin of {english.where} has {len(lines)} line(s), but the English cell has "
            f"{len(comments)} comment(s) to translate; {rule}. Add or remove the twin's lines to match the English "
            'comments, then set translates="…" to the hash `python -m scripts.notebooks --translations` prints'
        )
    for number, (line, comment) in enumerate(zip(lines, comments, strict=True), 1):
        if _kept(line) != _kept(comment.string):
            raise MasterError(
                f"{where}: line {number} of this {language} twin of {english.where}, {line!r}, does not keep what "
                f"the English comment {comment.string.strip()!r} keeps word for word, {_kept(comment.string)}: "
                "pragmas and exercise markers are never translated"
            )
    return _with_comments(english.cell.source, comments, [line.lstrip() for line in lines])


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
    or "incomplete" (twins, but `problems` names each English Markdown cell and each commented code cell
    without a current twin). `code_twins` of the `commented` code cells (those with comments a learner
    reads) have a twin."""

    master: Path
    language: str
    status: str
    twins: int
    problems: list[str]
    code_twins: int = 0
    commented: int = 0


def _commented(cell: nbformat.NotebookNode) -> bool:
    """Whether a code cell shows a learner a comment a translation could change (`translatable_comments()`)."""
    try:
        return bool(translatable_comments(cell.source, EXERCISE_TAG in cell.metadata.get("tags", [])))
    except SyntaxError:
        return False  # learner() and the tests name code that does not parse


def translation(master_path: Path, language: str) -> Translation:
    """Whether every English Markdown cell and every code cell with comments of a master has a `language` twin
    translating its current text."""
    _, cells = parse(master_path)
    twinned = [c for c in cells if language in c.twins]
    code = [c for c in cells if c.cell.cell_type == "code" and (language in c.twins or _commented(c.cell))]
    counts = {"code_twins": sum(language in c.twins for c in code), "commented": len(code)}
    if not twinned:
        return Translation(Path(master_path), language, "untranslated", 0, [], **counts)
    problems = []
    for c in cells:
        now = source_hash(c.cell.source)
        if language not in c.twins:
            if c.cell.cell_type == "markdown":
                problems.append(
                    f'{c.where}: no {language} twin — add `# %% [markdown] lang="{language}" '
                    f'translates="{now}"` with its translation directly after it'
                )
            elif c in code:
                problems.append(
                    f'{c.where}: its comments have no {language} twin — add `# %% lang="{language}" '
                    f'translates="{now}"` directly after it: a `# …` line for each of its comments, translated'
                )
        elif c.twins[language][1] != now:
            problems.append(
                f"{c.where}: its {language} twin is stale — it translates {c.twins[language][1]}, "
                f'but the English text changed (now {now}); update the translation, then set translates="{now}"'
            )
    status = "incomplete" if problems else "translated"
    return Translation(Path(master_path), language, status, len(twinned), problems, **counts)


def _in_language(cell: MasterCell, language: str) -> nbformat.NotebookNode:
    """An English cell with its `language` twin's text, recorded by `parse()` (a code cell: the English code with the
    twin's comments)."""
    new = nbformat.from_dict(cell.cell)
    if language in cell.twins:
        new.source = cell.twins[language][0]
    return new


def translated_learner(master_path: Path, language: str) -> nbformat.NotebookNode:
    """The learner copy in `language`: each cell with its twin's text (a code cell: the English code, the twin's
    comments), the exercise answers blanked as in the English learner copy (the blank's comment in `language`:
    `checks.exercises.BLANKS`), and `agentic_rag.language` in the metadata.
    Raises MasterError when the master has no twins."""
    metadata, cells = parse(master_path)
    if not any(language in c.twins for c in cells):
        raise MasterError(
            f"{master_path}: no {language} twins, so no {language} copy; see CONTRIBUTING.md (Translations)"
        )
    nb = _notebook(metadata, [_in_language(c, language) for c in cells], master_path)
    nb = _learner(nb, master_path, language)
    nb.metadata["agentic_rag"] = {**nb.metadata["agentic_rag"], "language": language}
    return nb


def _learner(nb: nbformat.NotebookNode, master_path: Path, language: str = ENGLISH) -> nbformat.NotebookNode:
    try:
        return learner_notebook(nb, language)
    except ValueError as error:
        raise MasterError(f"{master_path}: {error}\n(an exercise cell needs one {BEGIN!r} … {END!r} block)") from error


def learner(master_path: Path) -> nbformat.NotebookNode:
    """The learner copy a master describes: render() with the exercise answers blanked."""
    return _learner(render(master_path), master_path)


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
                twins = f" ({s.twins} twins)" if s.twins else ""
                code = f"; {s.code_twins} of {s.commented} commented code cells have a twin" if s.commented else ""
                print(f"{s.master.name} [{s.language}]: {s.status}{twins}{code}")
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
