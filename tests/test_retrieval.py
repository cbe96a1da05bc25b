"""First-stage retrievers: tokenizers, scored dense/BM25 results, reciprocal rank fusion, small-to-big."""

import random

import pytest
from fakes import KeywordEmbeddings
from fakes import memory_store as fake_store
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from lessons.retrieval import bm25_retriever, child_chunks, dense_retriever, hybrid_retriever, small_to_big_retriever
from lessons.retrieval.retrievers import (
    SCORE,
    reciprocal_rank_fusion,
    tokenize_bilingual,
    tokenize_jieba,
    tokenize_whitespace,
    with_score,
)


def chunk(text, source="a.md", index=0, **metadata):
    return Document(
        page_content=text,
        metadata={"source": source, "chunk_index": index, "chunk_id": f"{source}:{index}", **metadata},
    )


# Bag-of-words vectors over a tiny vocabulary: enough to make nearest neighbours predictable.
VOCABULARY = ("port", "leave", "backup", "price", "server", "days", "night", "euros")


def memory_store():
    return fake_store(KeywordEmbeddings(VOCABULARY))


class FixedRetriever(BaseRetriever):
    """Returns the same ranked list for every query."""

    documents: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return list(self.documents)


CHUNKS = [
    chunk("Atlas Server listens on port 7420 by default.", index=0),
    chunk("Employees get 27 days of annual leave.", "b.md", 0),
    chunk("Backups run every night at 02:00.", "b.md", 1),
    chunk("The Team plan price is 45 euros per user.", "c.md", 0),
    chunk("混合检索把关键词检索和向量检索的结果合并。", "zh.md", 0, language="zh"),
    chunk("员工每年有二十七天年假。", "zh.md", 1, language="zh"),
]


def test_bilingual_tokens_are_words_for_english_and_character_pairs_for_chinese():
    assert tokenize_bilingual("Atlas Server, port 7420!") == ["atlas", "server", "port", "7420"]
    assert tokenize_bilingual("混合检索") == ["混合", "合检", "检索"]
    assert tokenize_bilingual("用 RRF 合并") == ["用", "rrf", "合并"]


def test_whitespace_splitting_leaves_a_chinese_sentence_as_one_token():
    assert tokenize_whitespace("员工每年有二十七天年假。") == ["员工每年有二十七天年假。"]
    assert "员工" in tokenize_jieba("员工每年有二十七天年假。")
    assert "。" not in tokenize_jieba("员工每年有二十七天年假。")


def test_with_score_copies_and_leaves_the_original_alone():
    original = chunk("text")
    scored = with_score(original, 0.5)
    assert scored.metadata[SCORE] == 0.5 and SCORE not in original.metadata
    assert scored.page_content == original.page_content


def test_bm25_finds_a_chinese_chunk_only_with_a_tokenizer_that_splits_chinese():
    question = "员工有多少天年假？"
    assert bm25_retriever(CHUNKS, k=1).invoke(question)[0].page_content == CHUNKS[5].page_content
    whitespace = bm25_retriever(CHUNKS, k=6, tokenizer=tokenize_whitespace).invoke(question)
    assert all(d.metadata[SCORE] == 0 for d in whitespace)


def test_bm25_results_carry_descending_scores():
    results = bm25_retriever(CHUNKS, k=3).invoke("backup every night")
    scores = [d.metadata[SCORE] for d in results]
    assert results[0].page_content == CHUNKS[2].page_content
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_dense_results_are_scored_copies_best_first():
    store = memory_store()
    store.add_documents(CHUNKS[:4])
    results = dense_retriever(store, k=2).invoke("Which port does the server use?")
    assert len(results) == 2 and results[0].page_content == CHUNKS[0].page_content
    assert results[0].metadata[SCORE] >= results[1].metadata[SCORE]


def _random_lists(rng, n_lists=3, pool=8, length=5):
    docs = [chunk(f"doc {i}", index=i) for i in range(pool)]
    return [rng.sample(docs, length) for _ in range(n_lists)]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("id_key", [None, "chunk_id"])
