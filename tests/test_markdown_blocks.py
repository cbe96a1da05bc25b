"""The Markdown-block chunker never cuts a table, a code block or a formula, and keeps the heading path."""

import pytest
from langchain_core.documents import Document

from lessons.chunking import header_recursive_chunker
from lessons.chunking.markdown_blocks import (
    atomic_blocks,
    chunk_markdown,
    markdown_block_chunker,
    pack_greedily,
    parse_blocks,
    repeat_table_headers,
)

TABLE_60 = "\n".join(
    ["| Key | Default | Description |", "|---|---|---|"]
    + [f"| key.{row} | {row * 7} | What setting number {row} controls, in a few words |" for row in range(60)]
)
GUIDE = f"""# Admin guide

Intro paragraph about the guide.

## Configuration

### Keys

Every key has a default:

{TABLE_60}

Text after the table.

## Install

```bash
# add the repository
curl -fsSL https://example.org/key | sudo gpg --dearmor
# this is a comment, not a heading
sudo apt-get install atlas
```

The end.
"""

FORMULA = """## Fusion

RRF gives each chunk a score:

$$
\\mathrm{RRF}(d) = \\sum_{r \\in R} \\frac{1}{k + \\mathrm{rank}_r(d)}

+ 0
$$

where k = 60."""

NESTED_LIST = """## Steps

- first item
  - nested a
  - nested b
    1. deep one
    2. deep two
- second item with some words
- third item with some more words"""

CHINESE = "## 分块\n\n" + "".join(f"第{i}句讲的是分块的一个细节，长度大约二十个字。" for i in range(1, 25))


def kinds(markdown):
    return [block.kind for block in parse_blocks(markdown)]


def test_blocks_are_headings_paragraphs_tables_code():
    assert kinds(GUIDE) == [
        "heading",
        "paragraph",
        "heading",
        "heading",
        "paragraph",
        "table",
        "paragraph",
        "heading",
        "code",
        "paragraph",
    ]
    code = next(block for block in parse_blocks(GUIDE) if block.kind == "code")
    assert code.language == "bash" and code.text.startswith("```bash") and code.text.endswith("```")


def test_hash_lines_inside_a_fence_are_code_not_headings():
    headings = [block.title for block in parse_blocks(GUIDE) if block.kind == "heading"]
    assert headings == ["Admin guide", "Configuration", "Keys", "Install"]
    install = [chunk for chunk in chunk_markdown(GUIDE, 200) if "apt-get" in chunk.text]
    assert len(install) == 1 and install[0].headings == ["Admin guide", "Install"]
    assert "# this is a comment, not a heading" in install[0].text


def test_a_60_row_table_stays_whole_and_says_it_is_oversize():
    chunks = chunk_markdown(GUIDE, max_chars=500)
    holding = [chunk for chunk in chunks if "| key.0 |" in chunk.text]
    assert len(holding) == 1
    table_chunk = holding[0]
    assert TABLE_60 in table_chunk.text
    assert table_chunk.oversize and len(table_chunk.text) > 500
    assert table_chunk.headings == ["Admin guide", "Configuration", "Keys"]
    assert table_chunk.metadata()["section_path"] == "Admin guide > Configuration > Keys"
    assert "table" in table_chunk.metadata()["block_kinds"].split(",")
    assert all(not chunk.oversize for chunk in chunks if chunk is not table_chunk)


def test_the_baseline_header_then_recursive_cuts_that_table():
    document = Document(page_content=GUIDE, metadata={"source": "guide.md"})
    chunks = header_recursive_chunker(500, 0)([document])
    assert not any(TABLE_60 in chunk.page_content for chunk in chunks)
    assert any(TABLE_60 in chunk.page_content for chunk in markdown_block_chunker(500)([document]))


def test_a_formula_with_a_blank_line_is_one_math_block():
    math = [block for block in parse_blocks(FORMULA) if block.kind == "math"]
    assert len(math) == 1
    assert math[0].text.startswith("$$") and math[0].text.endswith("$$") and "+ 0" in math[0].text
    for size in (40, 80, 400):
        chunks = chunk_markdown(FORMULA, size)
        assert sum(math[0].text in chunk.text for chunk in chunks) == 1, size


def test_a_single_line_formula_is_math_too():
    assert kinds("Before.\n\n$$ E = mc^2 $$\n\nAfter.") == ["paragraph", "math", "paragraph"]


def test_nested_lists_split_only_between_top_level_items():
    items = [block for block in parse_blocks(NESTED_LIST) if block.kind == "list_item"]
    assert len(items) == 3 and "deep two" in items[0].text
    chunks = chunk_markdown(NESTED_LIST, max_chars=90)
    assert len(chunks) > 1
    for item in items:
        assert sum(item.text in chunk.text for chunk in chunks) == 1


