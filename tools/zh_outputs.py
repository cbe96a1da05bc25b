"""English sentences in the Chinese notebooks: in their Markdown (a test) and in an executed copy's outputs (this command).

A Chinese-speaking reader should meet no English sentence in a Chinese notebook except code, identifiers and the
English of a glossary term. `english_runs(text)` finds the runs of at least four consecutive English words left in a
text once code (fenced and inline), links' targets, HTML tags and formulas are taken out (a run that is a glossary
term's English is allowed); `tests/test_zh_prose.py` fails on any run in the Markdown of `notebooks/zh/*.ipynb`.

The outputs depend on a run, so they are checked on an executed copy:

    python -m tools.zh_outputs notebooks/zh/executed/05_three_agent_verification.ipynb [more.ipynb …]

lists, per notebook, every output (stream, text/plain, text/markdown, text/html) that holds an English run, with the
cell number and the run; it exits 1 when it found one, 0 when none, 2 when a file cannot be read. An output quoting
an English document of the knowledge base is listed too: read the list, it is a reviewer's aid, not a verdict.
Shorter English the course itself wrote is listed as well: a message of the catalogue (two or more words, no
placeholder: a table header such as "factual consistency", a label such as "changed figure") that an output shows in
English was shown without t() / t_labels / t_marked.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from functools import cache
from pathlib import Path

from lessons.core.settings import PROJECT_ROOT

GLOSSARY = PROJECT_ROOT / "docs" / "GLOSSARY.zh.md"
CATALOGUE = PROJECT_ROOT / "locale" / "zh" / "LC_MESSAGES" / "course.po"
MIN_PHRASE = 10  # characters: shorter messages ("the same") occur in any English quote
UNTRANSLATED = " (a catalogue message shown in English)"
MIN_WORDS = 4  # this many English words in a row make a sentence (a name or a term is shorter)

_WORD = r"[A-Za-z][A-Za-z'’\-]*(?![\w])"
_RUN = re.compile(rf"(?<![\w/.\-]){_WORD}(?:\s+{_WORD})+")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_TAG = re.compile(r"<[^>\n]+>")
_FORMULA = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)


@cache
def glossary_terms() -> tuple[str, ...]:
    """The English terms of `docs/GLOSSARY.zh.md` (first column; "a / b" gives both), longest first."""
    terms = set()
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] not in ("英文", "") and not set(cells[0]) <= set("-: "):
            terms.update(part.strip() for part in cells[0].split(" / ") if part.strip())
    return tuple(sorted(terms, key=len, reverse=True))


def prose(text: str) -> str:
    """`text` without what is not prose: fenced and inline code, link targets, URLs, HTML tags and formulas."""
    for pattern in (_FENCE, _INLINE_CODE, _LINK_TARGET, _URL, _FORMULA):
        text = pattern.sub(" ", text)
    return _TAG.sub(" | ", html.unescape(text) if "&" in text else text)  # a tag ends a run (table cells stay apart)


@cache
def _glossary_lower() -> frozenset[str]:
    return frozenset(term.lower() for term in glossary_terms())


def english_runs(text: str, min_words: int = MIN_WORDS) -> list[str]:
    """The runs of at least `min_words` consecutive English words in the prose of `text` (see `prose`); a run that is
    exactly a glossary term (its English, glossed on first use) is not one.

    Introduced for the Chinese edition's checks (`tests/test_zh_prose.py`, `python -m tools.zh_outputs`).
    """
    runs = []
    for match in _RUN.finditer(prose(text)):
        run = " ".join(match.group(0).split())
        if len(run.split()) >= min_words and run.lower() not in _glossary_lower():
            runs.append(run)
    return runs


@cache
def catalogue_phrases(catalogue: Path = CATALOGUE) -> tuple[tuple[str, re.Pattern], ...]:
    """The catalogue's English messages of two or more words, without placeholders, each with its word-bounded
    pattern (longest first): the course's own text, which a Chinese output shows translated."""
    from babel.messages.pofile import read_po

    with Path(catalogue).open("rb") as file:
        messages = [message.id for message in read_po(file) if isinstance(message.id, str)]
    phrases = {m for m in messages if "{" not in m and m.isascii() and len(m.split()) >= 2 and len(m) >= MIN_PHRASE}
    return tuple(
        (phrase, re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")) for phrase in sorted(phrases, key=len, reverse=True)
    )


_COLUMN_GAP = re.compile(r"[ \t]{2,}|\n")  # a plain-text table's column gap or a new line ends a label


def untranslated_messages(text: str) -> list[str]:
    """The catalogue messages (see `catalogue_phrases`) that `text` shows in English, each once, marked as such.

    Only where the message stands alone (a label, a header, a cell): a message's words inside a longer English run
    are part of an English sentence — a document the output quotes ("… are measured on different scales …") — and
    that run is listed by `english_runs` already."""
    text = _COLUMN_GAP.sub(" | ", prose(text))
    runs = [match.span() for match in _RUN.finditer(text)]

    def alone(match: re.Match) -> bool:
        start, end = match.span()
        return not any(s <= start and end <= e and e - s > end - start for s, e in runs)

    return [
        phrase + UNTRANSLATED
        for phrase, pattern in catalogue_phrases()
        if any(alone(match) for match in pattern.finditer(text))
    ]


def output_texts(output: dict) -> list[tuple[str, str]]:
    """(kind, text) of one notebook output: a stream's or an error's text, else its Markdown, else HTML, else plain text."""
    if output.get("output_type") == "stream":
        return [("stream", _joined(output.get("text", "")))]
    if output.get("output_type") == "error":
        return [("error", f"{output.get('ename', '')}: {output.get('evalue', '')}")]
    data = output.get("data", {})
    for kind in ("text/markdown", "text/html", "text/plain"):  # an HTML display's text/plain is only its repr
        if kind in data:
            return [(kind, _joined(data[kind]))]
    return []


def notebook_findings(path: Path, min_words: int = MIN_WORDS) -> list[tuple[int, str, str]]:
    """(cell number, output kind, English run) for every run in the outputs of the executed notebook at `path`."""
    try:
        notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not a readable notebook ({error}); pass an executed .ipynb file") from None
    findings = []
    for number, cell in enumerate(notebook.get("cells", []), 1):
        for output in cell.get("outputs", []):
            for kind, text in output_texts(output):
                findings += [(number, kind, run) for run in english_runs(text, min_words)]
                findings += [(number, kind, message) for message in untranslated_messages(text)]
    return findings


def _joined(text: str | list[str]) -> str:
    return "".join(text) if isinstance(text, list) else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="List the English sentences in executed Chinese notebooks' outputs.")
    parser.add_argument("notebooks", nargs="+", type=Path, help="executed .ipynb files (Chinese copies)")
    parser.add_argument(
        "--min-words", type=int, default=MIN_WORDS, help="English words in a row that count (default 4)"
    )
    args = parser.parse_args(argv)
    found = 0
    for path in args.notebooks:
        try:
            findings = notebook_findings(path, args.min_words)
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        print(f"{path}: {len(findings)} English run(s)")
        for number, kind, run in findings:
            print(f"  cell {number} [{kind}]: {run[:160]}")
        found += len(findings)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
