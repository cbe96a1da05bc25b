"""The live index: each document's chunks in Chroma, one generation per ingestion job.

Introduced in notebook 08 (from notebook to service). A chunk's id is `<document>:<job>:<n>`, so a job
that is run again after its worker was killed upserts the very same ids (never a second copy), and
its metadata carries `generation = "<document>:<job>"`. Searches read the database's active
generations once and ask Chroma only for chunks of those: a document's new chunks are invisible until
the database commit (`service.db.commit_job`) switches its generation, and its old ones are
deleted only after a grace time — a search sees the old set or the new set, never a mix.

Embedded Chroma must be opened by ONE process (a second process reads stale vectors: it does not see the vectors
another process adds), so with the embedded store the worker runs inside the API process; separate worker processes
need a Chroma server (`AGENTIC_RAG_CHROMA_URL`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from lessons.core.search_text import search_text
from lessons.core.vectorstore import chroma_client, chroma_server_client, open_store
from lessons.retrieval import bm25_retriever
from lessons.retrieval.retrievers import DenseRetriever, with_score

GENERATION = "generation"


def generation(document_id: str, job_id: int) -> str:
    return f"{document_id}:{job_id}"


def chunk_key(document_id: str, job_id: int, number: int) -> str:
    return f"{document_id}:{job_id}:{number}"


class FilteredDenseRetriever(DenseRetriever):
    """`lessons.retrieval.retrievers.DenseRetriever` restricted to chunks whose metadata matches a Chroma `where` filter."""

    where: dict | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.store.similarity_search_with_relevance_scores(query, k=self.k, filter=self.where)
        return [with_score(document, score) for document, score in hits]


class LiveIndex:
    """The service's Chroma collection, with a BM25 index per snapshot of active generations."""

    def __init__(self, collection: str, embeddings: Embeddings, *, chroma_url: str | None, path: Path):
        client = chroma_server_client(chroma_url) if chroma_url else chroma_client(path)
        self.store = open_store(collection, embeddings, client=client)
        self.embeddings = embeddings
        self._bm25_lock = threading.Lock()
        self._bm25: tuple[frozenset, object, list[Document]] | None = None
        self._embed_lock = threading.Lock()  # the offline embedders are not documented as thread-safe

    # --- writing (the worker only) ---

    def upsert(self, document_id: str, job_id: int, chunks: Sequence[Document], batch_size: int = 128) -> int:
        """Embed and upsert one generation's chunks under ids that are the same on every retry.

        Each chunk is embedded as its `search_text` (its context header, then its text) and stored with its own text,
        as `lessons.core.vectorstore.index_documents` does; a generation upserted before chunks carried a context
        header has none in its metadata, so its vectors and its BM25 index both stay on its text alone until the
        document is uploaded again.
        """
        ids, texts, searched, metadatas = [], [], [], []
        for number, chunk in enumerate(chunks):
            meta = {k: v for k, v in chunk.metadata.items() if isinstance(v, (str, int, float, bool))}
            meta["content_hash"] = str(meta.get("chunk_id", ""))
            meta.update(chunk_id=chunk_key(document_id, job_id, number), document_id=document_id, job_id=job_id,
                        generation=generation(document_id, job_id))  # fmt: skip
            ids.append(meta["chunk_id"])
            texts.append(chunk.page_content)
            searched.append(search_text(chunk))
            metadatas.append(meta)
        collection = self.store._collection
        for start in range(0, len(ids), batch_size):
            batch = slice(start, start + batch_size)
            with self._embed_lock:
                vectors = self.embeddings.embed_documents(searched[batch])
            collection.upsert(ids=ids[batch], embeddings=vectors, documents=texts[batch], metadatas=metadatas[batch])
        return len(ids)

    def delete_generation(self, document_id: str, job_id: int) -> None:
        self.store._collection.delete(where={GENERATION: generation(document_id, job_id)})

    # --- reading ---

    def chunks(self, generations: dict[str, int]) -> list[Document]:
        """Every chunk of the given generations (document id → job id), in document and chunk order."""
        if not generations:
            return []
        wanted = [generation(d, j) for d, j in generations.items()]
        got = self.store._collection.get(where=_in(wanted), include=["documents", "metadatas"])
        documents = [
            Document(page_content=text, metadata=meta) for text, meta in zip(got["documents"], got["metadatas"])
        ]
        return sorted(documents, key=lambda d: (d.metadata["document_id"], int(d.metadata.get("chunk_index", 0)),
                                                d.metadata["chunk_id"]))  # fmt: skip

    def keyword_index(self, generations: dict[str, int], k: int):
        """A BM25 retriever over exactly these generations' chunks (rebuilt when the set changes)."""
        key = frozenset(generations.items())
        with self._bm25_lock:
            if self._bm25 is None or self._bm25[0] != key:
                chunks = self.chunks(generations)
                self._bm25 = (key, bm25_retriever(chunks, k) if chunks else None, chunks)
            retriever = self._bm25[1]
        if retriever is not None:
            retriever = retriever.model_copy(update={"k": k})
        return retriever

    def dense(self, generations: dict[str, int], k: int) -> FilteredDenseRetriever:
        wanted = [generation(d, j) for d, j in generations.items()]
        return FilteredDenseRetriever(store=self.store, k=k, where=_in(wanted))

    def stats(self) -> dict[str, dict[str, int]]:
        """Chunks held per generation, and how many ids are held more than once (must be 0)."""
        got = self.store._collection.get(include=["metadatas"])
        per_generation: dict[str, int] = {}
        for meta in got["metadatas"]:
            per_generation[meta[GENERATION]] = per_generation.get(meta[GENERATION], 0) + 1
        return {
            "generations": per_generation,
            "total": len(got["ids"]),
            "duplicate_ids": len(got["ids"]) - len(set(got["ids"])),
        }


def _in(values: list[str]) -> dict:
    return {GENERATION: {"$in": values}} if len(values) != 1 else {GENERATION: values[0]}