def test_rrf_orders_exactly_like_langchains_ensemble_retriever(seed, id_key):
    rng = random.Random(seed)
    lists = _random_lists(rng)
    weights = [rng.random() + 0.1 for _ in lists]
    ensemble = EnsembleRetriever(
        retrievers=[FixedRetriever(documents=[]) for _ in lists], weights=weights, id_key=id_key
    )
    expected = ensemble.weighted_reciprocal_rank(lists)
    fused = reciprocal_rank_fusion(lists, weights, id_key=id_key)
    assert [d.page_content for d in fused] == [d.page_content for d in expected]


def test_rrf_scores_add_weight_over_c_plus_rank():
    a, b, c = chunk("a", index=0), chunk("b", index=1), chunk("c", index=2)
    fused = reciprocal_rank_fusion([[a, b], [b, c]], weights=[0.25, 0.75], c=60)
    scores = {d.page_content: d.metadata[SCORE] for d in fused}
    assert scores["b"] == pytest.approx(0.25 / 62 + 0.75 / 61)
    assert scores["a"] == pytest.approx(0.25 / 61)
    assert [d.page_content for d in fused] == ["b", "c", "a"]


def test_rrf_needs_one_weight_per_list():
    with pytest.raises(ValueError, match="one weight per list"):
        reciprocal_rank_fusion([[chunk("a")], [chunk("b")]], weights=[1.0])


def test_hybrid_returns_documents_with_fused_scores_and_no_duplicates():
    dense = FixedRetriever(documents=[CHUNKS[0], CHUNKS[1], CHUNKS[2]])
    keyword = FixedRetriever(documents=[CHUNKS[2], CHUNKS[3]])
    results = hybrid_retriever(dense, keyword).invoke("anything")
    assert all(isinstance(d, Document) for d in results)
    assert results[0].page_content == CHUNKS[2].page_content  # ranked by both
    assert len({d.metadata["chunk_id"] for d in results}) == len(results) == 4


def test_children_point_to_their_parent_and_cover_its_text():
    parent = chunk("First sentence here. " * 12, index=3)
    children = child_chunks([parent], child_size=60)
    assert len(children) > 1 and all(len(c.page_content) <= 60 for c in children)
    assert {c.metadata["parent_id"] for c in children} == {parent.metadata["chunk_id"]}
    assert "".join(c.page_content for c in children).replace(" ", "") == parent.page_content.replace(" ", "")


def test_small_to_big_returns_whole_parent_chunks():
    long_chunk = chunk("Backups run every night at 02:00. " + "Unrelated filler text about nothing. " * 6, index=9)
    retriever = small_to_big_retriever([*CHUNKS[:4], long_chunk], children=3, child_size=60, store=memory_store())
    results = retriever.invoke("backup night")
    assert results[0].page_content in {long_chunk.page_content, CHUNKS[2].page_content}
    assert all(d.page_content in {c.page_content for c in [*CHUNKS[:4], long_chunk]} for d in results)


def test_hybrid_can_keep_only_the_best_k():
    dense = FixedRetriever(documents=[CHUNKS[0], CHUNKS[1], CHUNKS[2]])
    keyword = FixedRetriever(documents=[CHUNKS[2], CHUNKS[3]])
    results = hybrid_retriever(dense, keyword, k=2).invoke("anything")
    assert [d.page_content for d in results] == [CHUNKS[2].page_content, CHUNKS[0].page_content]


def test_full_width_characters_are_the_same_bm25_tokens_as_ascii():
    """The keyword side folds ２０２６, ＡＰＩ and Ｅ５０２０ with the normalisation quote matching uses (NFKC)."""
    from lessons.retrieval.retrievers import tokenize_bilingual

    assert tokenize_bilingual("错误码 Ｅ５０２０ 于 ２０２６ 年 ＡＰＩ ｖ２．１４．０") == tokenize_bilingual(
        "错误码 E5020 于 2026 年 API v2.14.0"
    )


def test_dense_search_with_a_metadata_filter_returns_only_chunks_that_meet_it():
    store = memory_store()
    store.add_documents(CHUNKS[:4])
    unfiltered = dense_retriever(store, k=2).invoke("Which port does the server use?")
    wanted = next(c.metadata["source"] for c in CHUNKS[:4] if c.metadata["source"] != unfiltered[0].metadata["source"])
    filtered = dense_retriever(store, k=2, where={"source": {"$in": [wanted]}}).invoke(
        "Which port does the server use?"
    )
    assert filtered and {d.metadata["source"] for d in filtered} == {wanted}
