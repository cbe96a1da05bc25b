"""The service's search and answer pipeline, built from the course's pieces.

Introduced in notebook 08 (from notebook to service).

- `retrieve`: hybrid retrieval (dense + BM25 fused by reciprocal rank fusion, `lessons.retrieval`) over
  one consistent snapshot of the live index. **Switching to hybrid + rerank is one line**: wrap the
  fused retriever in `retrieve` below with the lead's cross-encoder from `lessons.retrieval.rerank` (see the
  comment there); nothing else changes.
- `answer`: notebook 05's research agent (`lessons.agents.three_agents.research`) writes an answer from the
  top chunks only and cites them; the citations name the file, the page and the chunk.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from lessons.evaluation.pipelines import K, PipelineResult
from lessons.retrieval import hybrid_retriever

CANDIDATES = 10  # each first-stage list before fusion (as lessons.retrieval.document_processor)


@dataclass
class Snapshot:
    """The active generations a request saw, read once from the database."""

    generations: dict[str, int]


def retrieve(index, snapshot: Snapshot, question: str, k: int = K, candidates: int = CANDIDATES) -> list[Document]:
    """The best `k` chunks for `question` among the snapshot's generations (hybrid: dense + BM25, RRF)."""
    if not snapshot.generations:
        return []
    size = max(k, candidates)
    keyword = index.keyword_index(snapshot.generations, size)
    dense = index.dense(snapshot.generations, size)
    if keyword is None:
        return dense.invoke(question)[:k]
    fused = hybrid_retriever(dense, keyword, k=size)
    # Hybrid + rerank, once lessons.retrieval.rerank has the cross-encoder: replace the next line by
    #     ranked = <cross-encoder reranker>.compress_documents(fused.invoke(question), question)
    ranked = fused.invoke(question)
    return ranked[:k]


@dataclass
class Citation:
    source: str
    page: int | None
    chunk_id: str
    document_id: str
    text: str


@dataclass
class Answer:
    question: str
    answer: str
    abstained: bool
    citations: list[Citation] = field(default_factory=list)
    context: list[Document] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer, "abstained": self.abstained,
                "citations": [asdict(c) for c in self.citations],
                "context": [{"text": d.page_content, "metadata": d.metadata} for d in self.context]}  # fmt: skip


def answer(llm: BaseChatModel, question: str, context: list[Document]) -> Answer:
    """An answer from `context` only, citing its chunks; the honest "not in the documents" when it has none."""
    from lessons.agents.three_agents import not_in_documents_answer, research

    if not context:
        return Answer(question, not_in_documents_answer(question), True)
    draft = research(llm, question, context)
    if draft.found != "yes" or not draft.answer.strip():
        return Answer(question, not_in_documents_answer(question), True, context=context)
    cited, seen = [], set()
    for number in draft.cited_chunks or [1]:
        if 1 <= number <= len(context) and number not in seen:
            seen.add(number)
            meta = context[number - 1].metadata
            cited.append(Citation(str(meta.get("source", "")), meta.get("page"), str(meta.get("chunk_id", "")),
                                  str(meta.get("document_id", "")), context[number - 1].page_content[:300]))  # fmt: skip
    return Answer(question, draft.answer.strip(), False, cited, context)


def as_pipeline_result(reply: dict[str, Any], retrieved: list[Document] | None = None) -> PipelineResult:
    """An `/v1/ask` reply as the evaluation's `PipelineResult` (the nightly job scores the service through it)."""
    context = [Document(page_content=c["text"], metadata=c["metadata"]) for c in reply.get("context", [])]
    return PipelineResult(reply["answer"], bool(reply["abstained"]), retrieved if retrieved is not None else context,
                          [] if reply["abstained"] else context)  # fmt: skip
