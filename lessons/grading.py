"""The grading loop: grade what was retrieved, rewrite the query if nothing helps, stop at a cap,
and say "not in the knowledge base" on its own path instead of making an answer up.

Introduced in notebook 04 (grading loop). A small LangGraph graph:

    retrieve → grade → generate → END                 (at least one relevant document)
                   ↘ rewrite → retrieve …             (none relevant, rounds left)
                   ↘ not_in_kb → END                  (none relevant at the cap)
    generate → not_in_kb when the generator itself finds no answer in the relevant documents

The round counter lives in the state and is advanced by the `retrieve` step, never in a router, and
the router cannot choose `rewrite` once the cap is reached: the loop ends by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field

from lessons.ingest import detect_language
from lessons.structured import invoke_structured

Retriever = Callable[[str], Sequence[Document]]

DEFAULT_MAX_ROUNDS = 3
NOT_IN_KB = {
    "en": "The knowledge base has no information on this question.",
    "zh": "知识库中没有关于这个问题的信息。",
}


class GradeDocuments(BaseModel):
    """Binary relevance of one retrieved document to the question."""

    binary_score: Literal["yes", "no"] = Field(
        description="'yes' if the document contains information that answers the question, otherwise 'no'"
    )


class RewrittenQuery(BaseModel):
    """A new search query for the same question, with different keywords."""

    query: str = Field(description="the new search query")
    new_keywords: list[str] = Field(min_length=1, max_length=5, description="keywords the old query did not use")


class DraftAnswer(BaseModel):
    """An answer written only from the given documents.

    Field order matters to a small model: asked for `found` first, Qwen2.5-1.5B said "no" to nearly
    every question; asked for the answer first, it answers nearly everything — out-of-KB questions
    included. The ungated baseline shows the second behaviour; the grader is what stops it.
    """

    answer: str = Field(description="the answer, from the documents only; empty if they do not contain it")
    found: Literal["yes", "no"] = Field(description="'yes' if the documents contain the answer, otherwise 'no'")


GRADE_PROMPT = """You judge search results. Does the document contain information that answers the question?
Say "yes" only if the document states facts that answer it (fully or in part). A document about the same
company or topic that does not answer this question is "no".

Question: {question}

Document:
{document}"""

REWRITE_PROMPT = """A search for the question below found nothing useful. Write a different search query for the
same question: use other keywords and synonyms, in the question's language, and keep it short.

Question: {question}
Queries already tried: {tried}"""

ANSWER_PROMPT = """Answer the question using ONLY the documents below. Do not use anything you know from elsewhere.
If the documents do not contain the answer, set found to "no". Answer in the question's language, in one to
three sentences.

Question: {question}

Documents:
{documents}"""


@dataclass(frozen=True)
class RoundTrace:
    """What one round did: the query, each document's grade, and the decision taken after grading."""

    round: int
    query: str
    grades: tuple[str, ...]
    decision: str


class LoopState(TypedDict, total=False):
    question: str
    query: str
    round: int
    documents: list[Document]
    grades: list[str]
    relevant: list[Document]
    answer: str
    outcome: str  # "answered" or "not_in_kb"
    trace: list[RoundTrace]


def grade_documents(model: BaseChatModel, question: str, documents: Sequence[Document]) -> list[str]:
    """'yes' or 'no' for every document, in order (introduced in notebook 04)."""
    return [
        invoke_structured(model, GradeDocuments, GRADE_PROMPT.format(question=question, document=doc.page_content)).binary_score
        for doc in documents
    ]


def decide_after_grading(grades: Sequence[str], round_number: int, max_rounds: int) -> str:
    """The stop rule: answer as soon as one document is relevant; otherwise rewrite, until the cap."""
    if "yes" in grades:
        return "generate"
    if round_number >= max_rounds:
        return "not_in_kb"
    return "rewrite"


def not_in_kb_answer(question: str) -> str:
    """The honest answer when the knowledge base has nothing, in the question's language."""
    return NOT_IN_KB[detect_language(question)]


def _format_documents(documents: Sequence[Document]) -> str:
    return "\n\n".join(f"[{i}] {doc.page_content}" for i, doc in enumerate(documents, 1))


