"""Text normalised for matching, and Docling's inline spacing tidied.

Introduced in notebook 01 (chunking): `normalise_for_match` lets a gold quote be found in converted Markdown;
`tidy_inline_spacing` removes the spaces Docling puts around inline code and emphasis. Notebook 02:
`table_rows_as_text` is what the cross-encoder reads of a Markdown table (`lessons.retrieval.rerank`).
"""

from __future__ import annotations

import re
import unicodedata

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_WHITESPACE = re.compile(r"\s+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<=[`*~)]) (?=[.,;:!?)\]])")
_SPACE_AFTER_BRACKET = re.compile(r"(?<=[(\[]) (?=[`*~\[])")
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ESCAPED_PUNCTUATION = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~<])")
_ESCAPE_SHIFT = 0xF0000
_ESCAPED_CHAR = re.compile("[\U000f0000-\U000f007f]")
_STRONG_STAR = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_STRONG_UNDERSCORE = re.compile(r"(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])")
_EMPHASIS_STAR = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])")
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])")
_STRIKETHROUGH = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_TABLE_RULE = re.compile(r"^[ \t|:+-]*-{3,}[ \t|:+-]*$", re.MULTILINE)
_HEADING_MARKER = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)


def fold_width(text: str) -> str:
    """Unicode NFKC: full-width letters and digits (`ＡＰＩ`, `２０２６`), ligatures and non-breaking spaces as plain ones.

    Introduced in notebook 01 (chunking); the one normalisation quote matching (`normalise_for_match`) and the
    BM25 tokens of notebook 02 (`lessons.retrieval.retrievers.tokenize_bilingual`) share.
    """
    return unicodedata.normalize("NFKC", text)


def normalise_for_match(text: str) -> str:
    """Text reduced to what a reader sees, so a gold quote can be found in converted Markdown.

    Introduced in notebook 01 (chunking). Apply it to both the quote and the document, then test
    `quote in document`. Steps, in order:

    1. Unicode NFKC (full-width letters and digits, ligatures like "ﬁ", non-breaking spaces);
    2. links and images `[text](url)` keep only their text;
    3. emphasis markers are removed (`**bold**`, `__bold__`, `*it*`, `_it_`, `~~struck~~`), while
       underscores inside words (`snake_case`, `ATLAS__RETRIEVAL__TOP_N`) stay, and backticks are removed;
    4. backslash escapes are removed, keeping the escaped character literally (`\\_` → `_`,
       `\\*` → `*`: an escaped marker is never taken for emphasis);
    5. table rules (`|---|---|`) and heading markers (`## `) are removed, table pipes become spaces;
    6. runs of whitespace (line breaks too) collapse to one space, and the ends are stripped.
    """
    text = fold_width(text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _ESCAPED_PUNCTUATION.sub(lambda match: chr(_ESCAPE_SHIFT + ord(match.group(1))), text)
    for pattern in (_STRONG_STAR, _STRONG_UNDERSCORE, _STRIKETHROUGH, _EMPHASIS_STAR, _EMPHASIS_UNDERSCORE):
        text = pattern.sub(r"\1", text)
    text = text.replace("`", "")
    text = _ESCAPED_CHAR.sub(lambda match: chr(ord(match.group()) - _ESCAPE_SHIFT), text)
    text = _TABLE_RULE.sub(" ", text)
    text = _HEADING_MARKER.sub("", text)
    return _collapse_whitespace(text.replace("|", " "))


def code_fence_lines(lines: list[str]) -> list[bool]:
    """For each Markdown line, whether it belongs to a fenced code block (its opening and closing fence included).

    A fence is three or more backticks or tildes indented at most 3 spaces; it is closed only by a fence of the
    same character at least as long with nothing after it (CommonMark), so "```" inside a "````" or "~~~" block
    stays code. Used wherever text is rewritten but code must not be: `tidy_inline_spacing`, `unwrap_lines`.
    """
    inside, fence = [], ""
    for line in lines:
        opened = _FENCE.match(line)
        if fence:
            inside.append(True)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = "" if not opened.group(2).strip() else fence
        else:
            inside.append(bool(opened))
            fence = opened.group(1) if opened else ""
    return inside


def tidy_inline_spacing(markdown: str) -> str:
    """Remove the spaces Docling puts between inline code, emphasis or links and punctuation.

    Introduced in notebook 01 (chunking). Docling writes "run `atlasctl reload` ." and "( `c` )"; the
    text as written, "run `atlasctl reload`." and "(`c`)", is what a quote from the document contains.
    Code blocks are left as they are.
    """
    lines = markdown.split("\n")
    return "\n".join(
        line if code else _SPACE_BEFORE_PUNCTUATION.sub("", _SPACE_AFTER_BRACKET.sub("", line))
        for line, code in zip(lines, code_fence_lines(lines), strict=True)
    )


_PIPE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")  # an escaped pipe (\|) is part of a cell
_RULE_CELL = re.compile(r"^\s*:?-{3,}:?\s*$")
# a rule line with or without outer pipes; a bare "---" matches too, and the cross-encoder's text drops it as well
_RULE_LINE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def table_cells(line: str) -> list[str] | None:
    """The cells of a Markdown pipe-table line, as written (None: the line is no table row). The course's one reading
    of the tables in its chunks (Docling and the PDF reader write pipe tables): the cross-encoder's text
    (`table_rows_as_text`) and the answerability check's table rows (`lessons.agents.answerability`) both use it."""
    piped = _PIPE_ROW.match(line)
    return _CELL_SPLIT.split(piped.group(1)) if piped else None


def is_rule_row(cells: list[str] | None) -> bool:
    """Whether a table line's cells are its header's rule (`|---|:---:|`)."""
    return bool(cells) and all(_RULE_CELL.match(cell) for cell in cells)


def _cells(line: str) -> list[str]:
    return [cell.strip().replace("**", "") for cell in table_cells(line)]


def table_rows_as_text(text: str) -> str:
    """`text` with each Markdown pipe table written as one line per body row, every cell after its column's header.

    What the course's cross-encoder reads of a chunk (`cross_encoder_reranker`, notebook 02): the row
    "| Hotel, per night | … | CNY 900 per night |" under "| Category | … | Hangzhou |" reads
    "Category: Hotel, per night; …; Hangzhou: CNY 900 per night.". The rule line (`|---|---|`) goes: in the
    handbook's expenses table it was about 160 of the 289 tokens the packaged cross-encoder read with the question
    "What is the maximum hotel cost per night …", which it scored 0.0004 (as rows: 0.05). Repeating the header costs
    tokens: the packages' 10-row handler table grows from about 370 to 510, at the model's 512-token window. A row
    of a table whose header is not in `text` keeps its cells, joined by "; "; empty cells and bold markers go; other
    lines are unchanged.
    """
    lines, out, header = text.split("\n"), [], None
    for number, line in enumerate(lines):
        if _RULE_LINE.match(line):
            continue
        if table_cells(line) is None:
            header = None
            out.append(line)
            continue
        row = _cells(line)
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if header is None and _RULE_LINE.match(following):
            header = row
        elif header and len(header) == len(row):
            out.append("; ".join(f"{name}: {cell}" if name else cell for name, cell in zip(header, row) if cell) + ".")
        else:
            out.append("; ".join(cell for cell in row if cell))
    return "\n".join(out)


def _collapse_whitespace(text: str) -> str:
    """Runs of whitespace as single spaces, ends stripped."""
    return _WHITESPACE.sub(" ", text).strip()
