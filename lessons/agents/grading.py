"""The grading loop: grade what was retrieved, rewrite the query if nothing helps, stop at a cap,
and say "not in the knowledge base" on its own path instead of making an answer up.

Introduced in notebook 04 (grading loop). A small LangGraph graph:

    retrieve → grade → generate → END                 (at least one relevant document)
                   ↘ rewrite → retrieve …             (none relevant, rounds left)
                   ↘ not_in_kb → END                  (none relevant at the cap)
    generate → not_in_kb when the generator itself finds no answer in the relevant documents

The round counter lives in the state and is advanced by the `retrieve` step, never in a router, and
the router cannot choose `rewrite` once the cap is reached: the loop ends by construction.

Two graders return the same typed verdict (`GradeDocuments`):
- `StructuredGrader`: the model fills `GradeDocuments` through `invoke_structured` (function calling).
- `RelevanceGate`: the relevance model (the cross-encoder) scores every document; the chat model answers
  yes/no in one token for the documents that pass its threshold, and P(yes) is read from its
  log-probabilities (the reranker of notebook 02) and compared with a second threshold. Both thresholds
  per language are chosen on held-out questions (`calibrate_gate`); a bare number is a P(yes)-only gate.
  A small model's forced yes/no is a coin with a bias; its probability ranks far better, and the
  thresholds set the trade-off between answering and abstaining explicitly.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from langgraph.graph import END, START
from pydantic import BaseModel, Field

from lessons.agents.answerability import AnswerabilityCheck, AnswerabilityVerdict
from lessons.agents.answering import ANSWER_PROMPT, format_context, not_in_kb_answer
from lessons.agents.graphs import compile_graph
from lessons.core.i18n import N_, t
from lessons.core.prompt_safety import DATA_RULE, as_data
from lessons.core.reports import mean_or_none, share_where
from lessons.core.search_text import search_text
from lessons.core.structured import invoke_structured
from lessons.retrieval.rerank import RELEVANCE_PROMPTS, RELEVANCE_SCORE, LLMRelevanceScorer, get_cross_encoder
from lessons.text.language import detect_language

Retriever = Callable[[str], Sequence[Document]]

DEFAULT_MAX_ROUNDS = 3


class GradeDocuments(BaseModel):
    """Binary relevance of one retrieved document to the question."""

    binary_score: Literal["yes", "no"] = Field(
        # marked (N_) so that notebook 04 shows it in the reader's language; the model reads the English
        description=N_("'yes' if the document contains information that answers the question, otherwise 'no'")
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
company or topic that does not answer this question is "no". <<DATA_RULE>>

Question: {question}

Document:
{document}""".replace("<<DATA_RULE>>", DATA_RULE)

REWRITE_PROMPT = """A search for the question below found nothing useful. Write a NEW search query for the same
question. Do not repeat the question or a query already tried: use other keywords, synonyms and the terms a
manual or policy would use, in the question's language. Keep it short (a few keywords are fine).

Question: {question}
Queries already tried (do not repeat them): {tried}"""


@dataclass(frozen=True)
class RoundTrace:
    """What one round did: the query, each document's grade (and P(yes) when the grader reads one), the decision."""

    round: int
    query: str
    grades: tuple[str, ...]
    decision: str
    p_yes: tuple[float | None, ...] = ()
    cross_encoder: tuple[float | None, ...] = ()
    check: AnswerabilityVerdict | None = None  # the answerability check's verdict, when the grader ran it


@dataclass(frozen=True)
class Grade:
    """A typed verdict for one document, with the probability behind it when the grader has one."""

    verdict: GradeDocuments
    p_yes: float | None = None
    cross_encoder: float | None = None
    check: AnswerabilityVerdict | None = None  # the round's answerability verdict (`AnswerabilityGate`)

    @property
    def binary_score(self) -> str:
        return self.verdict.binary_score


Grader = Callable[[str, Sequence[Document]], list[Grade]]


class StructuredGrader:
    """Grades with `GradeDocuments` filled by the model through `invoke_structured` (introduced in notebook 04)."""

    def __init__(self, model: BaseChatModel, prompt: str | None = None):
        self.model, self.prompt = model, prompt or GRADE_PROMPT

    def __call__(self, question: str, documents: Sequence[Document]) -> list[Grade]:
        return [
            Grade(
                invoke_structured(
                    self.model, GradeDocuments, self.prompt.format(question=question, document=as_data(d.page_content))
                )
            )
            for d in documents
        ]


