"""The packaged embedders (real models) and the persistent Chroma store with content-hash ids."""

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from lessons.core.embeddings import E5Embeddings, USEEmbeddings, get_embeddings, unit_vectors
from lessons.core.vectorstore import chroma_client, content_id, index_documents, open_store

DOCS = [
    "Employees in Rotterdam get 27 days of annual leave.",
    "鹿特丹的员工每年有 27 天年假。",
    "Atlas Server listens on port 7420 by default.",
    "Atlas Server 默认监听 7420 端口。",
]


def test_unit_vectors_scale_a_vector_or_each_row_to_length_one_and_keep_a_float_dtype():
    matrix = unit_vectors(np.asarray([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32))
    assert matrix.dtype == np.float32 and np.allclose(matrix, [[0.6, 0.8], [0.0, 1.0]])
    assert np.allclose(unit_vectors([3, 4]), [0.6, 0.8])


def test_a_zero_vector_is_an_error_naming_the_text_and_the_embedder_in_the_course_language(monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    with pytest.raises(ValueError, match=r"^the embedder fake turned 'second' into a zero or non-finite vector"):
        unit_vectors([[1.0, 0.0], [0.0, 0.0]], ["first", "second"], "fake")
    with pytest.raises(ValueError, match=r"^vector 1 of 2 is zero or not finite"):
        unit_vectors([[1.0, 0.0], [np.nan, 1.0]])
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    with pytest.raises(ValueError, match=r"^嵌入模型 fake 把 'second' 变成了零向量或非有限向量"):
        unit_vectors([[1.0, 0.0], [0.0, 0.0]], ["first", "second"], "fake")


@pytest.fixture(scope="module", params=["e5", "use"])
def embedder(request):
    return get_embeddings(request.param)


def test_vectors_have_the_declared_size_and_unit_length(embedder):
    vectors = np.array(embedder.embed_documents(DOCS))
    assert vectors.shape == (4, embedder.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert embedder.embed_documents([]) == []


@pytest.mark.parametrize(
    ("query", "expected"), [("how much holiday do staff get", 0), ("年假有几天", 1), ("默认端口", 3)]
)
def test_queries_rank_the_matching_passage_of_their_language_first(query, expected):
    # E5 is the default because it ranks in-language best on our probes (USE is stronger across languages).
    embedder = get_embeddings("e5")
    scores = np.array(embedder.embed_documents(DOCS)) @ np.array(embedder.embed_query(query))
    assert int(np.argmax(scores)) == expected, scores


def test_e5_adds_its_prefixes():
    e5 = get_embeddings("e5")
    assert isinstance(e5, E5Embeddings)
    # A query and the same text as a passage differ: the prefixes are applied.
    assert not np.allclose(e5.embed_query("port 7420"), e5.embed_documents(["port 7420"])[0])


def test_e5_embeds_queries_in_a_batch_as_one_by_one():
    e5 = get_embeddings("e5")
    assert np.allclose(e5.embed_queries(DOCS), [e5.embed_query(text) for text in DOCS], atol=1e-6)
    assert e5.embed_queries([]) == []


def test_use_threads_are_capped_for_small_machines():
    assert USEEmbeddings(threads=8).threads == 2


class CountingEmbeddings(Embeddings):
    """Wraps an embedder and counts the texts it was asked to embed."""

    name = "counting-e5"

    def __init__(self):
        self.inner, self.embedded = get_embeddings("e5"), 0

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_unchanged_chunks_are_never_embedded_twice(tmp_path):
    embeddings = CountingEmbeddings()
    docs = [Document(text, metadata={"source": f"d{i}"}) for i, text in enumerate(DOCS)]
    store = open_store("kb", embeddings, client=chroma_client(tmp_path))
    assert str(index_documents(store, docs)) == "4 chunks embedded, 0 already indexed, 0 removed"
    reopened = open_store("kb", embeddings, client=chroma_client(tmp_path))
    stats = index_documents(reopened, docs + [Document("A new chunk.", metadata={"source": "d9"})])
    assert (stats.added, stats.already_indexed) == (1, 4)
    assert embeddings.embedded == 5
    hits = reopened.similarity_search_with_relevance_scores("年假", k=1)
    assert hits[0][0].metadata["source"] == "d1" and 0 < hits[0][1] <= 1


def test_prune_removes_chunks_that_are_gone(tmp_path):
    docs = [Document(text) for text in DOCS]
    store = open_store("kb", get_embeddings("e5"), client=chroma_client(tmp_path))
    index_documents(store, docs)
    stats = index_documents(store, docs[:1], prune=True)
    assert stats.removed == 3 and store._collection.count() == 1


def test_ids_depend_on_text_and_metadata():
    a = Document("same", metadata={"source": "x"})
    assert content_id(a) == content_id(Document("same", metadata={"source": "x"}))
    assert content_id(a) != content_id(Document("same", metadata={"source": "y"}))


def test_collections_are_kept_apart_per_embedder(tmp_path):
    client = chroma_client(tmp_path)
    e5, use = (
        open_store("kb", get_embeddings("e5"), client=client),
        open_store("kb", get_embeddings("use"), client=client),
    )
    assert e5._collection.name != use._collection.name


def test_a_knowledge_base_index_leaves_its_passage_vectors_in_the_disk_cache(fresh_settings, monkeypatch):
    """What build_index embedded by default is not embedded again by the next reader of the same chunks (the router
    of notebook 09 reads every chunk of both knowledge bases)."""
    from lessons.chunking import cached_embeddings
    from lessons.core import embeddings as course_embeddings
    from lessons.core.search_text import search_text
    from lessons.retrieval.index import build_index

    counting = CountingEmbeddings()
    monkeypatch.setattr(course_embeddings, "get_embeddings", lambda name=None: counting)
    chunks = [Document(text, metadata={"source": f"d{i}", "context_header": f"Doc {i}"}) for i, text in enumerate(DOCS)]
    build_index(chunks, name="kb-cache-test")
    assert counting.embedded == len(DOCS)
    vectors = cached_embeddings().embed_documents([search_text(c) for c in chunks])
    assert counting.embedded == len(DOCS) and len(vectors) == len(DOCS)  # every vector from the cache


def test_a_collection_made_before_the_wider_search_gets_it_when_opened(tmp_path):
    """Chroma's default search width (ef_search 100) left chunks of the exact top 20 out on the package READMEs
    (lessons.core.vectorstore.SEARCH_EF); every course cache made before holds collections with that default."""
    from lessons.core.vectorstore import _collection_name

    client = chroma_client(tmp_path)
    embeddings = get_embeddings("e5")
    old = client.create_collection(_collection_name("kb", embeddings), configuration={"hnsw": {"space": "cosine"}})
    default = old.configuration["hnsw"]["ef_search"]
    widened = open_store("kb", embeddings, client=client)._collection.configuration["hnsw"]["ef_search"]
    assert widened > default, (widened, default)
    assert client.get_collection(old.name).configuration["hnsw"]["ef_search"] == widened  # kept for the next run
    fresh = open_store("new", embeddings, client=client)._collection.configuration["hnsw"]["ef_search"]
    assert fresh == widened


@pytest.mark.parametrize("locked_times, raises", [(2, False), (5, True)])
def test_widening_an_old_collection_waits_out_a_briefly_locked_database(tmp_path, monkeypatch, locked_times, raises):
    """One CI run met SQLite's "database is locked" on that `modify`, right after `create_collection` in a fresh
    folder: opening waits and tries again, and says so only when the lock outlasts every try."""
    import chromadb

    from lessons.core import vectorstore

    client = chroma_client(tmp_path)
    embeddings = get_embeddings("e5")
    client.create_collection(
        vectorstore._collection_name("kb", embeddings), configuration={"hnsw": {"space": "cosine"}}
    )
    modify, calls, waits = chromadb.Collection.modify, [], []

    def locked_at_first(self, **kwargs):
        calls.append(kwargs)
        if len(calls) <= locked_times:
            raise chromadb.errors.InternalError(
                "Database error: error returned from database: (code: 5) database is locked"
            )
        return modify(self, **kwargs)

    monkeypatch.setattr(chromadb.Collection, "modify", locked_at_first)
    monkeypatch.setattr(vectorstore.time, "sleep", waits.append)
    if raises:
        with pytest.raises(chromadb.errors.InternalError, match="database is locked"):
            open_store("kb", embeddings, client=client)
        assert len(calls) == vectorstore.LOCKED_RETRIES
    else:
        store = open_store("kb", embeddings, client=client)
        assert store._collection.configuration["hnsw"]["ef_search"] == vectorstore.SEARCH_EF
        assert len(calls) == locked_times + 1 and waits == sorted(waits) and len(waits) == locked_times


def test_opening_does_not_retry_an_error_other_than_a_lock(tmp_path, monkeypatch):
    import chromadb

    from lessons.core import vectorstore

    client = chroma_client(tmp_path)
    embeddings = get_embeddings("e5")
    client.create_collection(
        vectorstore._collection_name("kb", embeddings), configuration={"hnsw": {"space": "cosine"}}
    )
    calls = []

    def broken(self, **kwargs):
        calls.append(kwargs)
        raise chromadb.errors.InternalError("Database error: (code: 8) attempt to write a readonly database")

    monkeypatch.setattr(chromadb.Collection, "modify", broken)
    with pytest.raises(chromadb.errors.InternalError, match="readonly"):
        open_store("kb", embeddings, client=client)
    assert len(calls) == 1
