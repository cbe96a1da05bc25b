"""Rebuild headings, paragraphs, code blocks and simple tables of a PDF converted without models.

Introduced in notebook 01 (chunking). Docling's model-free `NativePdfPipeline` returns one plain text
item per printed line: no headings, no tables, and every wrapped paragraph cut into lines. This
module reads the font of each line with pypdfium2 (size, weight, fixed pitch) and writes Markdown:

- lines set in a clearly larger font than the body text become `#` / `##` / `###` headings, ranked
  by font size over the whole document, so header-based splitting works on PDFs too;
- the wrapped lines of one paragraph are joined back into one line (no space between CJK characters,
  none after a hyphen that splits a word), so a quote that wraps in the PDF is still one string;
- runs of monospaced lines become fenced code blocks, with their indentation;
- lines that share a row start a pipe table; its cells are rebuilt on a grid of columns and rows,
  so a cell that wraps onto several lines stays one cell;
- page furniture (a header or footer repeated on most pages, page numbers aside) is dropped.

Geometry is in PDF points with the origin at the bottom left of the page, as Docling reports it.
"""

from __future__ import annotations

import ctypes
import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from docling_core.types.doc import BoundingBox, CoordOrigin, DoclingDocument, TextItem

from lessons.text.cjk import is_cjk

HEADING_SIZE_RATIO = 1.15
MAX_HEADING_LEVEL = 4
MAX_HEADING_CHARS = 200
FULL_LINE_SHARE = 0.75
WRAP_PITCH = 2.0
WRAP_INDENT = 3.0
CODE_PITCH = 3.5
CODE_BLANK_LINE_PITCH = 1.8
TABLE_GAP = 1.6
TABLE_CELL_GAP = 2.5
COLUMN_TOLERANCE = 3.0
TABLE_ROW_GAP = 0.9
TABLE_PULL_BACK = 3.0
CELL_GAP = 0.8
FURNITURE_MARGIN = 0.08
FURNITURE_PAGE_SHARE = 0.5
MONOSPACE_ADVANCE = 0.6
SIZE_STEP = 0.5

_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demibold", re.IGNORECASE)
_MONOSPACE_NAME = re.compile(r"mono|courier|consol|code|menlo|fixed", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^(?:[-•·▪‣◦*–]\s|\d{1,3}[.)]\s|[a-zA-Z][.)]\s)")
_LIST_MARKER_ONLY = re.compile(r"^(?:[-•·▪‣◦*–]|\d{1,3}[.)]|[a-zA-Z][.)])$")
_DIGITS = re.compile(r"\d+")
_MARKDOWN_HEADING = re.compile(r"^(#{1,6}(?:\s|$)|`{3,}|~{3,})")
_FIXED_PITCH_FLAG = 1
_BOLD_WEIGHT = 600


@dataclass(frozen=True)
class PdfLine:
    """One printed line: its page, text, box and font."""

    page: int
    text: str
    left: float
    bottom: float
    right: float
    top: float
    size: float
    bold: bool
    monospace: bool

    @property
    def height(self) -> float:
        """Height of the line's box in points."""
        return self.top - self.bottom

    @property
    def scale(self) -> float:
        """Font size, or the box height when the PDF reported no font size."""
        return self.size or self.height


@dataclass(frozen=True)
class DocumentStyle:
    """What the whole document's lines say about its typography."""

    body_size: float
    heading_levels: dict[float, int]
    text_left: float
    text_right: float

    def heading_level(self, row: list[PdfLine]) -> int:
        """Heading level (1 = largest) of a row, or 0 when the row is not a heading."""
        if not _is_heading_candidate(row, self.body_size):
            return 0
        return self.heading_levels.get(_rounded_size(row[0].size), 0)

    def reaches_right_margin(self, line: PdfLine) -> bool:
        """True when a line runs (nearly) to the right edge of the text column, as wrapped lines do."""
        return line.right >= self.text_left + FULL_LINE_SHARE * (self.text_right - self.text_left)


