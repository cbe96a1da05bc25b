"""The budgeted context expansion of benchmarks/bench_expansion_budget.py: blocks never show more characters than the
budget, follow the hits' order, and skip what no longer fits; the section gate reads source and section."""

from __future__ import annotations

from langchain_core.documents import Document

from benchmarks.bench_expansion_budget import one_section, within_budget
from lessons.retrieval.context_expansion import ChunkNeighbours


def chunk(source: str, index: int, chars: int = 100, section: str = "A") -> Document:
    text = f"{source}-{index} " + "x" * (chars - len(f"{source}-{index} "))
    return Document(page_content=text, metadata={"source": source, "chunk_index": index, "section_path": section})


DOC = [chunk("a.md", i) for i in range(6)] + [chunk("b.md", i) for i in range(3)]
NEIGHBOURS = ChunkNeighbours(DOC)


def by(source: str, index: int) -> Document:
    return next(c for c in DOC if c.metadata["source"] == source and c.metadata["chunk_index"] == index)


def test_blocks_fit_the_budget_and_follow_the_hits_order():
    hits = [by("a.md", 2), by("b.md", 1), by("a.md", 5)]
    blocks = within_budget(hits, NEIGHBOURS, budget=350)
    assert sum(len(b.page_content) for b in blocks) <= 350
    assert [b.metadata["hit_rank"] for b in blocks] == [1, 2][: len(blocks)]
    assert blocks[0].metadata["chunk_indexes"] == "1,2,3"  # the best hit widened first, nearest neighbours first


def test_a_hit_inside_a_block_adds_nothing_and_a_hit_too_long_for_what_is_left_is_skipped():
    long_hit = chunk("b.md", 9, chars=400)
    neighbours = ChunkNeighbours([*DOC, long_hit])
    blocks = within_budget([by("b.md", 0), by("b.md", 1), long_hit, by("a.md", 5)], neighbours, budget=450)
    assert [b.metadata["source"] for b in blocks] == ["b.md", "a.md"]
    assert [b.metadata["hit_rank"] for b in blocks] == [1, 4]
    assert blocks[0].metadata["chunk_indexes"] == "0,1,2" and blocks[1].metadata["chunk_indexes"] == "5"
    assert sum(len(b.page_content) for b in blocks) <= 450


def test_the_line_break_joining_two_chunks_counts_against_the_budget():
    # two 100-character chunks without overlap join into 201 characters: with 200 to spend the neighbour is dropped
    blocks = within_budget([by("a.md", 0), by("b.md", 0)], NEIGHBOURS, budget=200)
    assert [b.metadata["neighbours"] for b in blocks] == [0, 0]
    assert sum(len(b.page_content) for b in blocks) == 200


def test_the_gate_needs_the_first_two_hits_in_one_section_of_one_document():
    assert one_section([by("a.md", 0), by("a.md", 4)])
    assert not one_section([by("a.md", 0), by("b.md", 0)])
    assert not one_section([by("a.md", 0), chunk("a.md", 7, section="B")])
    assert not one_section([by("a.md", 0)])