def _per_language(value: Any, what: str, fix: str) -> dict[str, Any]:
    """One value for both languages, or a mapping that must name "en" and "zh"."""
    per_language = dict(value) if isinstance(value, Mapping) else {"en": value, "zh": value}
    missing = {"en", "zh"} - set(per_language)
    if missing:
        raise ValueError(f"no {what} for {sorted(missing)}: {fix}")
    return per_language


@dataclass(frozen=True)
class GateThresholds:
    """One language's gate: a document is relevant when the cross-encoder's score reaches `cross_encoder`
    AND the chat model's P(yes) reaches `p_yes`. 0.0 switches a signal off."""

    cross_encoder: float
    p_yes: float

    def admits(self, pairs: Sequence[tuple[float, float]]) -> bool:
        """Whether a question is answered in round one: one of its (cross-encoder score, P(yes)) pairs reaches both."""
        return any(ce >= self.cross_encoder and p >= self.p_yes for ce, p in pairs)


class RelevanceGate:
    """The grading loop's gate from two signals (introduced in notebook 04): the relevance model and the chat model.

    The cross-encoder (`lessons.retrieval.cross_encoder`, far cheaper a passage than a chat-model call) scores every
    retrieved document; the chat model's P(yes), asked in the question's language, is read only for documents whose
    cross-encoder score reaches the language's threshold — a document below it is "no" without a model call. Both
    thresholds per language are chosen on calibration questions by `calibrate_gate`. The verdict is a
    typed `GradeDocuments`; `p_yes` keeps the chat model's probability (None when it was not asked).
    """

    def __init__(
        self,
        model: BaseChatModel,
        thresholds: GateThresholds | float | Mapping[str, GateThresholds | float],
        cross_encoder=None,
        max_chars: int = 1500,
        prompts: ChatPromptTemplate | Mapping[str, ChatPromptTemplate] = RELEVANCE_PROMPTS,
    ):
        thresholds = _per_language(thresholds, "gate thresholds", "calibrate them with calibrate_gate(...)")
        self.thresholds = {
            language: t if isinstance(t, GateThresholds) else GateThresholds(0.0, float(t))
            for language, t in thresholds.items()
        }  # a bare number: a P(yes)-only gate
        for language, gate in self.thresholds.items():
            for name, value in (("cross-encoder", gate.cross_encoder), ("P(yes)", gate.p_yes)):
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"the {name} threshold ({language}) is a score between 0 and 1, got {value}")
        self.cross_encoder = cross_encoder or get_cross_encoder()  # the configured one: the packaged model by default
        prompts = _per_language(prompts, "prompt", "give one per language or one for both")
        self.scorers = {
            language: LLMRelevanceScorer(model, prompt=prompt, max_chars=max_chars, max_concurrency=1)
            for language, prompt in prompts.items()
        }

    def cross_encoder_scores(self, question: str, documents: Sequence[Document]) -> list[float]:
        """The cross-encoder's score for each document: the one the reranker recorded (`metadata[RELEVANCE_SCORE]`),
        else scored here as the reranker reads it (context header + text)."""
        missing = [d for d in documents if d.metadata.get(RELEVANCE_SCORE) is None]
        fresh = iter(self.cross_encoder.score([(question, search_text(d)) for d in missing]) if missing else [])
        return [float(d.metadata[RELEVANCE_SCORE] if d.metadata.get(RELEVANCE_SCORE) is not None else next(fresh))
                for d in documents]  # fmt: skip

    def p_yes(self, question: str, documents: Sequence[Document]) -> list[float]:
        """The chat model's P(yes) for each document, asked in the question's language (one call each)."""
        return self.scorers[detect_language(question)].score([(question, d.page_content) for d in documents])

    def __call__(self, question: str, documents: Sequence[Document]) -> list[Grade]:
        gate = self.thresholds[detect_language(question)]
        ce = self.cross_encoder_scores(question, documents)
        asked = [i for i, score in enumerate(ce) if score >= gate.cross_encoder]
        p = dict(zip(asked, self.p_yes(question, [documents[i] for i in asked]) if asked else []))
        return [
            Grade(GradeDocuments(binary_score="yes" if i in p and p[i] >= gate.p_yes else "no"), p.get(i), ce[i])
            for i in range(len(documents))
        ]


