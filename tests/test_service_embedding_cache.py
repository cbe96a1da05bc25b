"""The service embeds through the course's vector cache: what the course's index embedded, the service does not."""

from __future__ import annotations

from fakes import KeywordEmbeddings
from langchain_core.documents import Document


def test_the_service_reuses_the_passage_vectors_the_course_index_stored(fresh_settings, tmp_path, monkeypatch):
    from lessons.chunking import cached_embeddings
    from lessons.core import embeddings
    from lessons.core.search_text import search_text
    from service.core import Service
    from service.settings import load_service_settings

    monkeypatch.setenv("AGENTIC_RAG_EMBEDDER", "use")
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_DATA_DIR", str(tmp_path / "service"))
    fresh_settings()
    model = KeywordEmbeddings(("port", "backup"), name="keyword-model")
    monkeypatch.setitem(embeddings._instances, "use", model)  # get_embeddings() gives the counting fake
    chunks = [
        Document(page_content="Atlas listens on port 7420.", metadata={"chunk_id": "a", "context_header": "guide.md"}),
        Document(page_content="Backups run at 02:00.", metadata={"chunk_id": "b", "context_header": "guide.md"}),
    ]
    cached_embeddings().embed_documents([search_text(c) for c in chunks])  # the course's index embedded these
    assert len(model.documents) == 2

    service = Service(load_service_settings())
    assert service.index.upsert("doc-1", 1, chunks) == 2
    assert len(model.documents) == 2  # read from the cache folder, not embedded again
    new = Document(page_content="A port nobody embedded.", metadata={"chunk_id": "c", "context_header": "note.md"})
    service.index.upsert("doc-2", 2, [new])
    assert model.documents[2:] == [search_text(new)]  # a new text is embedded, once
    assert service.index.embeddings.name == "keyword-model"  # the model's name still names its vectors
