"""Markdown as a list of blocks, and a chunker that never cuts a table, a code block or a formula.

Introduced in notebook 01 (chunking). Header splitting and recursive splitting both cut through a
long table, a fenced code block or a display formula once a section is longer than the chunk size.
Here the converted Markdown is parsed with markdown-it-py (CommonMark plus GitHub tables) into
blocks — headings, paragraphs, list items, tables, fenced code, `$$` math — and chunks are made of
*whole* neighbouring blocks:

- tables, code blocks and formulas are atomic: they stay whole even when they exceed the size limit
  (the chunk's metadata then says `oversize=True`);
- a heading always travels with the block after it, and a new heading (levels 1–4) starts a new
  chunk, whose `section_path` metadata is the heading path ("Guide > Installation > Network");
- a paragraph or list item longer than the limit is split with the bilingual recursive splitter.

A chunk is always an exact slice of the source Markdown (blank lines included), so nothing is
re-formatted. markdown-it-py has no `$$` rule without the mdit-py-plugins package, so display math
is recognised in the token stream: a paragraph that opens with `$$` runs to the block that closes it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from lessons.chunking.base import BILINGUAL_SEPARATORS, Chunker

ATOMIC_KINDS = ("table", "code", "math")
SECTION_LEVELS = 4
BLOCK_GAP = "\n\n"
MATH_FENCE = "$$"

_PARSER = MarkdownIt("commonmark").enable("table")
_TABLE_ROW = re.compile(r"^\s{0,3}\|")
_TABLE_RULE_ROW = re.compile(r"^\s{0,3}\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_LIST_TYPES = ("bullet_list", "ordered_list")
_KIND_OF_NODE = {
    "paragraph": "paragraph",
    "table": "table",
    "fence": "code",
    "code_block": "code",
    "blockquote": "quote",
    "html_block": "html",
    "hr": "rule",
}


@dataclass(frozen=True)
class Block:
    """One top-level Markdown block: its kind, its line range [start, end) in the source, and its text.

    Introduced in notebook 01 (chunking). Kinds: heading, paragraph, list_item, table, code, math,
    quote, html, rule.
    """

    kind: str
    start: int
    end: int
    text: str
    level: int = 0
    title: str = ""
    language: str = ""

    @property
    def atomic(self) -> bool:
        """Tables, code blocks and formulas are never split."""
        return self.kind in ATOMIC_KINDS


@dataclass
class BlockChunk:
    """A chunk made of whole neighbouring blocks, with the (level, title) heading path above it.

    Introduced in notebook 01 (chunking).
    """

    text: str
    path: tuple[tuple[int, str], ...]
    kinds: list[str]
    languages: list[str] = field(default_factory=list)
    oversize: bool = False

    @property
    def headings(self) -> list[str]:
        """The titles of the headings above the chunk, outermost first."""
        return [title for _level, title in self.path]

    def metadata(self) -> dict[str, str | bool]:
        """Chroma-compatible metadata: section path, block kinds, code languages, oversize flag."""
        return {
            "section_path": " > ".join(self.headings),
            "section": self.headings[-1] if self.headings else "",
            "block_kinds": ",".join(dict.fromkeys(self.kinds)),
            "code_language": ",".join(dict.fromkeys(self.languages)),
            "oversize": self.oversize,
        }


def parse_blocks(markdown: str) -> list[Block]:
    """The top-level blocks of a Markdown text, in order; list items are blocks of their own.

    Introduced in notebook 01 (chunking). A fenced block's `#` lines are code, not headings, and a
    `$$ … $$` formula is one `math` block even when it contains blank lines.
    """
    lines = _lines(markdown)
    tree = SyntaxTreeNode(_PARSER.parse("\n".join(lines)))
    blocks = [block for node in tree.children for block in _blocks_of(node, lines)]
    return _merge_math(blocks, lines)


def atomic_blocks(markdown: str) -> list[Block]:
    """The tables, code blocks and formulas of a Markdown text.

    Introduced in notebook 01 (chunking).
    """
    return [block for block in parse_blocks(markdown) if block.atomic]


def pack_greedily(sizes: Sequence[int], limit: int, gap: int = len(BLOCK_GAP)) -> list[tuple[int, int]]:
    """Runs [start, end) of consecutive items whose sizes plus `gap` between items fit `limit`.

    Introduced in notebook 01 (chunking). Greedy: a run grows until the next item would not fit. An
    item larger than `limit` is a run of its own — it is never cut.
    """
    if limit <= 0:
        raise ValueError(f"limit must be positive, got {limit} — pass the chunk size in characters, e.g. 800")
    runs: list[tuple[int, int]] = []
    start, total = 0, 0
    for index, size in enumerate(sizes):
        if index > start and total + gap + size > limit:
            runs.append((start, index))
            start, total = index, 0
        total = size if index == start else total + gap + size
    if sizes:
        runs.append((start, len(sizes)))
    return runs


def chunk_markdown(markdown: str, max_chars: int = 800, open_path: Sequence[tuple[int, str]] = ()) -> list[BlockChunk]:
    """Chunks of whole blocks, at most `max_chars` long unless one atomic block is longer.

    Introduced in notebook 01 (chunking). `open_path` holds the (level, title) headings open before
    the text starts (a PDF page continues the section of the page before).
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars} — e.g. chunk_markdown(text, max_chars=800)")
    lines = _lines(markdown)
    path = tuple(open_path)
    chunks: list[BlockChunk] = []
    waiting: list[Block] = []
    for section in _sections(parse_blocks(markdown)):
        if _starts_section(section[0]):
            path = _open_heading(path, section[0])
        if all(block.kind == "heading" for block in section):
            waiting.extend(section)
            continue
        chunks.extend(_pack_section([*waiting, *section], lines, path, max_chars))
        waiting = []
    if waiting:
        chunks.append(_chunk(_span(lines, waiting[0].start, waiting[-1].end), waiting, path, oversize=False))
    return chunks


