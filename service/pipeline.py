"""The service's search and answer pipeline, built from the course's pieces.

Introduced in notebook 08 (from notebook to service).

- `retrieve`: hybrid retrieval (dense + BM25 fused by reciprocal rank fusion, `lessons.retrieval`) over
  one consistent snapshot of the live index, then the course's reranker: the fused top `RERANK_CANDIDATES`
  reordered by `lessons.retrieval.rerank.default_reranker` — the packaged cross-encoder for English questions, the
  fused order kept for Chinese ones (the English model pushes good Chinese passages down, notebook 02).
  `AGENTIC_RAG_SERVICE_RERANKER=none` turns the reranker off (the hybrid order alone, e.g. when search
  latency matters more than order: `benchmarks/bench_service.py` measures both); `AGENTIC_RAG_RERANKER`
  chooses the cross-encoder, as everywhere in the course.
- `answer`: the registry's served pipeline (`lessons.agents.pipelines.SERVED`, "grading-loop", the gated one
  notebook 06 evaluates), built by its `over` over `retrieve`: notebook 04's grading loop,
  graded by the calibrated relevance gate and the course's answerability check (`lessons.agents.answerability`),
  answering from the chunks it let through and citing them (file, page, chunk) — or abstaining ("not in the
  documents"), with `answerability` in the reply saying why (the judge's quote, the specifics missing).
- `answer_cache`: the semantic cache of notebook 09 in front of `answer` (`lessons.retrieval.semantic_cache`), one
  per snapshot of the index: its version is a hash of the snapshot's chunks, so a reply written before an upload,
  a replacement or a delete is never served. By default the service serves only the same question's reply from
  it (`AGENTIC_RAG_SERVICE_ANSWER_CACHE=exact`); `semantic` also a close question's (it can be another question's
  answer: `service.settings` gives the measured rate), `off` none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.language_models import BaseChatModel

from lessons.agents.answering import Citation as CourseCitation
from lessons.agents.answering import citation_of, not_in_documents_answer
from lessons.agents.grading import DEFAULT_MAX_ROUNDS
from lessons.agents.pipelines import PIPELINES, SERVED, K, PipelineResult
from lessons.retrieval import hybrid_retriever
from lessons.retrieval.document_processor import CANDIDATES, RERANK_CANDIDATES, reranker_candidates
from service.settings import MAX_K


@dataclass
class Snapshot:
    """The active generations a request saw, read once from the database."""

    generations: dict[str, int]


def service_reranker(name: str = "default") -> BaseDocumentCompressor | None:
    """The reranker a setting names: "default" → `lessons.retrieval.rerank.default_reranker` (keeping up to `MAX_K`), "none" → None."""
    if name not in ("default", "none"):
        raise ValueError(f"reranker {name!r}: use 'default' (the course's reranker) or 'none' (the hybrid order)")
    from lessons.retrieval.rerank import reranker_by_name

    return reranker_by_name(name, top_n=MAX_K)


def retrieve(index, snapshot: Snapshot, question: str, k: int = K, candidates: int | None = None,
             reranker: BaseDocumentCompressor | None = None) -> list[Document]:  # fmt: skip
    """The best `k` chunks for `question` among the snapshot's generations.

    Hybrid (dense + BM25, RRF) over `candidates` chunks per first stage (default: `RERANK_CANDIDATES` with a
    reranker, `CANDIDATES` without); with `reranker` (the service passes `service_reranker()`), the fused
    list reordered by it — each chunk's reranker score in `metadata["score"]`.
    """
    if not snapshot.generations:
        return []
    size = max(k, candidates or (RERANK_CANDIDATES if reranker is not None else CANDIDATES))
    generations = snapshot.generations
    keyword = index.keyword_index(generations, size)
    if keyword is None:  # no keyword index yet: dense search alone
        first_stage = index.dense(generations, size)
    elif reranker is not None:  # the course's reranker input (notebook 02): plain hybrid's order first
        first_stage = reranker_candidates(lambda n: index.dense(generations, n),
                                          lambda n: index.keyword_index(generations, n), size)  # fmt: skip
    else:
        first_stage = hybrid_retriever(index.dense(generations, size), keyword, k=size)
    ranked = first_stage.invoke(question)[:size]
    if reranker is not None:
        ranked = list(reranker.compress_documents(ranked, question))
    return ranked[:k]


@dataclass(frozen=True)
class Citation(CourseCitation):
    """The course's citation (`lessons.agents.answering.Citation`) and what the API returns with it."""

    document_id: str = ""
    text: str = ""


@dataclass
class Answer:
    question: str
    answer: str
    abstained: bool
    citations: list[Citation] = field(default_factory=list)
    context: list[Document] = field(default_factory=list)
    answerability: dict[str, Any] | None = None  # the answerability check's verdict, when it ran
    rounds: int | None = None  # the grading loop's retrieval rounds (1: answered or refused from the first retrieval)
    gate: dict[str, Any] | None = None  # the relevance gate's thresholds and best scores per round (`gate_report`)

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer, "abstained": self.abstained,
                "citations": [asdict(c) for c in self.citations],
                "context": [{"text": d.page_content, "metadata": d.metadata} for d in self.context],
                "answerability": self.answerability, "rounds": self.rounds, "gate": self.gate}  # fmt: skip


