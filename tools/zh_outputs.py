"""English sentences in the Chinese notebooks: in their Markdown (a test) and in an executed copy's outputs (this command).

A Chinese-speaking reader should meet no English sentence in a Chinese notebook except code, identifiers and the
English of a glossary term. `english_runs(text)` finds the runs of at least four consecutive English words left in a
text once code (fenced and inline), links' targets, HTML tags, formulas and the body of a folded `<details>` block
(a prompt the model reads, shown by `lessons.core.show_model_text`) are taken out (a run that is a glossary term's
English is allowed); `tests/test_zh_prose.py` fails on any run in the Markdown of `notebooks/zh/*.ipynb`.

The outputs depend on a run, so they are checked on an executed copy:

    python -m tools.zh_outputs /tmp/executed/zh/05_three_agent_verification.ipynb [more.ipynb …]

(`tools.notebook_runner.execute_notebook(path, quick=True, out_dir="/tmp/executed")` keeps one) lists, per notebook,
every output (stream, text/plain, text/markdown, text/html, error) that holds an English run, with the cell number and
the run. Some English is shown on purpose — an English document in a demo about languages, a translation pair —
and `ON_PURPOSE` names each such cell (by a piece of its code) with the reason; the command marks those runs and
exits 1 when any other run is left, 0 when none, 2 when a file cannot be read. `tests/test_notebooks.py` audits every
quick run of a Chinese copy this way, so new English in an output fails the notebook tests.
Shorter English the course itself wrote is listed as well, and never on purpose: a message of the catalogue (two or
more words, no placeholder: a table header such as "factual consistency", a label such as "changed figure") that an
output shows in English was shown without t() / t_labels / t_marked.
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
_OPEN_FENCE = re.compile(r"(?:```|~~~)[^<]*")  # a fence a shown chunk cuts off: code up to the next tag (or the end)
_FOLDED = re.compile(r"<details\b[^>]*>(.*?)</details>", re.DOTALL | re.IGNORECASE)
_SUMMARY = re.compile(r"<summary\b[^>]*>(.*?)</summary>", re.DOTALL | re.IGNORECASE)


@cache
def glossary_terms() -> tuple[str, ...]:
    """The English terms of `docs/GLOSSARY.zh.md` (first column; "a / b" gives both), longest first."""
    terms = set()
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] not in ("英文", "") and not set(cells[0]) <= set("-: "):
            terms.update(part.strip() for part in cells[0].split(" / ") if part.strip())
    return tuple(sorted(terms, key=len, reverse=True))


def _summary_only(folded: re.Match) -> str:
    summary = _SUMMARY.search(folded.group(1))
    return f" | {summary.group(1)} | " if summary else " | "


def prose(text: str) -> str:
    """`text` without what is not prose: fenced (or cut-off fenced) and inline code, link targets, URLs, HTML tags,
    formulas, and the body of a folded `<details>` block (its `<summary>`, what the reader sees, stays): English a
    reader opens on purpose — a prompt exactly as the model reads it (`lessons.core.show_model_text`) — is not English
    they meet."""
    text = _FOLDED.sub(_summary_only, text)
    for pattern in (_FENCE, _OPEN_FENCE, _INLINE_CODE, _LINK_TARGET, _URL, _FORMULA):
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


# English a Chinese copy shows on purpose: by notebook (its file name's stem), a piece of the code of the cell that
# shows it, and why. `python -m tools.zh_outputs` lists these runs as on purpose and fails on every other one;
# tests/test_notebooks.py audits each quick run of a Chinese copy with it, and tests/test_zh_prose.py fails on an
# entry whose code no Chinese copy has any more. A catalogue message shown in English is never on purpose.
ON_PURPOSE: dict[str, tuple[tuple[str, str], ...]] = {
    "00_setup": (
        (
            '"The Team plan costs 45 euros',
            "the embedding demo's translation pairs: an English sentence beside its Chinese twin",
        ),
    ),
    "01_chunking": (
        ('"Atlas Server listens on port 7420."', "the token count of one sentence in English and in Chinese"),
        ("first_line = block.text.split", "the first line of each code block the parser keeps whole: code"),
    ),
    "02_retrieval_tricks": (
        ('english_example = by_id["en-041"]', "the packaged cross-encoder learned English: an English question first"),
        ('startswith("The two are complementary")', "that English question's chunk with its neighbours"),
        ('pk_gold["pkg-en-050"]', "the packages' English READMEs: two English questions show the fusion's reach"),
        ('pk_gold["pkg-zh-015"]', "a Chinese question over English READMEs: the cross-lingual case"),
        (
            "step_back_question(llm).invoke",
            "the chat model's rewrites as it wrote them (asked for the question's language)",
        ),
    ),
    "03_qa_transformation": (
        ('for language in ("en", "zh")', "QA pairs of an English and of a Chinese chunk, side by side"),
        ('CORPUS_DIR / "atlas_whitepaper.pdf"', "cleaning the English PDF's hyphenated line ends (the only PDF)"),
    ),
    "08_service": (
        ('for language in ("en", "zh")', "one question per language, the English one's hits: the service serves both"),
        ("client.ask(question.question, k=K)", "the English question's answer, reference and citations"),
    ),
}


def _on_purpose(stem: str, source: str) -> str | None:
    return next((reason for code, reason in ON_PURPOSE.get(stem, ()) if code in source), None)


def audit(path: Path, min_words: int = MIN_WORDS) -> list[tuple[int, str, str, str | None]]:
    """(cell number, output kind, English run, why it is on purpose or None) for every run in the outputs of the
    executed notebook at `path`; a plain-text table's columns (two or more spaces apart) are read apart."""
    try:
        notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not a readable notebook ({error}); pass an executed .ipynb file") from None
    findings = []
    for number, cell in enumerate(notebook.get("cells", []), 1):
        reason = _on_purpose(Path(path).stem, _joined(cell.get("source", "")))
        for output in cell.get("outputs", []):
            for kind, text in output_texts(output):
                runs = english_runs(_COLUMNS.sub(" | ", text), min_words)
                findings += [(number, kind, run, reason) for run in runs]
                findings += [(number, kind, message, None) for message in untranslated_messages(text)]
    return findings