# The gate used where no calibration was run (the evaluation command, notebook 06's grading loop): the gate that
# benchmarks/bench_gate.py calibrates on EVERY course gold question (top 3 of notebook 04's retrieval, ≥ 95 %
# abstention; benchmarks/results/gate.json, which a test keeps equal to this). Both signals were offered; the best
# gate ignores the cross-encoder (t₁ = 0). What it refuses and answers is in that file — on the course corpus those
# are in-sample figures, and thresholds chosen on one corpus need not travel to another: calibrate on your own
# questions.
DEFAULT_GATE = {"en": GateThresholds(0.0, 0.772), "zh": GateThresholds(0.0, 0.771)}
DEFAULT_GATE_SOURCE = N_(  # the English goes into reports; a notebook shows it with t_marked
    "the gate calibrated on every gold question of the course corpus by benchmarks/bench_gate.py "
    "(lessons.agents.grading.DEFAULT_GATE)"
)


GATE_FILE_SOURCE = N_(
    "the gate calibrated on your documents by the evaluation command (the file AGENTIC_RAG_GATE_FILE names)"
)


def save_gate(path: Path, thresholds: Mapping[str, GateThresholds], calibrated_on: Mapping[str, Any]) -> None:
    """Write the grading loop's gate thresholds (`GateThresholds` per language) as JSON, with what they were calibrated
    on (`calibrated_on`: documents, question counts), for `load_gate` — the evaluation command's `[gate] calibrate`
    writes one; `AGENTIC_RAG_GATE_FILE` pointing at it makes the evaluation and the service use it."""
    data = {"thresholds": {language: vars(gate) for language, gate in sorted(thresholds.items())},
            "calibrated_on": dict(calibrated_on)}  # fmt: skip
    Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def load_gate(path: Path) -> dict[str, GateThresholds]:
    """The gate thresholds `save_gate` wrote to `path`. A file that is missing or not such a file raises a
    `SettingsError` naming it and the fix (never a silent fall-back to the course's thresholds)."""
    from lessons.core.settings import SettingsError

    fix = ("write it with the evaluation command's `[gate] calibrate = N` (it saves gate.json in its output folder), "
           "or unset AGENTIC_RAG_GATE_FILE to use the course corpus's thresholds")  # fmt: skip
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"AGENTIC_RAG_GATE_FILE={path}: no such file — {fix}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SettingsError(f"AGENTIC_RAG_GATE_FILE={path}: not a gate file ({error}) — {fix}") from None
    thresholds = data.get("thresholds") if isinstance(data, dict) else None
    gates = {}
    for language in ("en", "zh"):
        entry = thresholds.get(language) if isinstance(thresholds, dict) else None
        try:
            gate = GateThresholds(float(entry["cross_encoder"]), float(entry["p_yes"]))
        except (TypeError, KeyError, ValueError):
            raise SettingsError(
                f"AGENTIC_RAG_GATE_FILE={path}: no {language} thresholds (cross_encoder, p_yes) — {fix}"
            ) from None
        if not (0.0 <= gate.cross_encoder <= 1.0 and 0.0 <= gate.p_yes <= 1.0):
            raise SettingsError(f"AGENTIC_RAG_GATE_FILE={path}: the {language} thresholds are scores between 0 and 1, "
                                f"got {vars(gate)} — {fix}")  # fmt: skip
        gates[language] = gate
    return gates


def default_gate(
    model: BaseChatModel,
    thresholds: Mapping[str, GateThresholds] | None = None,
    *,
    answerability: bool = True,
    subject: Collection[str] = (),
) -> RelevanceGate | AnswerabilityGate:
    """The grading loop's gate — one call for every pipeline: the `RelevanceGate` with `thresholds` (default
    `DEFAULT_GATE`), followed by the answerability check (`AnswerabilityGate`) unless `answerability` is False.
    `subject`: the knowledge base's `common_names`, which the check does not ask every chunk to repeat."""
    gate = RelevanceGate(model, thresholds or DEFAULT_GATE)
    check = AnswerabilityCheck(model, subject=subject)
    return AnswerabilityGate(gate, check) if answerability else gate


