"""Retrieval metrics (hand-computed cases) and the shared chunk/index pipeline."""

import math

import pytest
from langchain_core.documents import Document

from lessons.chunking.base import number_chunks
from lessons.chunking.strategies import default_chunker
from lessons.evaluation.metrics import (
    evidence_recall_at_k,
    hit_at_k,
    mrr_at_k,
    ndcg_at_k,
    quotes_found,
    relevance_labels,
)
from lessons.retrieval.index import chunk_knowledge_base


def test_relevance_is_judged_by_evidence_quotes_after_normalisation():
    texts = ["The Team tier costs **€45** per user.", "Unrelated.", "Port\n7420 by default"]
    assert relevance_labels(texts, ["Team tier costs €45", "Port 7420"]) == [True, False, True]
    assert quotes_found(texts, ["Port 7420", "missing quote"]) == {0}


@pytest.mark.parametrize(
    ("labels", "k", "hit", "mrr"),
    [
        ([False, True, False], 5, 1.0, 0.5),
        ([False] * 6 + [True], 5, 0.0, 0.0),
        ([True], 1, 1.0, 1.0),
        ([], 5, 0.0, 0.0),
    ],
)
def test_hit_and_mrr(labels, k, hit, mrr):
    assert hit_at_k(labels, k) == hit and mrr_at_k(labels, k) == mrr


def test_ndcg_rewards_early_hits_and_uses_the_number_of_relevant_chunks():
    assert ndcg_at_k([True, False], 10) == 1.0
    assert ndcg_at_k([False, True], 10) == pytest.approx((1 / math.log2(3)) / 1.0)
    # Two relevant chunks exist in the index but only one was retrieved, at rank 1.
    assert ndcg_at_k([True, False], 10, n_relevant=2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k([False, False], 10) == 0.0


def test_evidence_recall_counts_quotes_across_the_top_k():
    texts = ["alpha beta", "gamma", "delta"]
    assert evidence_recall_at_k(texts, ["alpha", "delta"], 2) == 0.5
    assert evidence_recall_at_k(texts, ["alpha", "delta"], 3) == 1.0
    assert evidence_recall_at_k(texts, [], 3) == 0.0


def test_numbering_dedupes_positions_per_source_and_drops_none():
    chunks = [
        Document("a", metadata={"source": "x", "page": None}),
        Document("b", metadata={"source": "x"}),
        Document("a", metadata={"source": "y"}),
        Document("c", metadata={"source": "y"}),
    ]
    numbered = number_chunks(chunks)
    assert [(d.page_content, d.metadata["source"], d.metadata["chunk_index"]) for d in numbered] == [
        ("a", "x", 0),
        ("b", "x", 1),
        ("c", "y", 0),
    ]
    assert "page" not in numbered[0].metadata and len(numbered[0].metadata["chunk_id"]) == 16


def test_the_default_chunker_keeps_chinese_sentences_whole():
    text = "。".join(f"第{i}句话讲的是潮汐 Atlas 的混合检索与重排序功能" for i in range(40)) + "。"
    chunks = default_chunker(chunk_size=120, chunk_overlap=0)([Document(text)])
    assert len(chunks) > 5
    assert all(chunk.page_content.endswith("。") for chunk in chunks)


def test_every_knowledge_base_chunk_has_the_metadata_later_notebooks_need():
    chunks = chunk_knowledge_base()
    assert len(chunks) > 100
    for chunk in chunks:
        assert {"source", "format", "language", "chunk_id", "chunk_index"} <= set(chunk.metadata)
    assert len({c.metadata["chunk_id"] for c in chunks}) == len(chunks)