_COLUMNS = re.compile(r"[ \t]{2,}")


def notebook_findings(path: Path, min_words: int = MIN_WORDS) -> list[tuple[int, str, str]]:
    """(cell number, output kind, English run) for every run in the outputs of the executed notebook at `path`."""
    return [finding[:3] for finding in audit(path, min_words)]


def unexplained_findings(path: Path, min_words: int = MIN_WORDS) -> list[tuple[int, str, str]]:
    """The findings of `notebook_findings` that `ON_PURPOSE` does not explain: English a reader should not meet."""
    return [finding[:3] for finding in audit(path, min_words) if finding[3] is None]


def _joined(text: str | list[str]) -> str:
    return "".join(text) if isinstance(text, list) else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="List the English sentences in executed Chinese notebooks' outputs.")
    parser.add_argument("notebooks", nargs="+", type=Path, help="executed .ipynb files (Chinese copies)")
    parser.add_argument(
        "--min-words", type=int, default=MIN_WORDS, help="English words in a row that count (default 4)"
    )
    args = parser.parse_args(argv)
    unexplained = 0
    for path in args.notebooks:
        try:
            findings = audit(path, args.min_words)
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        left = sum(reason is None for *_, reason in findings)
        print(f"{path}: {len(findings)} English run(s), {len(findings) - left} on purpose, {left} to fix")
        for number, kind, run, reason in findings:
            print(f"  cell {number} [{kind}]: {run[:160]}" + (f"  (on purpose: {reason})" if reason else ""))
        unexplained += left
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
