"""Chunks name their document and section path where retrievers search, not where prompts quote.

`lessons.chunking.base.number_chunks` puts the header in metadata, `lessons.core.vectorstore.index_documents`
embeds and `lessons.retrieval.retrievers.bm25_retriever` indexes `search_text` (header, then text), and
`tokenize_bilingual` keeps dotted versions whole. Every test here fails on the path before the fix.
"""

from __future__ import annotations

from fakes import KeywordEmbeddings
from langchain_core.documents import Document

from lessons.agents.three_agents import format_context
from lessons.chunking.base import number_chunks
from lessons.core.search_text import CONTEXT_HEADER, search_text
from lessons.core.vectorstore import chroma_client, index_documents, open_store
from lessons.evaluation.metrics import relevance_labels
from lessons.retrieval.chunk_context import without_context_header
from lessons.retrieval.retrievers import (
    bm25_retriever,
    dense_retriever,
    tokenize_bilingual,
    tokenize_words_bigrams,
)


def recording_embeddings():
    """Bag-of-words vectors over a tiny vocabulary; `documents` holds every text it embedded as a document."""
    return KeywordEmbeddings(("license", "httpx", "pydantic", "chromadb"), name="recording-words")


def license_chunks() -> list[Document]:
    """Three "## License" sections that only their document tells apart (the one the question wants comes last)."""
    return number_chunks([
        Document("## License\n\nApache 2.0 or MIT.", metadata={"source": "data/packages/pydantic.md",
                                                               "section_path": "Pydantic > License"}),
        Document("## License\n\nApache 2.0.", metadata={"source": "data/packages/chromadb.md",
                                                       "section_path": "Chroma > License"}),
        Document("## License\n\nBSD-3-Clause.", metadata={"source": "data/packages/httpx.md",
                                                         "section_path": "HTTPX > License"}),
    ])  # fmt: skip


def test_number_chunks_puts_the_header_in_metadata_and_leaves_the_text_and_its_id_alone():
    chunks = license_chunks()
    assert [c.metadata[CONTEXT_HEADER] for c in chunks] == [
        "pydantic > Pydantic > License",
        "chromadb > Chroma > License",
        "httpx > HTTPX > License",
    ]
    assert chunks[2].page_content == "## License\n\nBSD-3-Clause."
    assert search_text(chunks[2]) == "httpx > HTTPX > License\n\n## License\n\nBSD-3-Clause."
    # chunk_id hashes the text only: gold evidence_chunk_ids and the QA cache keep pointing at the same chunks.
    assert [c.metadata["chunk_id"] for c in chunks] == [c.metadata["chunk_id"] for c in without_context_header(chunks)]
    assert search_text(Document("plain", metadata={})) == "plain"


def test_the_header_reaches_the_embedder_but_not_the_store_text_nor_the_prompt(tmp_path):
    chunks, embeddings = license_chunks(), recording_embeddings()
    store = open_store("kb", embeddings, client=chroma_client(tmp_path))
    index_documents(store, chunks)
    assert sorted(embeddings.documents) == sorted(search_text(c) for c in chunks)
    assert sorted(store.get(include=["documents"])["documents"]) == sorted(c.page_content for c in chunks)

    [hit] = dense_retriever(store, 1).invoke("license of httpx?")
    assert (hit.page_content, hit.metadata["chunk_id"]) == (chunks[2].page_content, chunks[2].metadata["chunk_id"])
    prompt_context = format_context([hit])
    assert "BSD-3-Clause." in prompt_context and "HTTPX > License" not in prompt_context

    # The same chunks without their header: all three vectors are "license" alone, the question cannot choose.
    plain = open_store("kb-plain", embeddings, client=chroma_client(tmp_path))
    index_documents(plain, without_context_header(chunks))
    scores = [d.metadata["score"] for d in dense_retriever(plain, 3).invoke("license of httpx?")]
    assert max(scores) - min(scores) < 1e-6


def test_a_store_built_before_the_header_existed_is_embedded_again_not_reused(tmp_path):
    chunks, embeddings = license_chunks(), recording_embeddings()
    store = open_store("kb", embeddings, client=chroma_client(tmp_path))
    index_documents(store, without_context_header(chunks))  # what a cache folder from before context headers holds
    embeddings.documents.clear()
    stats = index_documents(store, chunks, prune=True)
    assert (stats.added, stats.already_indexed, stats.removed) == (3, 0, 3)
    assert sorted(embeddings.documents) == sorted(search_text(c) for c in chunks)
    assert store._collection.count() == 3


def test_bm25_searches_the_header_and_returns_the_chunk_as_it_is():
    chunks = license_chunks()
    [hit] = bm25_retriever(chunks, 1).invoke("What is the license of httpx?")
    assert hit.page_content == chunks[2].page_content and "score" in hit.metadata
    [old] = bm25_retriever(without_context_header(chunks), 1).invoke("What is the license of httpx?")
    assert old.metadata["source"].endswith("pydantic.md")  # a tie on "license", the first chunk wins


def test_version_numbers_are_one_token_so_bm25_tells_releases_apart():
    tokens = tokenize_bilingual("## v2.14.0 (2026-10-08): llava-v1.5-7b, Python 3.10+, see 1.10.X-fixes.")
    assert {"2.14.0", "1.5", "3.10"} <= set(tokens) and "1.10" not in tokens
    assert tokenize_words_bigrams("## v2.14.0") == ["v2", "14", "0"]
    assert tokenize_bilingual("## v2.14.0") == ["v2", "14", "0", "2.14.0"]
    assert "2.14.0" in tokenize_bilingual("Pydantic 2.14.0 放弃了什么？")
    releases = number_chunks([
        Document(f"Released {version}: drops Python 3.8.", metadata={"source": "notes.md"})
        for version in ("0.2.14", "14.0.2", "2.14.0")
    ])  # fmt: skip
    question = "What does 2.14.0 drop?"
    assert bm25_retriever(releases, 1).invoke(question)[0].page_content.startswith("Released 2.14.0")
    split = bm25_retriever(releases, 3, tokenizer=tokenize_words_bigrams).invoke(question)
    assert len({round(d.metadata["score"], 9) for d in split}) == 1  # "2", "14", "0" are in every release


def test_the_real_changelog_questions_bm25_now_finds():
    """Two packages gold questions about one Pydantic release: the course's BM25 ranks their evidence higher."""
    from lessons.ingest.corpus import corpus_folder, load_gold
    from lessons.retrieval.index import chunk_knowledge_base

    chunks = chunk_knowledge_base(folder=corpus_folder("packages"))
    gold = {q.id: q for q in load_gold(corpus="packages")}

    def rank(retriever, question) -> int:
        texts = [d.page_content for d in retriever.invoke(question.question)]
        return next((n for n, hit in enumerate(relevance_labels(texts, question.evidence), 1) if hit), 99)

    new = bm25_retriever(chunks, 20)
    old = bm25_retriever(without_context_header(chunks), 20, tokenizer=tokenize_words_bigrams)
    jiter, dropped_zh = gold["pkg-en-029"], gold["pkg-zh-015"]  # "Which jiter version does Pydantic 2.14.4 bump to"
    assert rank(new, jiter) == 1 < rank(old, jiter)
    assert rank(new, dropped_zh) <= 5 < rank(old, dropped_zh)
