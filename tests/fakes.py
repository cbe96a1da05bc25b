"""Fake embedders for the tests: vectors a test can predict, no model loaded.

- `KeywordEmbeddings`: one axis per keyword, plus a small constant one: texts about the same keywords are neighbours.
- `TableEmbeddings`: the vector a table gives each text: the test chooses every similarity.

Both count the texts they embed (`calls`) and keep the documents they embedded (`documents`). `memory_store` is an
in-memory Chroma store over one of them, scored as the course's stores are (cosine, relevance = 1 - distance).
`ReverseReranker` is a stand-in reranker (a LangChain document compressor) whose order a test can predict.
(The fake chat model is `lessons.core.fakes.ScriptedChatModel`: notebooks use it too.)
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

from langchain_core.documents import BaseDocumentCompressor
from langchain_core.embeddings import Embeddings
from pydantic import Field

_stores = itertools.count()


class _CountingEmbeddings(Embeddings):
    name = "fake-embedder"

    def __init__(self, name: str | None = None):
        self.name = name or self.name
        self.calls = 0
        self.documents: list[str] = []

    def _vector(self, text: str) -> list[float]:
        raise NotImplementedError

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._vector(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += list(texts)
        return [self.embed_query(text) for text in texts]


class KeywordEmbeddings(_CountingEmbeddings):
    """How often each keyword occurs in the text (case-folded; an ASCII keyword as a whole word, any other as a
    substring: Chinese has no spaces), then `constant`, L2-normalised. The constant axis keeps a text with no keyword
    off zero: all such texts are one vector, equally far from every keyword."""

    name = "keyword-embedder"

    def __init__(self, keywords: Sequence[str], name: str | None = None, constant: float = 0.01):
        super().__init__(name)
        self.keywords, self.constant = tuple(keywords), constant
        self._patterns = [
            re.compile(rf"(?<![a-z0-9]){re.escape(k.casefold())}(?![a-z0-9])" if k.isascii() else re.escape(k))
            for k in self.keywords
        ]

    def _vector(self, text: str) -> list[float]:
        folded = text.casefold()
        vector = [float(len(p.findall(folded))) for p in self._patterns] + [self.constant]
        norm = sum(v * v for v in vector) ** 0.5
        return [v / norm for v in vector]


class TableEmbeddings(_CountingEmbeddings):
    """The vector `vectors` gives each text, as it is (a text not in the table is a KeyError: the test forgot it)."""

    name = "table-embedder"

    def __init__(self, vectors: Mapping[str, Sequence[float]], name: str | None = None):
        super().__init__(name)
        self.vectors = vectors

    def _vector(self, text: str) -> list[float]:
        return [float(v) for v in self.vectors[text]]


def memory_store(embeddings: Embeddings):
    """An in-memory Chroma store over `embeddings`, a new collection each call."""
    import chromadb
    from langchain_chroma import Chroma

    return Chroma(
        collection_name=f"test-{next(_stores)}",
        embedding_function=embeddings,
        client=chromadb.EphemeralClient(settings=chromadb.Settings(anonymized_telemetry=False)),
        collection_configuration={"hnsw": {"space": "cosine"}},
        relevance_score_fn=lambda distance: 1.0 - distance,
    )


class ReverseReranker(BaseDocumentCompressor):
    """A stand-in reranker: the candidates in reverse order; `seen` keeps each call's (query, candidates)."""

    seen: list = Field(default_factory=list)

    def compress_documents(self, documents, query, callbacks=None):
        self.seen.append((query, list(documents)))
        return list(reversed(documents))