@dataclass
class _PageChars:
    """Boxes and fonts of the visible characters of one page."""

    left: np.ndarray
    right: np.ndarray
    y: np.ndarray
    size: np.ndarray
    bold: np.ndarray
    monospace: np.ndarray

    def inside(self, box: BoundingBox) -> np.ndarray:
        """Mask of the characters whose centre lies in a (bottom-left origin) box, with 1 pt of slack."""
        x = (self.left + self.right) / 2
        return (x >= box.l - 1) & (x <= box.r + 1) & (self.y >= box.b - 1) & (self.y <= box.t + 1)


@dataclass
class _Block:
    """Consecutive rows that render as one Markdown block."""

    kind: str
    rows: list[list[PdfLine]] = field(default_factory=list)
    level: int = 0

    @property
    def last_line(self) -> PdfLine:
        """The first line of the block's latest row."""
        return self.rows[-1][0]


def pdf_pages_markdown(document: DoclingDocument, pdf_path: Path | bytes) -> list[tuple[int, str]]:
    """Markdown of every page of a natively converted PDF, with headings recovered from fonts.

    Introduced in notebook 01 (chunking).
    """
    page_heights = {page_no: page.size.height for page_no, page in document.pages.items()}
    lines = drop_page_furniture(read_lines(document, pdf_path), page_heights)
    style = measure_style(lines)
    by_page: dict[int, list[PdfLine]] = {page_no: [] for page_no in page_heights}
    for line in lines:
        by_page.setdefault(line.page, []).append(line)
    return [(page_no, render_page(page_lines, style)) for page_no, page_lines in sorted(by_page.items())]


def read_lines(document: DoclingDocument, pdf_path: Path | bytes) -> list[PdfLine]:
    """The document's text lines in Docling's order, each with the font pypdfium2 reports for it.

    Introduced in notebook 01 (chunking). A Docling line that bridges a wide gap (two table cells
    side by side) is split there.
    """
    lines: list[PdfLine] = []
    pdf = pdfium.PdfDocument(pdf_path if isinstance(pdf_path, bytes) else str(pdf_path))
    try:
        for page_no, page_items in _text_items_by_page(document).items():
            page = pdf[page_no - 1]
            try:
                chars = _page_chars(page)
                height = page.get_height()
            finally:
                page.close()
            for item in page_items:
                lines.extend(_lines_of_item(item, page_no, height, chars))
    finally:
        pdf.close()
    return lines


def drop_page_furniture(lines: list[PdfLine], page_heights: dict[int, float]) -> list[PdfLine]:
    """The lines without running headers and footers: text near the top or bottom edge found on most pages.

    Introduced in notebook 01 (chunking). Digits are ignored when comparing, so "page 3" repeats "page 2".
    """
    if len(page_heights) < 2:
        return lines
    edge_keys = {(line.page, _furniture_key(line)) for line in lines if _near_page_edge(line, page_heights)}
    pages_with_key = Counter(key for _page, key in edge_keys)
    needed = max(2, FURNITURE_PAGE_SHARE * len(page_heights))
    repeated = {key for key, count in pages_with_key.items() if count >= needed}
    return [line for line in lines if not (_near_page_edge(line, page_heights) and _furniture_key(line) in repeated)]


def measure_style(lines: list[PdfLine]) -> DocumentStyle:
    """Body font size, heading sizes ranked into levels, and the text column of a document.

    Introduced in notebook 01 (chunking).
    """
    body_size = _body_size(lines)
    rows = [row for page_rows in _rows_by_page(lines) for row in page_rows]
    heading_sizes = sorted(
        {_rounded_size(row[0].size) for row in rows if _is_heading_candidate(row, body_size)}, reverse=True
    )
    levels = {size: min(rank, MAX_HEADING_LEVEL) for rank, size in enumerate(heading_sizes, start=1)}
    body_lines = [line for line in lines if not line.monospace and abs(line.size - body_size) < SIZE_STEP]
    column = body_lines or lines
    text_left = min((line.left for line in column), default=0.0)
    text_right = max((line.right for line in column), default=0.0)
    return DocumentStyle(body_size, levels, text_left, text_right)