def markdown_block_chunker(max_chars: int = 800) -> Chunker:
    """A chunker for LangChain documents (pages or files) built on `chunk_markdown`.

    Introduced in notebook 01 (chunking). The heading path open at the end of a page carries over to
    the next page of the same source.
    """

    def chunk_documents(documents: Sequence[Document]) -> list[Document]:
        open_paths: dict[str, tuple[tuple[int, str], ...]] = {}
        chunks = []
        for document in documents:
            source = str(document.metadata.get("source", ""))
            page = document.metadata.get("page")
            path = open_paths.get(source, ()) if isinstance(page, int) and page > 1 else ()
            for chunk in chunk_markdown(document.page_content, max_chars, path):
                chunks.append(Document(page_content=chunk.text, metadata={**document.metadata, **chunk.metadata()}))
                path = chunk.path
            open_paths[source] = path
        return chunks

    return chunk_documents


def repeat_table_headers(pieces: Sequence[str]) -> list[str]:
    """The consecutive pieces of one text, each piece that starts inside a table led by its header row.

    Introduced in notebook 01 (chunking). A size-capped splitter cuts a long Markdown table into
    pieces of rows; without its header row (and the `|---|` rule under it) a piece is a list of values
    without column names, which neither the embedder nor the answering model can read. A table starts
    at a `|` row followed by a rule row and runs while rows start with `|`; a piece whose first line
    is such a row, while a table is open, gets the header and rule prepended (unless it starts with them).
    """
    result: list[str] = []
    header: tuple[str, str] | None = None  # (header row, rule row) of the table open at the end of the last piece
    for piece in pieces:
        lines = piece.split("\n")
        first = next((line for line in lines if line.strip()), "")
        starts_in_table = header is not None and _TABLE_ROW.match(first) and not _TABLE_RULE_ROW.match(first)
        if starts_in_table and [line.strip() for line in lines[:2]] != [header[0].strip(), header[1].strip()]:
            piece = f"{header[0]}\n{header[1]}\n{piece.lstrip(chr(10))}"
        result.append(piece)
        header = _open_table_header(lines, header if starts_in_table else None)
    return result


def _open_table_header(lines: Sequence[str], carried: tuple[str, str] | None) -> tuple[str, str] | None:
    """The (header, rule) of the table still open at the end of `lines`; `carried` is the one open at the start."""
    header = carried
    for index, line in enumerate(lines):
        if _TABLE_ROW.match(line):
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if _TABLE_RULE_ROW.match(following) and not _TABLE_RULE_ROW.match(line):
                header = (line, following)
        elif not line.strip() or not _TABLE_ROW.match(line):
            header = None
    return header


def _lines(markdown: str) -> list[str]:
    """The text's lines with Unix line ends (markdown-it's line numbers refer to these)."""
    return markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _blocks_of(node: SyntaxTreeNode, lines: list[str]) -> list[Block]:
    """The block(s) of one top-level syntax-tree node: a list gives one block per item."""
    if node.type in _LIST_TYPES:
        return [_block("list_item", item, lines) for item in node.children]
    if node.type == "heading":
        title = node.children[0].content if node.children else ""
        return [_block("heading", node, lines, level=int(node.tag[1]), title=title.strip())]
    kind = _KIND_OF_NODE.get(node.type, node.type)
    language = node.info.split()[0] if kind == "code" and node.info.strip() else ""
    return [_block(kind, node, lines, language=language)]