def build_grading_loop(model: BaseChatModel, retriever: Retriever, max_rounds: int = DEFAULT_MAX_ROUNDS):
    """A compiled LangGraph graph; invoke it with `{"question": ...}` (introduced in notebook 04)."""
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")

    def retrieve(state: LoopState) -> dict[str, Any]:
        query = state.get("query") or state["question"]
        return {"query": query, "round": state.get("round", 0) + 1, "documents": list(retriever(query))}

    def grade(state: LoopState) -> dict[str, Any]:
        grades = grade_documents(model, state["question"], state["documents"])
        decision = decide_after_grading(grades, state["round"], max_rounds)
        step = RoundTrace(state["round"], state["query"], tuple(grades), decision)
        relevant = [doc for doc, g in zip(state["documents"], grades) if g == "yes"]
        return {"grades": grades, "relevant": relevant, "trace": [*state.get("trace", []), step]}

    def route(state: LoopState) -> str:
        return state["trace"][-1].decision

    def rewrite(state: LoopState) -> dict[str, Any]:
        tried = [step.query for step in state["trace"]]
        prompt = REWRITE_PROMPT.format(question=state["question"], tried="; ".join(tried))
        return {"query": invoke_structured(model, RewrittenQuery, prompt).query}

    def generate(state: LoopState) -> dict[str, Any]:
        prompt = ANSWER_PROMPT.format(question=state["question"], documents=_format_documents(state["relevant"]))
        draft = invoke_structured(model, DraftAnswer, prompt)
        if draft.found == "no" or not draft.answer.strip():
            return {"outcome": "not_in_kb", "answer": not_in_kb_answer(state["question"])}
        return {"outcome": "answered", "answer": draft.answer.strip()}

    def not_in_kb(state: LoopState) -> dict[str, Any]:
        return {"outcome": "not_in_kb", "answer": not_in_kb_answer(state["question"])}

    graph = StateGraph(LoopState)
    for name, step in [("retrieve", retrieve), ("grade", grade), ("rewrite", rewrite), ("generate", generate),
                       ("not_in_kb", not_in_kb)]:
        graph.add_node(name, step)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "grade")
    graph.add_conditional_edges("grade", route, ["generate", "rewrite", "not_in_kb"])
    graph.add_edge("rewrite", "retrieve")
    graph.add_edge("generate", END)
    graph.add_edge("not_in_kb", END)
    return graph.compile()


def answer_without_grading(model: BaseChatModel, retriever: Retriever, question: str) -> LoopState:
    """The ungated baseline: retrieve once and answer from whatever came back (introduced in notebook 04)."""
    documents = list(retriever(question))
    draft = invoke_structured(model, DraftAnswer, ANSWER_PROMPT.format(question=question, documents=_format_documents(documents)))
    answered = draft.found == "yes" and bool(draft.answer.strip())
    return {
        "question": question,
        "documents": documents,
        "outcome": "answered" if answered else "not_in_kb",
        "answer": draft.answer.strip() if answered else not_in_kb_answer(question),
        "round": 1,
        "trace": [],
    }


@dataclass(frozen=True)
class LoopResult:
    """One gold question through the gated loop and the ungated baseline."""

    id: str
    language: str
    type: str
    answerable: bool
    gated_outcome: str
    gated_answer: str
    rounds: int
    first_round_stop: bool
    gated_tokens: int
    gated_calls: int
    ungated_outcome: str
    ungated_answer: str
    ungated_tokens: int
    trace: tuple[RoundTrace, ...]


def _usage_snapshot() -> tuple[int, int]:
    from lessons.usage import USAGE

    return USAGE.totals.pipeline_tokens, USAGE.totals.calls + USAGE.totals.cached_calls


def run_question(loop, ungated: Callable[[str], LoopState], question) -> LoopResult:
    """Run one gold question (a `lessons.corpus.GoldQuestion`) gated and ungated, counting tokens."""
    tokens0, calls0 = _usage_snapshot()
    state = loop.invoke({"question": question.question}, config={"recursion_limit": 50})
    tokens1, calls1 = _usage_snapshot()
    baseline = ungated(question.question)
    tokens2, _ = _usage_snapshot()
    return LoopResult(
        id=question.id,
        language=question.language,
        type=question.type,
        answerable=question.answerable,
        gated_outcome=state["outcome"],
        gated_answer=state["answer"],
        rounds=state["round"],
        first_round_stop=state["round"] == 1 and state["outcome"] == "answered",
        gated_tokens=tokens1 - tokens0,
        gated_calls=calls1 - calls0,
        ungated_outcome=baseline["outcome"],
        ungated_answer=baseline["answer"],
        ungated_tokens=tokens2 - tokens1,
        trace=tuple(state["trace"]),
    )


def summarise(results: Sequence[LoopResult]) -> list[dict[str, Any]]:
    """Per language and overall: abstention on out-of-KB questions, answer rate, first-round stops, cost."""
    rows = []
    for language in ["en", "zh", "all"]:
        group = [r for r in results if language in ("all", r.language)]
        out_of_kb = [r for r in group if not r.answerable]
        in_kb = [r for r in group if r.answerable]
        rows.append({
            "language": language,
            "questions": len(group),
            "abstention (out-of-KB), gated": _share(out_of_kb, lambda r: r.gated_outcome == "not_in_kb"),
            "abstention (out-of-KB), ungated": _share(out_of_kb, lambda r: r.ungated_outcome == "not_in_kb"),
            "answer rate (in-KB), gated": _share(in_kb, lambda r: r.gated_outcome == "answered"),
            "answer rate (in-KB), ungated": _share(in_kb, lambda r: r.ungated_outcome == "answered"),
            "first-round stop (in-KB)": _share(in_kb, lambda r: r.first_round_stop),
            "rounds per question": _mean([r.rounds for r in group]),
            "tokens per question, gated": _mean([r.gated_tokens for r in group]),
            "tokens per question, ungated": _mean([r.ungated_tokens for r in group]),
        })
    return rows


def _share(items: Sequence[Any], predicate: Callable[[Any], bool]) -> float | None:
    return sum(map(predicate, items)) / len(items) if items else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
