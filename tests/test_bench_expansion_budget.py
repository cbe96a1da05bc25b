"""benchmarks/bench_expansion_budget.py's section gate reads source and section. Its budgeted expansion is
`expand_hits(..., budget=)`, tested in tests/test_context_expansion.py."""

from __future__ import annotations

from langchain_core.documents import Document

from benchmarks.bench_expansion_budget import one_section


def chunk(source: str, index: int, chars: int = 100, section: str = "A") -> Document:
    text = f"{source}-{index} " + "x" * (chars - len(f"{source}-{index} "))
    return Document(page_content=text, metadata={"source": source, "chunk_index": index, "section_path": section})


DOC = [chunk("a.md", i) for i in range(6)] + [chunk("b.md", i) for i in range(3)]


def by(source: str, index: int) -> Document:
    return next(c for c in DOC if c.metadata["source"] == source and c.metadata["chunk_index"] == index)


def test_the_gate_needs_the_first_two_hits_in_one_section_of_one_document():
    assert one_section([by("a.md", 0), by("a.md", 4)])
    assert not one_section([by("a.md", 0), by("b.md", 0)])
    assert not one_section([by("a.md", 0), chunk("a.md", 7, section="B")])
    assert not one_section([by("a.md", 0)])