def _block(kind: str, node: SyntaxTreeNode, lines: list[str], **extra) -> Block:
    """A block spanning the node's source lines, trailing blank lines left out."""
    start, end = node.map
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return Block(kind=kind, start=start, end=end, text="\n".join(lines[start:end]), **extra)


def _merge_math(blocks: list[Block], lines: list[str]) -> list[Block]:
    """Blocks with every `$$ … $$` formula as one `math` block (its lines may parse as several blocks)."""
    merged: list[Block] = []
    index = 0
    while index < len(blocks):
        block = blocks[index]
        closing = _math_end(blocks, index)
        if closing is None:
            merged.append(block)
            index += 1
            continue
        end = blocks[closing].end
        merged.append(Block(kind="math", start=block.start, end=end, text="\n".join(lines[block.start : end])))
        index = closing + 1
    return merged


def _math_end(blocks: list[Block], index: int) -> int | None:
    """Index of the block that closes a formula opened by `blocks[index]`, or None if it opens none."""
    text = blocks[index].text.strip()
    if blocks[index].kind != "paragraph" or not text.startswith(MATH_FENCE):
        return None
    if len(text) > len(MATH_FENCE) and MATH_FENCE in text[len(MATH_FENCE) :]:
        return index
    for later in range(index + 1, len(blocks)):
        if blocks[later].kind != "code" and blocks[later].text.rstrip().endswith(MATH_FENCE):
            return later
    return None


def _sections(blocks: list[Block]) -> list[list[Block]]:
    """Blocks grouped by section: each heading of level 1–4 starts a new group."""
    sections: list[list[Block]] = []
    for block in blocks:
        if not sections or _starts_section(block):
            sections.append([block])
        else:
            sections[-1].append(block)
    return sections


def _starts_section(block: Block) -> bool:
    """A heading of level 1–4 (deeper headings stay inside their section)."""
    return block.kind == "heading" and block.level <= SECTION_LEVELS


def _open_heading(path: tuple[tuple[int, str], ...], heading: Block) -> tuple[tuple[int, str], ...]:
    """The heading path once `heading` opens: it replaces the heading of its level and every deeper one."""
    return (*((level, title) for level, title in path if level < heading.level), (heading.level, heading.title))


def _pack_section(section: list[Block], lines: list[str], path, max_chars: int) -> list[BlockChunk]:
    """The chunks of one section: headings glued to the next block, then whole units packed greedily."""
    units = _units(section)
    sizes = [len(_span(lines, unit[0].start, unit[-1].end)) for unit in units]
    chunks: list[BlockChunk] = []
    for start, end in pack_greedily(sizes, max_chars):
        blocks = [block for unit in units[start:end] for block in unit]
        text = _span(lines, blocks[0].start, blocks[-1].end)
        if len(text) > max_chars and not any(block.atomic for block in blocks):
            chunks.extend(_split_long(text, blocks, path, max_chars))
        else:
            chunks.append(_chunk(text, blocks, path, oversize=len(text) > max_chars))
    return chunks


def _units(section: list[Block]) -> list[list[Block]]:
    """The section's blocks with each heading joined to the block that follows it."""
    units: list[list[Block]] = []
    waiting: list[Block] = []
    for block in section:
        if block.kind == "heading":
            waiting.append(block)
        else:
            units.append([*waiting, block])
            waiting = []
    if waiting:
        units.append(waiting)
    return units


def _span(lines: list[str], start: int, end: int) -> str:
    """Source lines [start, end) as text."""
    return "\n".join(lines[start:end])


def _chunk(text: str, blocks: list[Block], path, oversize: bool) -> BlockChunk:
    """A chunk of whole blocks."""
    languages = [block.language for block in blocks if block.language]
    return BlockChunk(text, path, [block.kind for block in blocks], languages, oversize)


def _split_long(text: str, blocks: list[Block], path, max_chars: int) -> list[BlockChunk]:
    """A paragraph or list item longer than the limit, split at sentence ends; its headings lead the first piece."""
    body_line = next(block.start for block in blocks if block.kind != "heading") - blocks[0].start
    prefix = "".join(line + "\n" for line in text.split("\n")[:body_line])
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=max(max_chars - len(prefix), max_chars // 2),
        chunk_overlap=0,
        separators=BILINGUAL_SEPARATORS,
        keep_separator="end",
    )
    pieces = splitter.split_text(text[len(prefix) :])
    pieces[0] = prefix + pieces[0]
    kinds = [block.kind for block in blocks]
    return [BlockChunk(piece, path, kinds) for piece in pieces]