def render_page(lines: list[PdfLine], style: DocumentStyle) -> str:
    """Markdown of one page's lines.

    Introduced in notebook 01 (chunking).
    """
    blocks: list[_Block] = []
    for row in _group_rows(lines):
        if blocks and blocks[-1].kind == "table" and _belongs_to_table(blocks[-1], row, style):
            blocks[-1].rows.append(row)
            continue
        kind, level = _row_kind(row, style)
        if kind == "table":
            blocks.append(_start_table(blocks, row))
        elif blocks and _continues(blocks[-1], kind, level, row, style):
            blocks[-1].rows.append(row)
        else:
            blocks.append(_Block(kind, [row], level))
    return "\n\n".join(_render_block(block) for block in blocks)


def join_wrapped_lines(texts: list[str]) -> str:
    """Join the wrapped lines of one paragraph into one line.

    Introduced in notebook 01 (chunking). No space goes between CJK characters, and a hyphen that
    splits a word at the end of a line is kept and joined without a space ("self-" + "hosted").
    """
    joined = ""
    for text in texts:
        text = text.strip()
        if not joined or not text:
            joined = joined or text
        elif _needs_no_space(joined, text):
            joined += text
        else:
            joined += " " + text
    return joined


def _text_items_by_page(document: DoclingDocument) -> dict[int, list[TextItem]]:
    """Docling's text items grouped by page number, in the order Docling lists them."""
    by_page: dict[int, list[TextItem]] = {}
    for item, _level in document.iterate_items():
        if isinstance(item, TextItem) and item.prov and item.text.strip():
            by_page.setdefault(item.prov[0].page_no, []).append(item)
    return by_page


def _page_chars(page: pdfium.PdfPage) -> _PageChars:
    """Box, font size, boldness and fixed pitch of each visible character of a page."""
    textpage = page.get_textpage()
    try:
        rows = list(_char_rows(textpage.raw))
    finally:
        textpage.close()
    table = np.array(rows, dtype=float).reshape(-1, 6)
    return _PageChars(table[:, 0], table[:, 1], table[:, 2], table[:, 3], table[:, 4] > 0, table[:, 5] > 0)


def _char_rows(textpage) -> Iterator[tuple[float, float, float, float, bool, bool]]:
    """(left, right, y centre, size, bold, monospace) for each visible character of a text page."""
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    styles: dict[int | None, tuple[bool, bool]] = {}
    for index in range(pdfium_c.FPDFText_CountChars(textpage)):
        if pdfium_c.FPDFText_IsGenerated(textpage, index) == 1:
            continue
        if chr(pdfium_c.FPDFText_GetUnicode(textpage, index)).isspace():
            continue
        if not pdfium_c.FPDFText_GetCharBox(textpage, index, left, right, bottom, top):
            continue
        text_object = ctypes.cast(pdfium_c.FPDFText_GetTextObject(textpage, index), ctypes.c_void_p).value
        if text_object not in styles:
            styles[text_object] = _char_style(textpage, index)
        bold, monospace = styles[text_object]
        size = pdfium_c.FPDFText_GetFontSize(textpage, index)
        yield left.value, right.value, (bottom.value + top.value) / 2, size, bold, monospace


def _char_style(textpage, index: int) -> tuple[bool, bool]:
    """(bold, monospace) of the font of one character, from its weight, flags and name."""
    flags = ctypes.c_int(0)
    length = pdfium_c.FPDFText_GetFontInfo(textpage, index, None, 0, ctypes.byref(flags))
    buffer = ctypes.create_string_buffer(max(length, 1))
    pdfium_c.FPDFText_GetFontInfo(textpage, index, buffer, length, ctypes.byref(flags))
    name = buffer.value.decode("utf-8", errors="replace")
    weight = pdfium_c.FPDFText_GetFontWeight(textpage, index)
    bold = weight >= _BOLD_WEIGHT or bool(_BOLD_NAME.search(name))
    monospace = bool(flags.value & _FIXED_PITCH_FLAG) or bool(_MONOSPACE_NAME.search(name))
    return bold, monospace


