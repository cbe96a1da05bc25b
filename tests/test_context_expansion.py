"""Context expansion: neighbour budgets, overlap-free joins, non-overlapping blocks, the whole pipeline."""

import pytest
from fakes import ReverseReranker
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from lessons.retrieval.context_expansion import (
    ChunkNeighbours,
    ContextExpansionRetriever,
    expand_hits,
    join_chunks,
    neighbour_budget,
)


def chunk(source, index, text=None):
    text = text or f"{source}-{index}."
    return Document(
        page_content=text, metadata={"source": source, "chunk_index": index, "chunk_id": f"{source}:{index}"}
    )


DOC_A = [chunk("a", i) for i in range(12)]
DOC_B = [chunk("b", i) for i in range(3)]
NEIGHBOURS = ChunkNeighbours(DOC_A + DOC_B)


def indexes(block):
    return [int(i) for i in block.metadata["chunk_indexes"].split(",")]


def test_budget_falls_from_ten_neighbours_at_rank_one_to_one_at_rank_ten_and_below():
    assert [neighbour_budget(rank) for rank in (1, 2, 5, 10, 11, 30)] == [10, 9, 6, 1, 1, 1]


def test_join_drops_the_overlap_a_chunk_repeats_from_its_predecessor():
    first = "Hybrid search runs BM25 and vectors. The two are complementary."
    second = "The two are complementary. Each finds what the other misses."
    assert (
        join_chunks([first, second])
        == "Hybrid search runs BM25 and vectors. The two are complementary. Each finds what the other misses."
    )


def test_join_keeps_chunks_without_overlap_on_separate_lines():
    assert join_chunks(["First part.", "Second part."]) == "First part.\nSecond part."


def test_neighbours_alternate_before_and_after_nearest_first():
    assert NEIGHBOURS.around(DOC_A[5], budget=3, max_chars=10_000, taken=set()) == [3, 4, 5, 6]
    assert NEIGHBOURS.around(DOC_A[5], budget=1, max_chars=10_000, taken=set()) == [4, 5]


def test_neighbours_stop_at_document_ends_and_continue_on_the_other_side():
    assert NEIGHBOURS.around(DOC_A[0], budget=3, max_chars=10_000, taken=set()) == [0, 1, 2, 3]
    assert NEIGHBOURS.around(DOC_B[1], budget=10, max_chars=10_000, taken=set()) == [0, 1, 2]


def test_neighbours_respect_the_character_cap_and_chunks_already_taken():
    size = len(DOC_A[5].page_content)
    assert NEIGHBOURS.around(DOC_A[5], budget=10, max_chars=3 * size, taken=set()) == [4, 5, 6]
    assert NEIGHBOURS.around(DOC_A[5], budget=4, max_chars=10_000, taken={("a", 4)}) == [5, 6, 7, 8, 9]


def test_blocks_follow_rank_order_never_share_chunks_and_skip_hits_already_covered():
    hits = [DOC_A[5], DOC_A[6], DOC_B[0], DOC_A[9]]
    blocks = expand_hits(hits, NEIGHBOURS, max_chars=10_000)
    assert [b.metadata["hit_rank"] for b in blocks] == [1, 3]  # a-6 and a-9 are inside the first block
    assert indexes(blocks[0]) == list(range(11)) and indexes(blocks[1]) == [0, 1, 2]
    all_chunks = [(b.metadata["source"], i) for b in blocks for i in indexes(b)]
    assert len(all_chunks) == len(set(all_chunks))
    assert blocks[0].page_content.startswith("a-0.") and "a-10." in blocks[0].page_content


class Fixed(BaseRetriever):
    documents: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return list(self.documents)


def test_pipeline_reranks_hits_then_expands_then_reranks_blocks():
    reranker = ReverseReranker()
    retriever = ContextExpansionRetriever(
        first_stage=Fixed(documents=[DOC_A[1], DOC_B[2]]),
        neighbours=NEIGHBOURS,
        reranker=reranker,
        block_reranker=reranker,
        max_neighbours=2,
        max_block_chars=10_000,
    )
    blocks = retriever.invoke("question")
    assert [d.page_content for d in reranker.seen[0][1]] == ["a-1.", "b-2."]
    assert [b.metadata["source"] for b in blocks] == ["a", "b"]  # b-2 ranked first, then reversed again
    assert indexes(blocks[1]) == [0, 1, 2]  # rank 1 (b-2): two neighbours, both before it
    assert indexes(blocks[0]) == [0, 1]  # rank 2 (a-1): one neighbour, the one before


def test_pipeline_without_rerankers_expands_the_first_stage_order():
    retriever = ContextExpansionRetriever(first_stage=Fixed(documents=DOC_A[:1]), neighbours=NEIGHBOURS, hits=1)
    assert [indexes(b) for b in retriever.invoke("q")] == [list(range(11))]


# --- a character budget over all the blocks (benchmarks/bench_expansion_budget.py's "expanded within budget") ---


def sized(source, index, chars=100):
    label = f"{source}-{index} "
    return chunk(source, index, label + "x" * (chars - len(label)))


SIZED = [sized("a.md", i) for i in range(6)] + [sized("b.md", i) for i in range(3)]
SIZED_NEIGHBOURS = ChunkNeighbours(SIZED)


def test_with_a_budget_the_blocks_fit_it_and_follow_the_hits_order():
    hits = [SIZED[2], SIZED[7], SIZED[5]]  # a.md-2, b.md-1, a.md-5
    blocks = expand_hits(hits, SIZED_NEIGHBOURS, budget=350)
    assert sum(len(b.page_content) for b in blocks) <= 350
    assert [b.metadata["hit_rank"] for b in blocks] == [1, 2][: len(blocks)]
    assert indexes(blocks[0]) == [1, 2, 3]  # the best hit widened first, nearest neighbours first


def test_with_a_budget_a_hit_inside_a_block_adds_nothing_and_a_hit_too_long_for_what_is_left_is_skipped():
    long_hit = sized("b.md", 9, chars=400)
    neighbours = ChunkNeighbours([*SIZED, long_hit])
    blocks = expand_hits([SIZED[6], SIZED[7], long_hit, SIZED[5]], neighbours, budget=450)
    assert [b.metadata["source"] for b in blocks] == ["b.md", "a.md"]
    assert [b.metadata["hit_rank"] for b in blocks] == [1, 4]
    assert indexes(blocks[0]) == [0, 1, 2] and indexes(blocks[1]) == [5]
    assert sum(len(b.page_content) for b in blocks) <= 450


def test_with_a_budget_the_line_break_joining_two_chunks_counts_against_it():
    # two 100-character chunks without overlap join into 201 characters: with 200 to spend the neighbour is dropped
    blocks = expand_hits([SIZED[0], SIZED[6]], SIZED_NEIGHBOURS, budget=200)
    assert [b.metadata["neighbours"] for b in blocks] == [0, 0]
    assert sum(len(b.page_content) for b in blocks) == 200


def test_without_a_budget_nothing_is_cut_and_a_negative_budget_is_refused():
    hits = [SIZED[2], SIZED[7]]
    assert expand_hits(hits, SIZED_NEIGHBOURS) == expand_hits(hits, SIZED_NEIGHBOURS, budget=None)
    assert sum(len(b.page_content) for b in expand_hits(hits, SIZED_NEIGHBOURS)) > 350
    assert expand_hits(hits, SIZED_NEIGHBOURS, budget=0) == []
    with pytest.raises(ValueError, match="budget must be 0 or more"):
        expand_hits(hits, SIZED_NEIGHBOURS, budget=-1)
