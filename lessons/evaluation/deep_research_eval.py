"""Measuring the deep-research sub-agent against single-shot hybrid RAG on the same gold questions.

Introduced in notebook 07 (deep-research agent). Per question and method: answer completeness (the course's
copy-then-decide completeness judge, `lessons.evaluation.judges`, against the reference answer — the one notebooks
05 and 06 use; an abstention scores 0, a judge failure is recorded, never guessed), evidence recall (the share of the gold evidence quotes found in
what the method *read*: the sub-agent's search snippets and pages, the baseline's top-k chunks), tool
calls, pages read, LLM calls and tokens (cached answers count with the tokens they cost when first
asked) and seconds. The judge's own calls are not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import pandas as pd
from langchain_core.language_models import BaseChatModel

from lessons.agents.deep_research import FULL_TEXT, DeepResearchAgent, Observation
from lessons.core.i18n import t
from lessons.evaluation.harness import measure
from lessons.evaluation.judges import answer_completeness
from lessons.evaluation.metrics import quotes_found
from lessons.evaluation.pipelines import Pipeline
from lessons.evaluation.three_agent_eval import contradiction_case, contradiction_handling
from lessons.ingest.corpus import GoldQuestion
from lessons.ingest.questions import balanced_sample

DEEP = "deep research"
SINGLE_SHOT = "single-shot hybrid"
COLUMNS = ["complete", "evidence recall", "tool calls", "at the cap", "pages read", "LLM calls", "tokens", "seconds"]


@dataclass(frozen=True)
class MethodRun:
    """One gold question through one method, measured. Introduced in notebook 07 (deep-research agent)."""

    id: str
    type: str
    language: str
    method: str
    answer: str
    answered: bool
    complete: float | None  # 1 / 0 from the completeness judge; 0 for an abstention; None when the judge failed
    judge_status: str
    evidence_recall: float
    tool_calls: int
    pages_read: int
    llm_calls: int
    tokens: int
    seconds: float
    contradiction: str = ""
    at_cap: float = float("nan")  # deep research: 1.0 when the step cap, not the model, ended the research


def measure_sample(
    questions: Sequence[GoldQuestion], n_multi_hop: int, n_table: int, seed: int = 0, contradiction: bool = True
) -> list[GoldQuestion]:
    """Multi-hop and table questions, each drawn half English and half Chinese by the course's sampler
    (`lessons.ingest.questions.balanced_sample`: seeded, Chinese taking the odd one), then the contradiction case
    asked in the reader's language (`lessons.evaluation.three_agent_eval.contradiction_case`).

    Introduced in notebook 07 (deep-research agent).
    """
    sample: list[GoldQuestion] = []
    for kind, n in (("multi_hop", n_multi_hop), ("table", n_table)):
        sample += balanced_sample([q for q in questions if q.type == kind], n, seed)
    if contradiction:
        sample.append(contradiction_case(questions))
    return sample


def evidence_recall(texts: Sequence[str], evidence: Sequence[str]) -> float:
    """Share of the evidence quotes found in `texts` (all of them: what a method read). Introduced in notebook 07 (deep-research agent)."""
    return len(quotes_found(texts, evidence)) / len(evidence) if evidence else 0.0


def _judged(judge: BaseChatModel, question: GoldQuestion, answer: str, answered: bool) -> tuple[float | None, str]:
    judgement = answer_completeness(judge, question.question, question.answer, answer, abstained=not answered)
    return (None if judgement.score is None else float(judgement.score)), judgement.status


def _run(question: GoldQuestion, method: str, work, judge: BaseChatModel) -> MethodRun:
    measured = measure(lambda: work(question.question))
    answer, answered, texts, tool_calls, pages_read, *at_cap = measured.value
    meter, seconds = measured.meter, measured.seconds
    complete, status = _judged(judge, question, answer, answered)
    return MethodRun(
        id=question.id,
        type=question.type,
        language=question.language,
        method=method,
        answer=answer,
        answered=answered,
        complete=complete,
        judge_status=status,
        evidence_recall=evidence_recall(texts, question.evidence),
        tool_calls=tool_calls,
        pages_read=pages_read,
        llm_calls=meter.totals.all_calls,
        tokens=meter.totals.pipeline_tokens,
        seconds=seconds,
        contradiction=contradiction_handling(answer) if question.type == "contradiction" else "",
        at_cap=float(at_cap[0]) if at_cap else float("nan"),
    )


def run_deep_research(question: GoldQuestion, agent: DeepResearchAgent, judge: BaseChatModel) -> MethodRun:
    """The sub-agent on one gold question (its standalone question is the gold question). Introduced in notebook 07 (deep-research agent)."""

    def work(text: str):
        result = agent.research(text)
        read = [d.page_content for d in result.evidence] + [
            d.page_content for d in result.context
        ]  # notes + answer's context
        return result.answer, result.found, read, result.tool_calls, len(result.pages_read), result.at_cap

    return _run(question, DEEP, work, judge)


def run_single_shot(question: GoldQuestion, pipeline: Pipeline, judge: BaseChatModel, k: int) -> MethodRun:
    """Single-shot hybrid RAG on one gold question: one retrieval, an answer from the top `k` (notebook 06's
    `hybrid` pipeline). Introduced in notebook 07 (deep-research agent)."""

    def work(text: str):
        result = pipeline(text)
        return result.answer, not result.abstained, [d.page_content for d in result.retrieved[:k]], 1, 0

    return _run(question, SINGLE_SHOT, work, judge)


def runs_table(runs: Sequence[MethodRun]) -> pd.DataFrame:
    """One row per (question, method). Introduced in notebook 07 (deep-research agent)."""
    frame = pd.DataFrame([asdict(r) for r in runs])
    return frame.rename(
        columns={
            "evidence_recall": "evidence recall",
            "tool_calls": "tool calls",
            "pages_read": "pages read",
            "llm_calls": "LLM calls",
            "at_cap": "at the cap",
        }
    )


def compare_methods(runs: Sequence[MethodRun], by: str | None = None) -> pd.DataFrame:
    """Means per method (and per `by`, e.g. "type"), compared on the same questions: completeness, evidence
    recall, tool calls, the share ended by the step cap (deep research), pages read, LLM calls, tokens and
    seconds per question. Introduced in notebook 07 (deep-research agent)."""
    table = runs_table(runs)
    keys = ["method"] + ([by] if by else [])
    summary = table.groupby(keys, sort=False)[COLUMNS].mean()
    summary.insert(0, "questions", table.groupby(keys, sort=False).size())
    failed = table[table["judge_status"] == "judge_failed"].groupby(keys, sort=False).size()
    summary["judge failures"] = failed.reindex(summary.index, fill_value=0)
    return summary


def search_recall(
    questions: Sequence[GoldQuestion], searches: Mapping[str, Callable[[str], Observation]]
) -> pd.DataFrame:
    """What the sub-agent's first search shows it, per reranker: one row per (question, reranker) with the
    evidence recall of the shown hits (their whole chunks) and the seconds the search took.

    Introduced in notebook 07 (deep-research agent). `searches` maps a label to a search tool
    (`lessons.agents.deep_research.ChunkSearch` with a different `reranker` each); each is asked the gold question.
    """
    rows = []
    for question in questions:
        for label, search in searches.items():
            measured = measure(lambda search=search, question=question: search(question.question))
            observation, seconds = measured.value, measured.seconds
            if observation.error:
                raise ValueError(f"search {label!r} failed on {question.id}: {observation.error}")
            texts = [d.metadata.get(FULL_TEXT, d.page_content) for d in observation.evidence]
            rows.append(
                {
                    "id": question.id,
                    "type": question.type,
                    "language": question.language,
                    "reranker": label,
                    "evidence recall": evidence_recall(texts, question.evidence),
                    "seconds": seconds,
                }
            )
    return pd.DataFrame(rows)


def _direction(a: float, b: float, more: str, less: str, same: str = "the same") -> str:
    return more if a > b else less if a < b else same


def method_findings(runs: Sequence[MethodRun]) -> list[str]:
    """The measurement's findings as Markdown bullets, every figure and direction computed from `runs`.

    Introduced in notebook 07 (deep-research agent): complete answers per method, evidence recall per
    question type, how often the step cap (not the model) ended the research, pages read, the cost
    ratio, and what each method did with the contradiction case.
    """
    table = runs_table(runs)
    methods = set(table["method"])
    if methods != {DEEP, SINGLE_SHOT}:
        raise ValueError(f"method_findings needs runs of both {DEEP!r} and {SINGLE_SHOT!r}; got {sorted(methods)}")
    summary = compare_methods(runs)
    deep, shot = summary.loc[DEEP], summary.loc[SINGLE_SHOT]
    n = int(deep["questions"])
    right = {m: int(table.loc[table["method"] == m, "complete"].fillna(0).sum()) for m in (DEEP, SINGLE_SHOT)}
    gap = right[DEEP] - right[SINGLE_SHOT]
    verdict = (
        t("deep research gave {gap} more complete answers", gap=gap)
        if gap > 0
        else t("single-shot gave {gap} more complete answers", gap=-gap)
        if gap < 0
        else t("the same count")
    )
    failures = int(summary["judge failures"].sum())
    lines = [
        t(
            "**Complete: deep research {deep} of {n}, single-shot hybrid {shot} of {n}** — {verdict}. One question moves "
            "a share by {step:.2f}: read directions, not decimals",
            deep=right[DEEP],
            n=n,
            shot=right[SINGLE_SHOT],
            verdict=verdict,
            step=1 / n,
        )
        + (t("; {failures} judge failure(s), counted, not guessed.", failures=failures) if failures else t("."))
    ]
    recall = compare_methods(runs, by="type")["evidence recall"]
    parts = []
    for kind in dict.fromkeys(table["type"]):
        d, s = recall.loc[(DEEP, kind)], recall.loc[(SINGLE_SHOT, kind)]
        parts.append(
            t(
                "{kind} {deep:.2f} against {shot:.2f} ({who})",
                kind=kind.replace("_", "-"),
                deep=d,
                shot=s,
                who=_direction(d, s, t("deep research read more"), t("single-shot read more"), t("the same")),
            )
        )
    lines.append(t("**Evidence recall** (deep research against single-shot): {parts}.", parts=t("; ").join(parts)))
    deep_rows = table[table["method"] == DEEP]
    capped, reading = int(deep_rows["at the cap"].sum()), int((deep_rows["pages read"] > 0).sum())
    lines.append(
        t(
            "**Who ended the research**: the step cap in {capped} of {n} questions, the model's own `answer` in "
            "{own}; it read a page in {reading} of {n}.",
            capped=capped,
            n=n,
            own=n - capped,
            reading=reading,
        )
    )
    token_ratio = deep["tokens"] / shot["tokens"] if shot["tokens"] else float("nan")
    time_ratio = deep["seconds"] / shot["seconds"] if shot["seconds"] else float("nan")
    lines.append(
        t(
            "**Cost per question**: {deep_calls:.1f} model calls and {deep_tokens:,.0f} tokens against {shot_calls:.1f} "
            "and {shot_tokens:,.0f} — {token_ratio:.1f}× the tokens and {time_ratio:.1f}× the seconds ({deep_seconds:.0f} "
            "s against {shot_seconds:.0f} s).",
            deep_calls=deep["LLM calls"],
            deep_tokens=deep["tokens"],
            shot_calls=shot["LLM calls"],
            shot_tokens=shot["tokens"],
            token_ratio=token_ratio,
            time_ratio=time_ratio,
            deep_seconds=deep["seconds"],
            shot_seconds=shot["seconds"],
        )
    )
    case = table[table["type"] == "contradiction"]
    if len(case):
        methods = {DEEP: t("deep research"), SINGLE_SHOT: t("single-shot hybrid")}
        lines.append(
            t(
                "**The contradiction case** (`contradiction_handling`): {cases}.",
                cases=t("; ").join(
                    t("{method}: {handling}", method=methods.get(method, method), handling=handling or t("not read"))
                    for method, handling in zip(case["method"], case["contradiction"])
                ),
            )
        )
    return lines