def _lines_of_item(item: TextItem, page_no: int, page_height: float, chars: _PageChars) -> list[PdfLine]:
    """A Docling text item as `PdfLine`s with their fonts, split where it bridges a wide gap (code never is)."""
    box = _bottom_left_box(item.prov[0].bbox, page_height)
    text = item.text.strip()
    inside = chars.inside(box)
    if not inside.any():
        return [PdfLine(page_no, text, box.l, box.b, box.r, box.t, 0.0, False, False)]
    order = np.argsort(chars.left[inside])
    left, right = chars.left[inside][order], chars.right[inside][order]
    size = Counter(_rounded_size(value) for value in chars.size[inside]).most_common(1)[0][0]
    bold = bool(chars.bold[inside].all())
    monospace = bool(chars.monospace[inside].all())
    pieces = [(text, 0, len(left) - 1)] if monospace else _split_at_gaps(text, left, right, size)
    return [
        PdfLine(page_no, piece, float(left[first]), box.b, float(right[last]), box.t, size, bold, monospace)
        for piece, first, last in pieces
    ]


def _split_at_gaps(text: str, left: np.ndarray, right: np.ndarray, size: float) -> list[tuple[str, int, int]]:
    """(text, first glyph, last glyph) pieces of a line cut where glyphs are more than `CELL_GAP` ems apart.

    The line is left whole when its visible characters do not match the glyphs one to one, and a
    lone list marker stays with the text after it.
    """
    visible = [index for index, char in enumerate(text) if not char.isspace()]
    gaps = np.flatnonzero(left[1:] - right[:-1] > CELL_GAP * size) + 1
    if len(visible) != len(left) or not len(gaps):
        return [(text, 0, len(left) - 1)]
    bounds = [0, *gaps.tolist(), len(left)]
    pieces = [
        (text[visible[start] : visible[end - 1] + 1], start, end - 1) for start, end in itertools.pairwise(bounds)
    ]
    if _LIST_MARKER_ONLY.match(pieces[0][0]) and len(pieces) > 1:
        (marker, first, _), (following, _, last) = pieces[0], pieces[1]
        pieces[:2] = [(f"{marker} {following}", first, last)]
    return pieces


def _bottom_left_box(box: BoundingBox, page_height: float) -> BoundingBox:
    """The box with its origin at the bottom left of the page."""
    if box.coord_origin == CoordOrigin.BOTTOMLEFT:
        return box
    return box.to_bottom_left_origin(page_height=page_height)


def _near_page_edge(line: PdfLine, page_heights: dict[int, float]) -> bool:
    """True for a line in the top or bottom `FURNITURE_MARGIN` of its page."""
    height = page_heights.get(line.page, 0.0)
    return bool(height) and (line.bottom >= height * (1 - FURNITURE_MARGIN) or line.top <= height * FURNITURE_MARGIN)


def _furniture_key(line: PdfLine) -> str:
    """A line's text with digits masked and case folded, to find repeated headers and footers."""
    return _DIGITS.sub("#", line.text.casefold())


def _rounded_size(size: float) -> float:
    """Font size rounded to half a point, so 15.96 pt and 16 pt count as one size."""
    return round(size / SIZE_STEP) * SIZE_STEP


def _body_size(lines: Iterable[PdfLine]) -> float:
    """The font size that sets the most characters (monospaced code aside)."""
    weights: Counter[float] = Counter()
    for line in lines:
        if line.size and not line.monospace:
            weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _is_heading_candidate(row: list[PdfLine], body_size: float) -> bool:
    """True for a row of one short proportional line set clearly larger than the body, or larger and bold."""
    if len(row) != 1 or not body_size:
        return False
    line = row[0]
    larger = line.size >= body_size * HEADING_SIZE_RATIO or (line.bold and line.size >= body_size + SIZE_STEP)
    return (
        larger
        and not line.monospace
        and len(line.text) <= MAX_HEADING_CHARS
        and any(char.isalnum() for char in line.text)
    )


def _rows_by_page(lines: list[PdfLine]) -> Iterator[list[list[PdfLine]]]:
    """The rows of each page in turn."""
    by_page: dict[int, list[PdfLine]] = {}
    for line in lines:
        by_page.setdefault(line.page, []).append(line)
    for page_lines in by_page.values():
        yield _group_rows(page_lines)


