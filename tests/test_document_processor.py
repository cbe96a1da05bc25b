"""The document processor: files → header chunks → hybrid retriever, with bad files skipped by name."""

import pytest
from fakes import ReverseReranker
from langchain_core.embeddings import DeterministicFakeEmbedding

from lessons.core.vectorstore import chroma_client, open_store
from lessons.ingest.files import ingest
from lessons.retrieval.document_processor import NoDocumentsError, chunk_files, hybrid_over, process_documents


def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    return folder


def write(folder, name, text):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_markdown_is_chunked_at_headers_with_ids(tmp_path, fresh_settings):
    write(
        docs(tmp_path),
        "guide.md",
        "# Guide\n\n## Ports\n\nThe gateway listens on port 7420.\n\n## Leave\n\nStaff get 25 days.",
    )
    chunks = chunk_files(ingest(tmp_path / "docs", progress=False).documents)
    assert len(chunks) == 2 and chunks[0].metadata["section"] and all(c.metadata["chunk_id"] for c in chunks)
    assert "7420" in chunks[0].page_content and "25 days" in chunks[1].page_content


def test_the_hybrid_retriever_finds_a_keyword_match(tmp_path, fresh_settings):
    write(
        docs(tmp_path),
        "guide.md",
        "# Guide\n\n## Ports\n\nThe gateway listens on port 7420.\n\n## Leave\n\n"
        "Staff get 25 days.\n\n## Travel\n\nBook trains.",
    )
    chunks = chunk_files(ingest(tmp_path / "docs", progress=False).documents)
    store = open_store(
        "test-nb05-hybrid", DeterministicFakeEmbedding(size=16), client=chroma_client(tmp_path / "chroma")
    )
    store.add_documents(chunks)
    top = hybrid_over(chunks, store, k=2).invoke("port 7420")
    # random embeddings: BM25's first place alone keeps the chunk in the fused top 2 of 3
    assert len(top) == 2 and any("7420" in doc.page_content for doc in top)


def test_bad_files_are_skipped_and_named(tmp_path, monkeypatch, fresh_settings):
    def fake_index(chunks, name):
        store = open_store(name, DeterministicFakeEmbedding(size=16), client=chroma_client(tmp_path / "chroma"))
        store.add_documents(list(chunks))
        return store

    monkeypatch.setattr("lessons.retrieval.document_processor.build_index", fake_index)
    write(docs(tmp_path), "guide.md", "# Guide\n\nThe gateway listens on port 7420.")
    write(docs(tmp_path), "copy.md", "# Guide\n\nThe gateway listens on port 7420.")
    write(docs(tmp_path), "slides.key", "x")
    processed = process_documents(tmp_path / "docs", index_name="test-nb05-skip")
    assert processed.files == ["copy.md"]
    reasons = {s.path.rsplit("/", 1)[-1]: s.reason for s in processed.skipped}
    assert "DuplicateContent" in reasons["guide.md"] and "UnsupportedFileType" in reasons["slides.key"]
    assert "Skipped slides.key" in processed.summary()


def test_no_readable_file_raises_a_clear_error(tmp_path, fresh_settings):
    write(docs(tmp_path), "empty.txt", "")
    with pytest.raises(NoDocumentsError, match="empty.txt.*upload a supported"):
        process_documents(tmp_path / "docs")


def _processed(tmp_path, monkeypatch, reranker, k=2):
    def fake_index(chunks, name):
        store = open_store(name, DeterministicFakeEmbedding(size=16), client=chroma_client(tmp_path / "chroma"))
        store.add_documents(list(chunks))
        return store

    monkeypatch.setattr("lessons.retrieval.document_processor.build_index", fake_index)
    sections = "".join(f"## Part {i}\n\nSection {i} says the value is {1000 + i}.\n\n" for i in range(6))
    write(docs(tmp_path), "guide.md", "# Guide\n\n" + sections)
    return process_documents(tmp_path / "docs", index_name="test-nb05-rerank", k=k, reranker=reranker)


def test_the_reranker_reads_the_whole_first_stage_and_hands_on_the_best_k(tmp_path, monkeypatch, fresh_settings):
    reverse = ReverseReranker()
    processed = _processed(tmp_path, monkeypatch, reverse)
    first = processed.first_stage("value 1003")
    top = processed.retrieve("value 1003")
    # six chunks, fewer than RERANK_CANDIDATES: the reranker reads all of them, not only the hybrid top k
    assert len(first) == 6 and reverse.seen[-1] == ("value 1003", first)
    assert [d.page_content for d in top] == [d.page_content for d in reversed(first)][:2]


def test_the_processed_documents_are_searched_by_the_one_reranked_hybrid_factory(tmp_path, monkeypatch, fresh_settings):
    import lessons.retrieval.document_processor as module

    built, factory = [], module.reranked_hybrid
    monkeypatch.setattr(
        module, "reranked_hybrid", lambda *args, **options: built.append(options) or factory(*args, **options)
    )
    reverse = ReverseReranker()
    processed = _processed(tmp_path, monkeypatch, reverse)
    assert built == [{"k": 2, "reranker": reverse}], "process_documents assembles no reranked hybrid of its own"
    assert processed.retrieve("value 1003") == list(processed.retriever.invoke("value 1003"))[: processed.k]


def test_without_a_reranker_the_hybrid_top_k_is_handed_on(tmp_path, monkeypatch, fresh_settings):
    processed = _processed(tmp_path, monkeypatch, None)
    top = processed.retrieve("value 1003")
    # BM25's only exact match is in the fused top 2. It may tie for first: "value" is in every chunk, and so is the
    # header "guide > Guide", whose words pull BM25Okapi's average idf (the floor of common words) below zero, so
    # the longest chunk, Part 0 (also first in the fake dense ranking), is BM25's second.
    assert len(top) == 2 and any("1003" in d.page_content for d in top)


def test_an_unknown_reranker_name_is_a_clear_error(tmp_path, fresh_settings):
    write(docs(tmp_path), "guide.md", "# Guide\n\nThe gateway listens on port 7420.")
    with pytest.raises(ValueError, match="reranker 'best': use one of default, cross_encoder, llm, none"):
        process_documents(tmp_path / "docs", reranker="best")
