"""The document processor: files → validated Docling Markdown → header chunks → a hybrid BM25 + dense retriever.

Introduced in notebook 05 (three-agent verification). It chains what earlier notebooks built, for
any set of files (the course knowledge base, or files a learner uploads in the chat panel):

- `lessons.ingest.files.ingest`: validation with clear errors (type, size, encoding, corrupt files),
  de-duplication by content hash, size limits, and the content-hash JSON conversion cache;
- `lessons.ingest.files.split_sections`: chunks at the Markdown headings, then the course's bilingual
  size cap (`lessons.chunking.strategies.default_chunker`), numbered and de-duplicated;
- `lessons.retrieval.hybrid_retriever`: dense (Chroma) and BM25 fused by reciprocal rank fusion;
- `lessons.retrieval.rerank.default_reranker`: the fused top `RERANK_CANDIDATES` reranked by the relevance model
  (the cross-encoder for English questions, the route `default_reranker` chooses for Chinese ones),
  the best `k` handed on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.documents import BaseDocumentCompressor, Document

from lessons.chunking.base import number_chunks
from lessons.chunking.strategies import default_chunker
from lessons.core.i18n import t
from lessons.ingest.files import IngestError, IngestLimits, Skipped, ingest, split_sections, to_documents
from lessons.retrieval.index import build_index
from lessons.retrieval.retrievers import bm25_retriever, dense_retriever, hybrid_retriever

DEFAULT_K = 4
CANDIDATES = 10  # each first-stage retriever's list before fusion (without a reranker)
RERANK_CANDIDATES = 20  # the fused list the reranker reads; each first-stage retriever then returns this many


class NoDocumentsError(IngestError):
    """None of the given files could be converted: nothing to search. Introduced in notebook 05 (three-agent verification)."""


@dataclass
class ProcessedDocuments:
    """The chunks of a set of files, what was skipped and why, and a hybrid retriever over the chunks. Introduced in notebook 05 (three-agent verification)."""

    chunks: list[Document]
    skipped: list[Skipped] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    k: int = DEFAULT_K
    _retriever: object = None
    reranker: BaseDocumentCompressor | None = None

    def first_stage(self, question: str) -> list[Document]:
        """The hybrid list (BM25 + dense, fused by RRF) before any reranking: `RERANK_CANDIDATES` chunks with a reranker, else `k`."""
        return list(self._retriever.invoke(question))

    def retrieve(self, question: str) -> list[Document]:
        """The `k` best chunks for `question`: the hybrid top `RERANK_CANDIDATES` reranked, or the hybrid top `k` without a reranker."""
        candidates = self.first_stage(question)
        if self.reranker is None:
            return candidates[: self.k]
        return list(self.reranker.compress_documents(candidates, question))[: self.k]

    def summary(self) -> str:
        lines = [t("{files} file(s) → {chunks} chunks.", files=len(self.files), chunks=len(self.chunks))]
        lines += [t("Skipped {name}: {reason}", name=Path(item.path).name, reason=item.reason) for item in self.skipped]
        return "\n".join(lines)


def hybrid_over(chunks: Sequence[Document], store, k: int = DEFAULT_K, candidates: int = CANDIDATES):
    """Dense and BM25 retrievers over the same chunks, each returning `candidates`, fused; the best `k`.

    The course's one hybrid factory (introduced in notebook 02; the grading loop, the evaluation's pipelines and
    techniques, the document processor and the deep-research agent build their hybrid first stage with it).
    `hybrid_retriever` is the fusion step itself, for retrievers built some other way (the service's live index).
    """
    return hybrid_retriever(dense_retriever(store, candidates), bm25_retriever(chunks, candidates), k=k)


def reranked_hybrid_over(chunks: Sequence[Document], store, k: int = DEFAULT_K, candidates: int = RERANK_CANDIDATES):
    """The hybrid first stage a reranker reads: each retriever's top `candidates`, fused, the best `candidates` (notebook 05)."""
    return hybrid_over(chunks, store, k=max(k, candidates), candidates=max(k, candidates))


def chunk_files(converted) -> list[Document]:
    """Markdown header chunks (size-capped, numbered, de-duplicated) of converted files (introduced in notebook 05)."""
    return number_chunks(default_chunker()(split_sections(to_documents(converted))))


def process_documents(
    paths_or_folder: str | Path | Iterable[str | Path],
    *,
    index_name: str = "nb05-uploads",
    k: int = DEFAULT_K,
    limits: IngestLimits = IngestLimits(),
    progress: bool = False,
    reranker: BaseDocumentCompressor | None | str = "default",
) -> ProcessedDocuments:
    """Ingest, chunk and index files; raise `NoDocumentsError` (naming each file and why) when none converts.

    Introduced in notebook 05 (three-agent verification). Bad files are skipped and listed in
    `skipped`; the Chroma collection `index_name` is made to hold exactly these chunks. `reranker`:
    "default" reranks the hybrid top `RERANK_CANDIDATES` with `lessons.retrieval.rerank.default_reranker(k)`;
    pass any LangChain document compressor instead, or None for the hybrid order alone.
    """
    if isinstance(reranker, str):
        if reranker != "default":
            raise ValueError(f'reranker={reranker!r}: pass "default", None or a LangChain BaseDocumentCompressor')
        from lessons.retrieval.rerank import default_reranker

        reranker = default_reranker(top_n=k)
    result = ingest(paths_or_folder, limits=limits, progress=progress)
    if not result.documents:
        reasons = "; ".join(f"{Path(s.path).name}: {s.reason}" for s in result.skipped) or "no files given"
        raise NoDocumentsError(f"no document could be read ({reasons}) — upload a supported, non-empty file")
    chunks = chunk_files(result.documents)
    store = build_index(chunks, name=index_name)
    return ProcessedDocuments(
        chunks=chunks,
        skipped=list(result.skipped),
        files=[d.source for d in result.documents],
        k=k,
        reranker=reranker,
        _retriever=reranked_hybrid_over(chunks, store, k) if reranker else hybrid_over(chunks, store, k),
    )