@dataclass
class SnapshotFacts:
    """What the service derives from one snapshot's chunks, read from the index once for both: the served documents'
    `common_names` (`subject`) and their `knowledge_base_version` (None for an empty snapshot), with the answer
    caches opened for that version (one per SQLite file)."""

    index: Any
    generations: frozenset
    subject: frozenset[str]
    version: str | None
    caches: dict[str, Any] = field(default_factory=dict)


_FACTS: list[SnapshotFacts] = []  # one snapshot at a time: the live index moves on
_FACTS_LOCK = threading.Lock()


def snapshot_facts(index, snapshot: Snapshot) -> SnapshotFacts:
    """The `SnapshotFacts` of this index's snapshot, computed on its first request and kept until another snapshot
    (or another index) asks."""
    from lessons.agents.answerability import common_names
    from lessons.retrieval.semantic_cache import knowledge_base_version

    key = frozenset(snapshot.generations.items())
    with _FACTS_LOCK:
        if not _FACTS or _FACTS[0].index is not index or _FACTS[0].generations != key:
            chunks = index.chunks(snapshot.generations) if snapshot.generations else []
            version = knowledge_base_version(chunks) if chunks else None
            _FACTS[:] = [SnapshotFacts(index, key, common_names(chunks), version)]
        return _FACTS[0]


def subject_names(index, snapshot: Snapshot) -> frozenset[str]:
    """The served documents' `common_names` (their subject, which no chunk need repeat), once per snapshot."""
    return snapshot_facts(index, snapshot).subject


def answer_cache(index, snapshot: Snapshot, path: Path):
    """The `/v1/ask` replies cached for this snapshot's documents (a `SemanticCache` in the SQLite file `path`), or
    None when the snapshot is empty. Keyed by `knowledge_base_version` of the snapshot's chunks: the same documents
    give the same version after a restart, and another document set another one. Its threshold, used only in the
    `semantic` mode (`lookup(question)`; the default `exact` mode looks up `lookup(question, exact=True)`), is the one
    calibrated for the index's embedder (`DEFAULT_THRESHOLDS`, notebook 09); an embedder without one serves only
    the same question again (after `normalise_question`: case, spaces, the final question mark)."""
    from lessons.core.embeddings import embedder_name
    from lessons.retrieval.semantic_cache import DEFAULT_THRESHOLDS, SemanticCache

    facts = snapshot_facts(index, snapshot)
    if facts.version is None:
        return None
    with _FACTS_LOCK:
        if str(path) not in facts.caches:
            threshold = DEFAULT_THRESHOLDS.get((embedder_name(index.embeddings), True), 1.0)
            facts.caches[str(path)] = SemanticCache(path, index.embeddings, facts.version, threshold=threshold)
        return facts.caches[str(path)]


def answer(
    llm: BaseChatModel,
    question: str,
    retriever: Callable[[str], list[Document]],
    subject: frozenset[str] = frozenset(),
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> Answer:
    """`/v1/ask`: the registry's served pipeline (`lessons.agents.pipelines.SERVED`, "grading-loop": the gated
    pipeline notebook 06 evaluates) over `retriever` (the service's `retrieve`) — notebook 04's loop graded by the
    calibrated relevance gate, then the answerability check (`subject`: `subject_names` of the served documents).
    It answers from the chunks the gate let through and cites them, or says "not in the documents";
    `answerability` in the reply is the check's last verdict (the judge's quote, what was missing); `rounds` how many
    retrievals the loop made (1: decided on the first; more: it rewrote the question); `gate` the relevance gate's
    thresholds for the question's language and, per round, the best score of each signal and how many chunks passed
    (`lessons.agents.pipelines.gate_report`): a refusal the gate made says how far below its threshold it was."""
    pipeline = PIPELINES[SERVED].over(llm, retriever, subject=subject, max_rounds=max_rounds)
    result = pipeline(question)
    verdict = result.details.get("check")
    checked = None if verdict is None else {"answerable": verdict.answerable, "reason": verdict.reason,
                                            "quote": verdict.quote, "missing": list(verdict.missing)}  # fmt: skip
    if result.abstained:
        return Answer(question, not_in_documents_answer(question), True, context=result.retrieved,
                      answerability=checked, rounds=result.details.get("rounds"),
                      gate=result.details.get("gate"))  # fmt: skip
    cited = [
        Citation(
            **asdict(citation_of(d)), document_id=str(d.metadata.get("document_id", "")), text=d.page_content[:300]
        )
        for d in result.context
    ]
    details = result.details
    return Answer(
        question, result.answer, False, cited, result.retrieved, checked, details.get("rounds"), details.get("gate")
    )


def as_pipeline_result(reply: dict[str, Any], retrieved: list[Document] | None = None) -> PipelineResult:
    """An `/v1/ask` reply as the evaluation's `PipelineResult` (the nightly job scores the service through it)."""
    context = [Document(page_content=c["text"], metadata=c["metadata"]) for c in reply.get("context", [])]
    return PipelineResult(reply["answer"], bool(reply["abstained"]), retrieved if retrieved is not None else context,
                          [] if reply["abstained"] else context)  # fmt: skip