class AnswerabilityGate:
    """The grading loop's gate with the answerability check (introduced in notebook 04): the `RelevanceGate`'s
    grades first; when one document passes, the check (`lessons.agents.answerability`, one chat-model call) asks
    the judge for its evidence, verifies it in code and applies its own P(yes) threshold to the P(yes) the gate
    just read. Answerable: the gate's relevant documents and the one holding the quote are "yes"; otherwise every
    document is "no", so the loop rewrites or says "not in the knowledge base". Each grade carries the verdict.
    """

    def __init__(self, gate: RelevanceGate, check: AnswerabilityCheck):
        self.gate, self.check = gate, check

    def p_yes(self, question: str, documents: Sequence[Document]) -> list[float]:
        return self.gate.p_yes(question, documents)

    def cross_encoder_scores(self, question: str, documents: Sequence[Document]) -> list[float]:
        return self.gate.cross_encoder_scores(question, documents)

    def __call__(self, question: str, documents: Sequence[Document]) -> list[Grade]:
        grades = self.gate(question, documents)
        if not any(g.binary_score == "yes" for g in grades):
            return grades
        verdict = self.check(question, documents, p_yes=[g.p_yes for g in grades])
        yes = GradeDocuments(binary_score="yes")
        no = GradeDocuments(binary_score="no")
        return [
            Grade(
                yes if verdict.answerable and (g.binary_score == "yes" or i == verdict.document) else no,
                g.p_yes,
                g.cross_encoder,
                verdict,
            )
            for i, g in enumerate(grades)
        ]


def _candidates(values: Sequence[float]) -> list[float]:
    """0, the midpoints between neighbouring observed values, and a value above the largest."""
    ordered = sorted(set(values))
    return [
        0.0,
        *[(a + b) / 2 for a, b in itertools.pairwise(ordered)],
        *([(ordered[-1] + 1.0) / 2] if ordered else []),
    ]


def calibrate_gate(
    in_kb: Sequence[Sequence[tuple[float, float]]],
    out_of_kb: Sequence[Sequence[tuple[float, float]]],
    min_abstention: float = 0.95,
) -> GateThresholds:
    """The gate thresholds that answer the most in-KB questions while abstaining on `min_abstention` of the
    out-of-KB ones (introduced in notebook 04).

    Each question is a list of (cross-encoder score, P(yes)) pairs, one per retrieved document; a question
    is answered in round one when one document reaches both thresholds. Among the gates that answer the
    most, the one with the widest **margin** wins: the distance every calibration question's decision
    would survive (how far its best passing document lies inside the gate, or its nearest document lies
    outside). A gate pressed against one question's score — a t₁ just below the weakest in-KB question of a
    small calibration set — flips on the next question; the one in the middle of the feasible region does
    not. Remaining ties go to the higher cross-encoder threshold: it asks the chat model about fewer documents.
    """
    if not out_of_kb:
        raise ValueError("calibrate_gate needs out-of-KB questions: abstention cannot be measured without them")

    pairs = [pair for question in [*in_kb, *out_of_kb] for pair in question]
    best, best_key = GateThresholds(1.0, 1.0), (-1.0, -1.0, -1.0)
    for t_ce in _candidates([ce for ce, _ in pairs]):
        for t_p in _candidates([p for _, p in pairs]):
            gate = GateThresholds(t_ce, t_p)
            abstention = sum(not gate.admits(q) for q in out_of_kb) / len(out_of_kb)
            if abstention + 1e-12 < min_abstention:
                continue
            key = (
                sum(gate.admits(q) for q in in_kb) / max(len(in_kb), 1),
                gate_margin([*in_kb, *out_of_kb], gate),
                t_ce,
            )
            if key > best_key:
                best, best_key = gate, key
    return best