def _group_rows(lines: list[PdfLine]) -> list[list[PdfLine]]:
    """Consecutive lines that overlap vertically, as rows sorted left to right (list markers kept with their text)."""
    rows: list[list[PdfLine]] = []
    for line in lines:
        if rows and _same_row(rows[-1][0], line):
            rows[-1].append(line)
        else:
            rows.append([line])
    return [_attach_list_marker(sorted(row, key=lambda line: line.left)) for row in rows]


def _same_row(first: PdfLine, other: PdfLine) -> bool:
    """True when two lines overlap by more than half the height of the smaller one."""
    overlap = min(first.top, other.top) - max(first.bottom, other.bottom)
    return overlap > 0.5 * min(first.height, other.height)


def _attach_list_marker(row: list[PdfLine]) -> list[PdfLine]:
    """The row with a lone list marker ("•", "-", "1.") merged into the text to its right."""
    if len(row) < 2 or not _LIST_MARKER_ONLY.match(row[0].text):
        return row
    marker, text = row[0], row[1]
    merged = PdfLine(
        text.page,
        f"{marker.text} {text.text}",
        marker.left,
        text.bottom,
        text.right,
        text.top,
        text.size,
        text.bold,
        text.monospace,
    )
    return [merged, *row[2:]]


def _row_kind(row: list[PdfLine], style: DocumentStyle) -> tuple[str, int]:
    """("heading", level), ("code", 0), ("table", 0) or ("text", 0) for one row."""
    level = style.heading_level(row)
    if level:
        return "heading", level
    if all(line.monospace for line in row):
        return "code", 0
    if len(row) > 1:
        return "table", 0
    return "text", 0


def _pitch(upper: PdfLine, lower: PdfLine) -> float:
    """Distance between two lines' baselines, in multiples of the lower line's font size."""
    return (upper.bottom - lower.bottom) / lower.scale


def _continues(block: _Block, kind: str, level: int, row: list[PdfLine], style: DocumentStyle) -> bool:
    """True when a heading, code or text row belongs to the block above it."""
    pitch = _pitch(block.last_line, row[0])
    if kind == "heading":
        return block.kind == "heading" and block.level == level and 0 < pitch <= WRAP_PITCH
    if kind == "code":
        return block.kind == "code" and 0 < pitch <= CODE_PITCH
    return kind == "text" and block.kind == "text" and _wraps_into(block.last_line, row[0], style)


def _wraps_into(upper: PdfLine, lower: PdfLine, style: DocumentStyle) -> bool:
    """True when `lower` is the next line of the paragraph that `upper` wraps out of."""
    return (
        not _LIST_ITEM.match(lower.text)
        and abs(upper.size - lower.size) < SIZE_STEP
        and 0 < _pitch(upper, lower) <= WRAP_PITCH
        and abs(upper.left - lower.left) <= WRAP_INDENT * lower.scale
        and style.reaches_right_margin(upper)
    )


def _start_table(blocks: list[_Block], row: list[PdfLine]) -> _Block:
    """A table block opened by `row`, taking back the cells already read as text just above or beside it.

    A header cell that wraps ("Deploy" / "ment" / "size") comes before the rest of its row in the
    PDF, so it was read as one-line paragraphs in the table's font size.
    """
    table = _Block("table", [row])
    size = row[0].scale
    top = max(line.top for line in row) + TABLE_PULL_BACK * size
    bottom = min(line.bottom for line in row) - TABLE_PULL_BACK * size
    while blocks and blocks[-1].kind == "text":
        lines = [line for previous in blocks[-1].rows for line in previous]
        if not all(abs(line.size - row[0].size) < SIZE_STEP and bottom <= line.bottom <= top for line in lines):
            break
        table.rows[:0] = blocks.pop().rows
    return table


def _belongs_to_table(table: _Block, row: list[PdfLine], style: DocumentStyle) -> bool:
    """True when a row continues a table: same font size, no heading, and close below it.

    A row may sit further below when each of its lines fits inside one column of the table, as the
    first line of a vertically centred cell does.
    """
    lines = [line for table_row in table.rows for line in table_row]
    if style.heading_level(row) or not all(
        abs(line.size - lines[-1].size) < SIZE_STEP and not line.monospace for line in row
    ):
        return False
    gap = min(line.bottom for line in lines) - max(line.top for line in row)
    if gap <= TABLE_GAP * row[0].scale:
        return True
    columns = _column_positions(lines)
    return gap <= TABLE_CELL_GAP * row[0].scale and all(_fits_column(line, columns) for line in row)


