"""A persistent Chroma vector store whose ids are content hashes: nothing is embedded twice.

Introduced in notebook 00 (setup). `open_store(name)` opens (or creates) a collection in the
project's cache folder, with telemetry off, cosine distance and our offline embedder — Chroma's own
default embedding function would try to download a model. The collection name carries the
embedder's name, so switching embedders never mixes vectors of two models.
`index_documents(store, docs)` embeds only the chunks the collection does not hold yet.

A chunk may name its document and section path in `metadata["context_header"]` (`lessons.chunking.base.number_chunks`
sets it): the vector is then the embedding of `search_text(chunk)` — the header, a blank line, the chunk —
while the collection stores the chunk's own text, so what a retriever returns (and a prompt quotes) is the chunk
as it was, and the header costs no prompt token. The id of a stored chunk hashes its text and its metadata, header
included, so a collection built before the header existed holds none of the new ids: `index_documents(...,
prune=True)` embeds every chunk again and deletes the old vectors.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from urllib.parse import urlparse

import chromadb
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from lessons.core.embeddings import embedder_name, get_embeddings
from lessons.core.i18n import ReaderText, t
from lessons.core.search_text import CONTEXT_HEADER, search_text
from lessons.core.settings import get_settings
from lessons.core.store_names import CHROMA_SERVER, EMBEDDED_CHROMA


def content_id(document: Document) -> str:
    """A stable id from the chunk's text and metadata: same chunk, same id, on every machine.

    The metadata holds the context header, so the id also names the text that was embedded (`search_text`).
    """
    payload = json.dumps({"text": document.page_content, "meta": document.metadata}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def chroma_client(path=None) -> chromadb.ClientAPI:
    """The Chroma client (telemetry off): the embedded, persistent store in the course cache folder,
    or the Chroma server named by `AGENTIC_RAG_CHROMA_URL` (the server path is introduced in notebook 06
    (evaluation)). An explicit `path` always means the embedded store there."""
    settings = get_settings()
    if path is None and settings.chroma_url:
        return chroma_server_client(settings.chroma_url)
    path = path or settings.cache_dir / "chroma"
    return chromadb.PersistentClient(path=str(path), settings=chromadb.Settings(anonymized_telemetry=False))


def chroma_server_client(url: str) -> chromadb.ClientAPI:
    """A client of the Chroma server at `url` (http://HOST:PORT); a clear error when none answers there.

    Introduced in notebook 06 (evaluation).
    """
    parsed = urlparse(url)
    try:
        return chromadb.HttpClient(
            host=parsed.hostname, port=parsed.port, ssl=parsed.scheme == "https",
            settings=chromadb.Settings(anonymized_telemetry=False),
        )  # fmt: skip
    except Exception as error:  # chromadb raises ValueError("Could not connect …") and others
        raise ConnectionError(
            f"no Chroma server answers at {url} (AGENTIC_RAG_CHROMA_URL): {error}. Start one with "
            f"`chroma run --host {parsed.hostname} --port {parsed.port} --path ./chroma-data`, or unset "
            "AGENTIC_RAG_CHROMA_URL to use the embedded store."
        ) from error


def store_location() -> ReaderText:
    """Where `open_store` keeps collections: the Chroma server's URL or the embedded store's folder — the English
    for reports, `for_reader(store_location())` in the course language.

    Introduced in notebook 06 (evaluation).
    """
    settings = get_settings()
    if settings.chroma_url:
        return ReaderText(CHROMA_SERVER, url=settings.chroma_url)
    return ReaderText(EMBEDDED_CHROMA, path=settings.cache_dir / "chroma")


def _collection_name(name: str, embeddings: Embeddings) -> str:
    raw = f"{name}-{embedder_name(embeddings)}"
    # Chroma: 3-512 characters from [a-zA-Z0-9._-], starting and ending with a letter or digit.
    return re.sub(r"[^a-zA-Z0-9._-]", "-", raw).strip("-._")[:512]


# How many candidates Chroma's HNSW graph explores per search. Its default, 100, makes the search approximate even
# on a course-sized collection: on the 360 chunks of the package READMEs, 3 to 6 of the 94 gold questions got a top 20
# other than the exact one (chunks at exact rank 5, 9 or 14 left out; six runs of the e5 index), and which ones
# changed from one process to the next, so two runs of the same notebook could rank differently. At 200 the USE index
# still missed one in two of six runs; at 400 the top 20 equals the exact one for all 94, in eight runs of both
# indexes (the course corpus's 286 chunks were exact either way). A search costs a fraction of a millisecond more.
SEARCH_EF = 400


def open_store(name: str, embeddings: Embeddings | None = None, client: chromadb.ClientAPI | None = None) -> Chroma:
    """Open (or create) the collection `name` for `embeddings` (default: the course embedder).

    The collection searches with `SEARCH_EF`; one created before that setting gets it on opening.
    """
    embeddings = embeddings or get_embeddings()
    store = Chroma(
        collection_name=_collection_name(name, embeddings),
        embedding_function=embeddings,
        client=client or chroma_client(),
        collection_configuration={"hnsw": {"space": "cosine", "ef_search": SEARCH_EF}},
        # Cosine distance d in [0, 2] → similarity 1 - d; LangChain's default guess is much slower.
        relevance_score_fn=lambda distance: 1.0 - distance,
    )
    hnsw = (store._collection.configuration or {}).get("hnsw") or {}
    if hnsw.get("ef_search", 0) < SEARCH_EF:  # made before SEARCH_EF: a search-time setting, so it can change
        _widen_search(store._collection)
    return store


# SQLite answers "database is locked" while another connection writes to the same store; embedded Chroma's own
# background writes can do that for a moment (one CI run met it right after `create_collection` on a fresh folder).
LOCKED_RETRIES = 5


def _widen_search(collection) -> None:
    """Set `SEARCH_EF` on `collection`, waiting out a briefly locked database (0.2, 0.4, … 1.6 s) before giving up."""
    for attempt in range(LOCKED_RETRIES):
        try:
            collection.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})
            return
        except chromadb.errors.InternalError as error:
            if "database is locked" not in str(error) or attempt == LOCKED_RETRIES - 1:
                raise
            time.sleep(0.2 * 2**attempt)


@dataclass(frozen=True)
class IndexStats:
    added: int
    already_indexed: int
    removed: int

    def __str__(self) -> str:
        return t(
            "{added} chunks embedded, {already} already indexed, {removed} removed",
            added=self.added,
            already=self.already_indexed,
            removed=self.removed,
        )


def index_documents(
    store: Chroma, documents: list[Document], *, prune: bool = False, batch_size: int = 256
) -> IndexStats:
    """Add the chunks the store does not hold yet; with `prune`, delete those not in `documents`.

    A chunk with a context header is embedded as `search_text(chunk)` and stored with its own text.
    """
    by_id = {content_id(doc): doc for doc in documents}
    existing = set(store.get(ids=list(by_id), include=[])["ids"]) if by_id else set()
    new_ids = [i for i in by_id if i not in existing]
    for start in range(0, len(new_ids), batch_size):
        batch = new_ids[start : start + batch_size]
        plain = [i for i in batch if not by_id[i].metadata.get(CONTEXT_HEADER)]
        headed = [i for i in batch if by_id[i].metadata.get(CONTEXT_HEADER)]
        if plain:
            store.add_documents([by_id[i] for i in plain], ids=plain)
        if headed:
            store._collection.upsert(
                ids=headed,
                embeddings=store.embeddings.embed_documents([search_text(by_id[i]) for i in headed]),
                documents=[by_id[i].page_content for i in headed],
                metadatas=[by_id[i].metadata for i in headed],
            )
    removed = 0
    if prune:
        stale = [i for i in store.get(include=[])["ids"] if i not in by_id]
        if stale:
            store.delete(ids=stale)
        removed = len(stale)
    return IndexStats(added=len(new_ids), already_indexed=len(existing), removed=removed)