def gate_margin(questions: Sequence[Sequence[tuple[float, float]]], gate: GateThresholds) -> float:
    """How far the thresholds could move (in either score, both on 0–1) before one question's decision flips.

    An answered question's margin is how deep its best document lies inside the gate (the smaller of its
    two distances to the thresholds); an unanswered one's is how far its nearest document lies outside (the
    larger shortfall). A threshold of 0 is a signal switched off: it has no boundary to cross.
    """

    def inside(value: float, threshold: float) -> float:
        return math.inf if threshold <= 0 else value - threshold

    margins = []
    for question in questions:
        depths = [min(inside(ce, gate.cross_encoder), inside(p, gate.p_yes)) for ce, p in question]
        passing = [d for d in depths if d >= 0]
        margins.append(max(passing) if passing else min(-d for d in depths) if depths else math.inf)
    return min(margins, default=math.inf)


def gate_operating_point(
    in_kb: Sequence[Sequence[tuple[float, float]]],
    out_of_kb: Sequence[Sequence[tuple[float, float]]],
    gate: GateThresholds,
) -> dict[str, float]:
    """What a gate does to a set of questions (each a list of (cross-encoder, P(yes)) pairs): the share of in-KB
    questions it answers in round one and the share of out-of-KB questions it refuses (introduced in benchmarks/bench_gate.py)."""
    return {
        "first_round": sum(gate.admits(q) for q in in_kb) / len(in_kb) if in_kb else float("nan"),
        "abstention": sum(not gate.admits(q) for q in out_of_kb) / len(out_of_kb) if out_of_kb else float("nan"),
    }


