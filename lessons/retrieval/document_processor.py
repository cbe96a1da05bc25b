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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables import RunnableLambda

from lessons.core.i18n import t
from lessons.ingest.files import IngestError, IngestLimits, Skipped, ingest
from lessons.retrieval.index import build_index, chunk_converted
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
    retriever: Any = None  # `reranked_hybrid` over the chunks: the course's one assembly of the reranked hybrid

    def first_stage(self, question: str) -> list[Document]:
        """The hybrid list (BM25 + dense, fused by RRF) before any reranking: `RERANK_CANDIDATES` chunks with a reranker, else `k`."""
        return list(getattr(self.retriever, "base_retriever", self.retriever).invoke(question))

    def retrieve(self, question: str) -> list[Document]:
        """The `k` best chunks for `question`: the hybrid top `RERANK_CANDIDATES` reranked, or the hybrid top `k` without a reranker."""
        return list(self.retriever.invoke(question))[: self.k]

    def summary(self) -> str:
        lines = [t("{files} file(s) → {chunks} chunks.", files=len(self.files), chunks=len(self.chunks))]
        lines += [t("Skipped {name}: {reason}", name=Path(item.path).name, reason=item.reason) for item in self.skipped]
        return "\n".join(lines)


def hybrid_over(
    chunks: Sequence[Document], store, k: int = DEFAULT_K, candidates: int = CANDIDATES, where: dict | None = None
):
    """Dense and BM25 retrievers over the same chunks, each returning `candidates`, fused; the best `k`.

    The course's one hybrid factory (introduced in notebook 02; the grading loop, the evaluation's pipelines and
    techniques, the document processor and the deep-research agent build their hybrid first stage with it).
    `hybrid_retriever` is the fusion step itself, for retrievers built some other way (the service's live index).
    """
    return hybrid_retriever(dense_retriever(store, candidates, where), bm25_retriever(chunks, candidates), k=k)


def plain_first(plain: Sequence[Document], deep: Sequence[Document]) -> list[Document]:
    """`plain` (the hybrid of each retriever's top `CANDIDATES`), then the chunks only the deeper fusion `deep` found.

    Fusing deeper lists reorders the top: a chunk both retrievers rank 12th can pass one only BM25 ranks 1st. The
    reranker reads the deeper candidates, but the order it is fused with — and the one a route without a reranker
    keeps — is plain hybrid's (notebook 02 measures both orders).
    """
    seen = {d.page_content for d in plain}
    return [*plain, *(d for d in deep if d.page_content not in seen)]


def reranker_candidates(dense_of: Callable[[int], object], keyword_of: Callable[[int], object], size: int):
    """The fused list a reranker reads, `size` chunks: plain hybrid's order (each retriever's top `CANDIDATES`,
    fused), then what each retriever's top `size`, fused, adds (`plain_first`).

    `dense_of(n)` and `keyword_of(n)` build a retriever that returns `n` chunks: over a chunk list and its store
    (`reranked_hybrid_over`), or over the service's live index (`service.pipeline.retrieve`).
    """
    plain = hybrid_retriever(dense_of(CANDIDATES), keyword_of(CANDIDATES), k=min(size, CANDIDATES))
    deep = hybrid_retriever(dense_of(size), keyword_of(size), k=size)
    return RunnableLambda(lambda query: plain_first(plain.invoke(query), deep.invoke(query))[:size], name="hybrid")


def reranked_hybrid_over(
    chunks: Sequence[Document],
    store,
    k: int = DEFAULT_K,
    candidates: int = RERANK_CANDIDATES,
    where: dict | None = None,
):
    """The hybrid first stage a reranker reads (notebook 05) over `chunks` and their `store`: `reranker_candidates`
    with Chroma's dense search (with `where`, a metadata filter, among the chunks that meet it: give the same
    chunks to BM25) and BM25 — `max(k, candidates)` chunks."""
    return reranker_candidates(
        lambda n: dense_retriever(store, n, where), lambda n: bm25_retriever(chunks, n), max(k, candidates)
    )


def reranked_hybrid(
    chunks: Sequence[Document],
    store,
    k: int = DEFAULT_K,
    candidates: int = RERANK_CANDIDATES,
    reranker: BaseDocumentCompressor | None | str = "default",
    where: dict | None = None,
):
    """The course's one "hybrid top `candidates`, reranked, top `k`" retriever (notebook 02; notebooks 04-07, the
    evaluation's pipelines and techniques and the document processor build it here).

    `reranker`: a name for `lessons.retrieval.rerank.reranker_by_name` ("default": the cross-encoder fused with the
    hybrid order, per language), any LangChain document compressor, or None / "none" for the hybrid top `k` alone.
    Each reranked passage carries the relevance model's own score in `metadata["relevance_score"]`
    (`lessons.retrieval.rerank.RELEVANCE_SCORE`) for a later step to read instead of scoring it again.
    `where`: a Chroma metadata filter for the dense search, with `chunks` the ones that meet it
    (`lessons.retrieval.metadata_filter.filtered_retriever`, notebook 09).
    """
    if isinstance(reranker, str):
        from lessons.retrieval.rerank import reranker_by_name

        reranker = reranker_by_name(reranker, top_n=k)
    if reranker is None:
        return hybrid_over(chunks, store, k=k, where=where)
    from langchain_classic.retrievers import ContextualCompressionRetriever

    return ContextualCompressionRetriever(
        base_retriever=reranked_hybrid_over(chunks, store, k, candidates, where), base_compressor=reranker
    )


def chunk_files(converted) -> list[Document]:
    """Markdown header chunks (size-capped, numbered, de-duplicated) of converted files (introduced in notebook 05)."""
    return chunk_converted(converted)


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
        from lessons.retrieval.rerank import reranker_by_name

        reranker = reranker_by_name(reranker, top_n=k)
    result = ingest(paths_or_folder, limits=limits, progress=progress)
    if not result.documents:
        reasons = "; ".join(f"{Path(s.path).name}: {s.reason}" for s in result.skipped) or t("no files given")
        raise NoDocumentsError(
            t("no document could be read ({reasons}) — upload a supported, non-empty file", reasons=reasons)
        )
    chunks = chunk_files(result.documents)
    store = build_index(chunks, name=index_name)
    return ProcessedDocuments(
        chunks=chunks,
        skipped=list(result.skipped),
        files=[d.source for d in result.documents],
        k=k,
        retriever=reranked_hybrid(chunks, store, k=k, reranker=reranker),
    )