def test_chinese_paragraph_longer_than_the_limit_is_cut_at_sentence_ends():
    chunks = chunk_markdown(CHINESE, max_chars=120)
    assert len(chunks) > 3
    assert all(len(chunk.text) <= 120 for chunk in chunks)
    assert all(chunk.text.endswith("。") for chunk in chunks)
    assert all(chunk.headings == ["分块"] for chunk in chunks)
    assert "".join(chunk.text for chunk in chunks).replace("\n", "") == CHINESE.replace("\n", "")


def test_chunks_are_exact_slices_of_the_source_and_cover_every_block():
    chunks = chunk_markdown(GUIDE, 300)
    assert all(chunk.text in GUIDE for chunk in chunks)
    for block in parse_blocks(GUIDE):
        assert any(block.text in chunk.text for chunk in chunks), block.kind


def test_a_heading_is_never_a_chunk_of_its_own_when_content_follows():
    chunks = chunk_markdown(GUIDE, 300)
    assert not any(set(chunk.kinds) == {"heading"} for chunk in chunks)
    config = next(chunk for chunk in chunks if "## Configuration" in chunk.text)
    assert "### Keys" in config.text and "Every key has a default" in config.text


def test_heading_path_carries_over_to_the_next_page_of_the_same_source_only():
    pages = [
        Document(page_content="# Paper\n\n## Method\n\nFirst page text.", metadata={"source": "a.pdf", "page": 1}),
        Document(page_content="Second page, still in Method.", metadata={"source": "a.pdf", "page": 2}),
        Document(page_content="Another file starts here.", metadata={"source": "b.md", "page": None}),
    ]
    chunks = markdown_block_chunker(800)(pages)
    paths = [chunk.metadata["section_path"] for chunk in chunks]
    assert paths == ["Paper > Method", "Paper > Method", ""]
    assert chunks[1].metadata["page"] == 2


def test_deeper_heading_replaces_only_deeper_levels():
    text = "# A\n\n### C\n\nc text\n\n## B\n\nb text\n\n### D\n\nd text"
    assert [chunk.headings for chunk in chunk_markdown(text, 20)] == [["A", "C"], ["A", "B"], ["A", "B", "D"]]


def test_atomic_blocks_lists_tables_code_and_formulas():
    assert [block.kind for block in atomic_blocks(GUIDE + "\n\n" + FORMULA)] == ["table", "code", "math"]


def test_pack_greedily_packs_neighbours_and_never_cuts_an_item():
    assert pack_greedily([3, 3, 3], limit=8, gap=2) == [(0, 2), (2, 3)]
    assert pack_greedily([3, 20, 3], limit=8, gap=2) == [(0, 1), (1, 2), (2, 3)]
    assert pack_greedily([], limit=8) == []
    with pytest.raises(ValueError, match="limit must be positive"):
        pack_greedily([1], limit=0)


def test_a_bad_size_names_the_fix():
    with pytest.raises(ValueError, match="max_chars=800"):
        chunk_markdown("text", max_chars=0)


def test_an_unclosed_formula_does_not_swallow_a_later_code_block():
    text = "$$\nx = 1\n\n```bash\necho $$\n```\n\nEnd."
    assert kinds(text) == ["paragraph", "code", "paragraph"]


# --- table pieces repeat the header row ------------------------------------------------------------

TABLE_HEADER = "| id | name | price |"


def long_table(rows: int) -> str:
    body = "\n".join(f"| {i} | item {i} | {i * 3} EUR |" for i in range(rows))
    return f"# Prices\n\n{TABLE_HEADER}\n|---|---|---|\n{body}\n\nAfter the table."


def test_every_piece_cut_from_a_long_table_carries_its_header_row():
    from langchain_core.documents import Document

    from lessons.chunking.strategies import default_chunker

    chunks = default_chunker()([Document(long_table(5000), metadata={"source": "prices.md"})])
    table_pieces = [c.page_content for c in chunks if "EUR |" in c.page_content]
    assert len(table_pieces) > 100
    assert all(piece.startswith(f"{TABLE_HEADER}\n|---|---|---|\n") for piece in table_pieces)
    assert sum(piece.count(TABLE_HEADER) for piece in table_pieces) == len(table_pieces), "once per piece"
    rows = {line for piece in table_pieces for line in piece.split("\n") if "EUR |" in line}
    assert len(rows) == 5000, "no row lost"


def test_repeat_table_headers_leaves_pieces_outside_tables_and_a_closed_table_alone():
    pieces = ["| a | b |\n|---|---|\n| 1 | 2 |", "| 3 | 4 |", "text after\n\n| x |", "| 5 | 6 |", "plain"]
    assert repeat_table_headers(pieces) == [
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "| a | b |\n|---|---|\n| 3 | 4 |",
        "text after\n\n| x |",
        "| 5 | 6 |",
        "plain",
    ]
    assert repeat_table_headers(["| a | b |\n|---|---|", "| a | b |\n|---|---|\n| 1 | 2 |"])[1].count("| a | b |") == 1