def split_half_transfer(
    in_kb: Sequence[Sequence[tuple[float, float]]],
    out_of_kb: Sequence[Sequence[tuple[float, float]]],
    splits: int = 40,
    seed: int = 0,
    min_abstention: float = 0.95,
) -> dict[str, float]:
    """How well a gate calibrated on half the questions does on the other half, over `splits` seeded halvings:
    mean first-round share and abstention there, and the share of splits that kept `min_abstention`.

    A gate chosen on a small calibration set sits against its hardest out-of-KB question; this says how often
    that choice still holds on questions it has not seen (introduced in benchmarks/bench_gate.py).
    """
    if len(in_kb) < 2 or len(out_of_kb) < 2:
        raise ValueError("split_half_transfer needs at least two in-KB and two out-of-KB questions to halve")
    rng = random.Random(seed)
    first, refused, held = [], [], 0
    for _ in range(splits):
        inside, outside = list(in_kb), list(out_of_kb)
        rng.shuffle(inside)
        rng.shuffle(outside)
        half_in, half_out = len(inside) // 2, len(outside) // 2
        gate = calibrate_gate(inside[:half_in], outside[:half_out], min_abstention)
        point = gate_operating_point(inside[half_in:], outside[half_out:], gate)
        first.append(point["first_round"])
        refused.append(point["abstention"])
        held += point["abstention"] + 1e-12 >= min_abstention
    return {
        "first_round": sum(first) / splits,
        "abstention": sum(refused) / splits,
        "splits_holding_abstention": held / splits,
    }


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion: what `successes` out of `n` says about the true rate.

    Small samples are honest about their uncertainty: 4/4 gives (0.51, 1.00), not "100%" (notebook 04).
    """
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def choose_threshold(
    in_kb_scores: Sequence[float], out_of_kb_scores: Sequence[float], min_abstention: float = 0.95
) -> float:
    """The lowest threshold that still abstains on `min_abstention` of the out-of-KB questions.

    Each score is a question's best P(yes) among its retrieved documents: a question is answered when
    its best document reaches the threshold. Lower thresholds answer more in-KB questions, so the
    lowest one that keeps abstention at the goal is the best trade-off. Candidates lie halfway between
    neighbouring scores, not on a score, so a new question scoring a hair above a calibration
    question is not decided by chance (introduced in notebook 04).
    """
    if not out_of_kb_scores:
        raise ValueError(
            "choose_threshold needs scores of out-of-KB questions: abstention cannot be measured without them"
        )
    for threshold in [*_candidates([*in_kb_scores, *out_of_kb_scores]), 1.0]:
        abstained = sum(s < threshold for s in out_of_kb_scores) / len(out_of_kb_scores)
        if abstained >= min_abstention:
            return threshold
    return 1.0


def separation_auc(in_kb_scores: Sequence[float], out_of_kb_scores: Sequence[float]) -> float:
    """How well a score separates answerable from out-of-KB questions: the chance that a random in-KB
    question scores higher than a random out-of-KB one (ties count half). 1.0 separates perfectly, 0.5 is
    a coin. The area under the ROC curve, computed directly (introduced in notebook 04).
    """
    if not in_kb_scores or not out_of_kb_scores:
        raise ValueError("separation_auc needs scores of both in-KB and out-of-KB questions")
    wins = sum((a > b) + 0.5 * (a == b) for a in in_kb_scores for b in out_of_kb_scores)
    return wins / (len(in_kb_scores) * len(out_of_kb_scores))


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
    """'yes' or 'no' for every document, in order, from the structured grader (introduced in notebook 04)."""
    return [grade.binary_score for grade in StructuredGrader(model)(question, documents)]


def _normalise(query: str) -> str:
    return " ".join(query.casefold().split()).strip(" ?？。.!！")


def new_query(rewritten: RewrittenQuery, question: str, tried: Sequence[str]) -> str:
    """The rewrite's query if it is new; else the question plus the keywords not searched yet.

    Small models often hand the question back unchanged; searching it again would return the same
    documents and waste a round (introduced in notebook 04).
    """
    seen = {_normalise(q) for q in [question, *tried]}
    if rewritten.query.strip() and _normalise(rewritten.query) not in seen:
        return rewritten.query.strip()
    searched = " ".join(seen)
    fresh = [k.strip() for k in rewritten.new_keywords if k.strip() and _normalise(k) not in searched]
    return f"{question} {' '.join(fresh)}" if fresh else question


def decide_after_grading(grades: Sequence[str], round_number: int, max_rounds: int) -> str:
    """The stop rule: answer as soon as one document is relevant; otherwise rewrite, until the cap."""
    if "yes" in grades:
        return "generate"
    if round_number >= max_rounds:
        return "not_in_kb"
    return "rewrite"


def build_grading_loop(
    model: BaseChatModel, retriever: Retriever, max_rounds: int = DEFAULT_MAX_ROUNDS, grader: Grader | None = None
):
    """A compiled LangGraph graph; invoke it with `{"question": ...}` (introduced in notebook 04).

    `grader` defaults to `StructuredGrader(model)`; pass a `RelevanceGate` to grade by the two calibrated signals.
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
    grader = grader or StructuredGrader(model)

    def retrieve(state: LoopState) -> dict[str, Any]:
        query = state.get("query") or state["question"]
        return {"query": query, "round": state.get("round", 0) + 1, "documents": list(retriever(query))}

    def grade(state: LoopState) -> dict[str, Any]:
        graded = grader(state["question"], state["documents"])
        grades = [g.binary_score for g in graded]
        decision = decide_after_grading(grades, state["round"], max_rounds)
        step = RoundTrace(
            state["round"],
            state["query"],
            tuple(grades),
            decision,
            tuple(g.p_yes for g in graded),
            tuple(g.cross_encoder for g in graded),
            graded[0].check if graded else None,
        )
        relevant = [doc for doc, g in zip(state["documents"], grades) if g == "yes"]
        return {"grades": grades, "relevant": relevant, "trace": [*state.get("trace", []), step]}

    def route(state: LoopState) -> str:
        return state["trace"][-1].decision

    def rewrite(state: LoopState) -> dict[str, Any]:
        tried = [step.query for step in state["trace"]]
        prompt = REWRITE_PROMPT.format(question=state["question"], tried="; ".join(tried))
        return {"query": new_query(invoke_structured(model, RewrittenQuery, prompt), state["question"], tried)}

    def generate(state: LoopState) -> dict[str, Any]:
        prompt = ANSWER_PROMPT.format(
            question=state["question"], documents=format_context(state["relevant"], max_chars=None, pages=False)
        )
        draft = invoke_structured(model, DraftAnswer, prompt)
        if draft.found == "no" or not draft.answer.strip():
            return {"outcome": N_("not_in_kb"), "answer": not_in_kb_answer(state["question"])}
        return {"outcome": N_("answered"), "answer": draft.answer.strip()}

    def not_in_kb(state: LoopState) -> dict[str, Any]:
        return {"outcome": N_("not_in_kb"), "answer": not_in_kb_answer(state["question"])}

    return compile_graph(
        LoopState,
        nodes={"retrieve": retrieve, "grade": grade, "rewrite": rewrite, "generate": generate, "not_in_kb": not_in_kb},
        edges={
            START: "retrieve",
            "retrieve": "grade",
            "grade": (route, ["generate", "rewrite", "not_in_kb"]),
            "rewrite": "retrieve",
            "generate": END,
            "not_in_kb": END,
        },
    )


