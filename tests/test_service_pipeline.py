"""The service's retrieve(): hybrid candidates, then the course's reranker (the packaged cross-encoder for English,
the fused order for Chinese), or the hybrid order alone when the setting turns the reranker off; and what the service
derives once per snapshot of the index (the documents' subject, the answer cache)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from lessons.retrieval import bm25_retriever
from service.pipeline import (
    CANDIDATES,
    RERANK_CANDIDATES,
    Snapshot,
    answer_cache,
    retrieve,
    service_reranker,
    subject_names,
)

ENGLISH = "On which port does Atlas Server expose its APIs by default?"
CHINESE = "杭州办公室的员工每年有多少天年假？"
ANSWER = "Atlas Server exposes the REST and gRPC APIs on port 7420 by default."


def chunk(number: int, text: str) -> Document:
    return Document(page_content=text, metadata={"chunk_id": f"c{number}", "source": "doc.md", "document_id": "d"})


# The dense stage puts the answer last; fillers that share the question's words come first, so the
# fused order ranks the answer low and only a reranker that reads question and passage together lifts it.
FILLERS = [chunk(n, f"Atlas Server default settings, part {n}: the port of the APIs page lists defaults for by which "
                    "Atlas expose Server.") for n in range(1, 25)]  # fmt: skip
CHUNKS = [*FILLERS, chunk(0, ANSWER),
          chunk(99, "杭州办公室的员工每年有 20 天年假，里斯本办公室有 25 天。")]  # fmt: skip


class FixedOrder(BaseRetriever):
    """A dense stage stand-in: the chunks in a fixed order, the first `k`."""

    chunks: list[Document]
    k: int = 10

    def _get_relevant_documents(self, query, *, run_manager):
        return self.chunks[: self.k]


class FakeIndex:
    """What retrieve() needs from service.index.LiveIndex, and how many candidates it asked for."""

    def __init__(self, chunks):
        self.chunks, self.sizes = chunks, []

    def keyword_index(self, generations, k):
        self.sizes.append(k)
        return bm25_retriever(self.chunks, k)

    def dense(self, generations, k):
        return FixedOrder(chunks=self.chunks, k=k)


SNAPSHOT = Snapshot({"d": 1})


def test_without_a_reranker_retrieve_is_the_hybrid_order():
    index = FakeIndex(CHUNKS)
    hybrid = retrieve(index, SNAPSHOT, ENGLISH, k=3)
    assert index.sizes == [CANDIDATES] and len(hybrid) == 3
    assert ANSWER not in [d.page_content for d in hybrid]  # the fixture is built so: the first stage misses it


def test_the_course_reranker_reads_the_hybrid_top_20_and_lifts_the_english_answer():
    index = FakeIndex(CHUNKS)
    reranker = service_reranker("default")
    ranked = retrieve(index, SNAPSHOT, ENGLISH, k=3, reranker=reranker)
    assert set(index.sizes) == {RERANK_CANDIDATES, CANDIDATES}  # the reranker's candidates and plain hybrid's order
    assert ANSWER in [d.page_content for d in ranked]  # the hybrid top 3 misses it (test above)
    scores = [d.metadata["score"] for d in ranked]  # the cross-encoder's rank fused with the first stage's
    assert scores == sorted(scores, reverse=True)
    relevance = {d.page_content: d.metadata["relevance_score"] for d in ranked}  # the model's own probabilities
    assert relevance[ANSWER] == max(relevance.values()) and all(0.0 < p <= 1.0 for p in relevance.values())
    # a larger k than the reranker's candidates still returns k chunks
    assert len(retrieve(FakeIndex(CHUNKS), SNAPSHOT, ENGLISH, k=25, reranker=reranker)) == 25


def test_a_chinese_question_keeps_plain_hybrid_order():
    reranker = service_reranker("default")
    hybrid = retrieve(FakeIndex(CHUNKS), SNAPSHOT, CHINESE, k=5)  # each first stage's top CANDIDATES, fused
    routed = retrieve(FakeIndex(CHUNKS), SNAPSHOT, CHINESE, k=5, reranker=reranker)
    assert [d.metadata["chunk_id"] for d in routed] == [d.metadata["chunk_id"] for d in hybrid]


def test_an_empty_snapshot_has_no_results():
    assert retrieve(FakeIndex(CHUNKS), Snapshot({}), ENGLISH, reranker=service_reranker("default")) == []


def test_the_setting_turns_the_reranker_off_and_refuses_other_names(fresh_settings, monkeypatch):
    from lessons.core.settings import SettingsError
    from service.settings import load_service_settings

    assert service_reranker("none") is None
    with pytest.raises(ValueError, match="'default'"):
        service_reranker("colbert")
    assert load_service_settings().reranker == "default"
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_RERANKER", "none")
    settings = load_service_settings()
    assert settings.reranker == "none" and settings.describe()["reranker"] == "none"
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_RERANKER", "cross-encoder")
    with pytest.raises(SettingsError, match="AGENTIC_RAG_SERVICE_RERANKER"):
        load_service_settings()


class ChunkReadingIndex:
    """What the per-snapshot memo needs from service.index.LiveIndex: each document's chunks by generation, and how
    many times they were read."""

    def __init__(self, documents: dict[str, str]):
        self.documents, self.reads, self.embeddings = documents, 0, object()

    def chunks(self, generations):
        self.reads += 1
        return [Document(self.documents[d], metadata={"source": f"{d}.md", "chunk_id": f"{d}:{j}:0"})
                for d, j in generations.items()]  # fmt: skip


THREE_DOCUMENTS = {d: f"Tidewell {d} rules for Atlas." for d in ("leave", "pricing", "security")}


def test_the_subject_and_the_answer_cache_of_a_snapshot_read_its_chunks_once(tmp_path):
    index, snapshot = ChunkReadingIndex(THREE_DOCUMENTS), Snapshot({d: 1 for d in THREE_DOCUMENTS})
    cache = answer_cache(index, snapshot, tmp_path / "answers.sqlite")
    assert subject_names(index, snapshot) == {"tidewell", "atlas"}
    assert answer_cache(index, snapshot, tmp_path / "answers.sqlite") is cache
    assert index.reads == 1
    assert answer_cache(index, Snapshot({}), tmp_path / "answers.sqlite") is None
    assert subject_names(index, Snapshot({})) == frozenset()


def test_another_snapshot_or_another_index_is_never_served_the_last_ones_facts(tmp_path):
    index, snapshot = ChunkReadingIndex(THREE_DOCUMENTS), Snapshot({d: 1 for d in THREE_DOCUMENTS})
    path = tmp_path / "answers.sqlite"
    first = answer_cache(index, snapshot, path)
    subject_names(index, snapshot)
    replaced = Snapshot({**snapshot.generations, "leave": 2})
    index.documents["leave"] = "Tidewell leave rules for Atlas and Orca."
    assert answer_cache(index, replaced, path).kb_version != first.kb_version
    assert subject_names(index, replaced) == {"tidewell", "atlas", "orca"} and index.reads == 2
    other = ChunkReadingIndex({d: f"Lisbon {d} notes." for d in THREE_DOCUMENTS})  # same generations, other documents
    assert subject_names(other, snapshot) == {"lisbon"}


def test_the_service_port_must_be_a_port(fresh_settings, monkeypatch):
    from lessons.core.settings import SettingsError
    from service.settings import load_service_settings

    monkeypatch.setenv("AGENTIC_RAG_SERVICE_PORT", "65535")
    assert load_service_settings().port == 65535
    for bad in ("70000", "0"):
        monkeypatch.setenv("AGENTIC_RAG_SERVICE_PORT", bad)
        with pytest.raises(SettingsError, match=rf"AGENTIC_RAG_SERVICE_PORT='{bad}' must be from 1 to 65535"):
            load_service_settings()