def _fits_column(line: PdfLine, columns: list[float]) -> bool:
    """True when a line starts at a column's left edge and ends before the next column starts."""
    for index, left in enumerate(columns):
        if abs(line.left - left) <= COLUMN_TOLERANCE:
            return index + 1 == len(columns) or line.right < columns[index + 1]
    return False


def _needs_no_space(before: str, after: str) -> bool:
    """True when two wrapped lines join without a space."""
    hyphenated = before.endswith("-") and len(before) > 1 and before[-2].isalpha() and after[0].islower()
    return hyphenated or is_cjk(before[-1]) or is_cjk(after[0])


def _render_block(block: _Block) -> str:
    """Markdown of one block."""
    if block.kind == "heading":
        return "#" * block.level + " " + join_wrapped_lines([row[0].text for row in block.rows])
    if block.kind == "code":
        return _render_code(block.rows)
    if block.kind == "table":
        return _render_table([line for row in block.rows for line in row])
    return _escape_block_start(join_wrapped_lines([row[0].text for row in block.rows]))


def _escape_block_start(text: str) -> str:
    """Escape a paragraph that Markdown would otherwise read as a heading or a code fence."""
    return "\\" + text if _MARKDOWN_HEADING.match(text) else text


def _render_code(rows: list[list[PdfLine]]) -> str:
    """A fenced code block; indentation is rebuilt from each line's offset in character widths."""
    lines = [line for row in rows for line in row]
    margin = min(line.left for line in lines)
    rendered: list[str] = []
    for previous, line in zip([None, *lines], lines):
        if previous is not None and _pitch(previous, line) > CODE_BLANK_LINE_PITCH:
            rendered.append("")
        indent = round((line.left - margin) / (MONOSPACE_ADVANCE * line.scale))
        rendered.append(" " * indent + line.text)
    return "```\n" + "\n".join(rendered) + "\n```"


def _render_table(lines: list[PdfLine]) -> str:
    """A pipe table (first row as header) built on a grid of columns and rows; one row stays one line."""
    columns = _column_positions(lines)
    grid = [_cells_by_column(band, columns) for band in _table_rows(lines)]
    if len(grid) == 1:
        return _escape_block_start(" ".join(cell for cell in grid[0] if cell))
    separator = ["---"] * len(columns)
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [grid[0], separator, *grid[1:]])


def _column_positions(lines: list[PdfLine]) -> list[float]:
    """Left edges of the table's columns (cell lefts within `COLUMN_TOLERANCE` points count as one column)."""
    positions: list[float] = []
    for left in sorted(line.left for line in lines):
        if not positions or left - positions[-1] > COLUMN_TOLERANCE:
            positions.append(left)
    return positions


def _table_rows(lines: list[PdfLine]) -> list[list[PdfLine]]:
    """The table's lines in rows: a row ends where the next line starts clearly below all of it."""
    bands: list[list[PdfLine]] = []
    bottom = 0.0
    for line in sorted(lines, key=lambda line: -line.top):
        if bands and line.top >= bottom - TABLE_ROW_GAP * line.scale:
            bands[-1].append(line)
            bottom = min(bottom, line.bottom)
        else:
            bands.append([line])
            bottom = line.bottom
    return bands


def _cells_by_column(band: list[PdfLine], columns: list[float]) -> list[str]:
    """The row's cell texts under the nearest column (wrapped lines of a cell joined), "" where empty."""
    cells: list[list[PdfLine]] = [[] for _ in columns]
    for line in band:
        cells[min(range(len(columns)), key=lambda column: abs(columns[column] - line.left))].append(line)
    return [
        join_wrapped_lines([line.text for line in sorted(cell, key=lambda line: -line.top)]).replace("|", "\\|")
        for cell in cells
    ]