def answer_without_grading(model: BaseChatModel, retriever: Retriever, question: str) -> LoopState:
    """The ungated baseline: retrieve once and answer from whatever came back (introduced in notebook 04)."""
    documents = list(retriever(question))
    draft = invoke_structured(
        model,
        DraftAnswer,
        ANSWER_PROMPT.format(question=question, documents=format_context(documents, max_chars=None, pages=False)),
    )
    answered = draft.found == "yes" and bool(draft.answer.strip())
    return {
        "question": question,
        "documents": documents,
        "outcome": N_("answered") if answered else N_("not_in_kb"),
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


def run_question(loop, ungated: Callable[[str], LoopState], question) -> LoopResult:
    """Run one gold question (a `lessons.ingest.corpus.GoldQuestion`) gated and ungated, counting tokens."""
    from lessons.core.usage import metered

    with metered() as gated:
        state = loop.invoke({"question": question.question}, config={"recursion_limit": 50})
    with metered() as plain:
        baseline = ungated(question.question)
    return LoopResult(
        id=question.id,
        language=question.language,
        type=question.type,
        answerable=question.answerable,
        gated_outcome=state["outcome"],
        gated_answer=state["answer"],
        rounds=state["round"],
        first_round_stop=state["round"] == 1 and state["outcome"] == "answered",
        gated_tokens=gated.totals.pipeline_tokens,
        gated_calls=gated.totals.all_calls,
        ungated_outcome=baseline["outcome"],
        ungated_answer=baseline["answer"],
        ungated_tokens=plain.totals.pipeline_tokens,
        trace=tuple(state["trace"]),
    )


def summarise(results: Sequence[LoopResult]) -> list[dict[str, Any]]:
    """Per language and overall: abstention on out-of-KB questions, answer rate, first-round stops, cost."""
    rows = []
    for language in ["en", "zh", "all"]:
        group = [r for r in results if language in ("all", r.language)]
        out_of_kb = [r for r in group if not r.answerable]
        in_kb = [r for r in group if r.answerable]
        rows.append(
            {
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
            }
        )
    return rows


_share, _mean = share_where, mean_or_none  # one way each (`lessons.core.reports`)


def goal_table(
    results: Sequence[LoopResult], min_abstention: float = 0.95, min_first_round: float = 0.90
) -> list[dict[str, Any]]:
    """Per language, the gate's two goals with the 95% interval that the sample size allows (notebook 04):
    abstention on out-of-KB questions and first-round stops on in-KB ones."""
    rows = []
    for language in ("en", "zh"):
        group = [r for r in results if r.language == language]
        for goal, items, hit, target in (
            (
                t("abstention (out-of-KB)"),
                [r for r in group if not r.answerable],
                lambda r: r.gated_outcome == "not_in_kb",
                min_abstention,
            ),
            (
                t("first-round stop (in-KB)"),
                [r for r in group if r.answerable],
                lambda r: r.first_round_stop,
                min_first_round,
            ),
        ):
            k, n = sum(map(hit, items)), len(items)
            low, high = wilson_interval(k, n)
            rows.append(
                {
                    "language": language,
                    "goal": goal,
                    "target": target,
                    "measured": k / n if n else None,
                    "count": f"{k}/{n}",
                    "95% interval": f"{low:.2f}–{high:.2f}",
                    "verdict": t("no data")
                    if not n
                    else t("met")
                    if k / n >= target
                    else t("missed (the interval reaches the target)")
                    if high >= target
                    else t("missed"),
                }
            )
    return rows


def gate_findings(
    results: Sequence[LoopResult], menu, goals, evidence_in_top_k: Mapping[str, bool], *, k: int, max_rounds: int
) -> str:
    """Notebook 04's findings as Markdown, every figure read from the run (introduced in notebook 04).

    `menu`: the calibration table indexed by language (thresholds, separations); `goals`: `goal_table` as a
    DataFrame; `evidence_in_top_k`: for each evaluated in-KB question, whether its reranked top k holds the evidence.
    """
    from lessons.core.prose import pct, share

    lines = []
    for language, label in (("en", t("English")), ("zh", t("Chinese"))):
        group = [r for r in results if r.language == language]
        outside = [r for r in group if not r.answerable]
        inside = [r for r in group if r.answerable]
        gated_abstained = sum(r.gated_outcome == "not_in_kb" for r in outside)
        ungated_answered = sum(r.ungated_outcome == "answered" for r in outside)
        row = menu.loc[language]
        ce_auc, p_auc = row["separation, cross-encoder"], row["separation, P(yes)"]
        lines.append(
            t(
                "- **{label}, calibration:** t₁ = {t1:.2f} (cross-encoder), t₂ = {t2:.2f} (P(yes)); separation {ce_auc:.2f} "
                "for the cross-encoder's best score and {p_auc:.2f} for the best P(yes) — {better}.",
                label=label,
                t1=row["t₁ cross-encoder"],
                t2=row["t₂ P(yes)"],
                ce_auc=ce_auc,
                p_auc=p_auc,
                better=t("the cross-encoder separates better")
                if ce_auc > p_auc
                else t("the chat model separates better")
                if p_auc > ce_auc
                else t("the two alike"),
            )
        )
        if outside:
            lines.append(
                t(
                    "- **{label}, out-of-KB:** the gate abstained on {abstained}; without it the pipeline answered {answered} "
                    "of these questions from chunks that do not hold the answer — {caught}.",
                    label=label,
                    abstained=share(gated_abstained, len(outside)),
                    answered=share(ungated_answered, len(outside)),
                    caught=t("hallucinations the gate caught")
                    if ungated_answered
                    else t("no hallucination to catch in this sample"),
                )
            )
        if inside:
            first = sum(r.first_round_stop for r in inside)
            gated = sum(r.gated_outcome == "answered" for r in inside)
            ungated = sum(r.ungated_outcome == "answered" for r in inside)
            ceiling = [evidence_in_top_k[r.id] for r in inside if r.id in evidence_in_top_k]
            held = sum(ceiling)
            if held > first:
                reading = t("retrieval left room: the gate refused some questions whose evidence was there")
            elif held == first and held < len(ceiling):
                reading = t(
                    "retrieval was the limit: first-round stops cannot exceed {share} with this top {k}",
                    share=pct(held / len(ceiling)),
                    k=k,
                )
            elif held == first:
                reading = t("retrieval and gate agree on every question")
            else:
                reading = t("the gate also let through questions whose top chunks hold no evidence quote word for word")
            lines.append(
                t(
                    "- **{label}, in-KB:** answered {gated} gated against {ungated} ungated; {first} in the first round. The "
                    "reranked top {k} held the evidence for {held} of them — {reading}.",
                    label=label,
                    gated=share(gated, len(inside)),
                    ungated=share(ungated, len(inside)),
                    first=share(first, len(inside)),
                    k=k,
                    held=share(held, len(ceiling)),
                    reading=reading,
                )
            )
    for _, goal in goals.iterrows():
        lines.append(
            t(
                "- **Goal, {language} {goal}:** {count} ({measured}, 95% interval {interval}) against ≥ {target} — "
                "{verdict}.",
                language=goal["language"],
                goal=goal["goal"],
                count=goal["count"],
                measured="n/a" if goal["measured"] is None else pct(goal["measured"]),
                interval=goal["95% interval"],
                target=pct(goal["target"]),
                verdict=goal["verdict"],
            )
        )
    rounds = sum(r.rounds for r in results) / max(len(results), 1)
    lines.append(
        t(
            "- **Cost:** {rounds:.2f} rounds per question on average (cap {max_rounds}); {calls:.1f} chat-model "
            "calls per question gated.",
            rounds=rounds,
            max_rounds=max_rounds,
            calls=sum(r.gated_calls for r in results) / max(len(results), 1),
        )
    )
    return "\n".join(lines)
