"""The course's answer judges: ONE set, used by every notebook that judges answers (05, 06, 07) and by the
evaluation command (`python -m lessons.evaluation.cli`, through `lessons.evaluation.pipelines.evaluate`).

Introduced in notebook 06 (evaluation). Two measurements, each a typed verdict from the chat model that first
copies both sides, then decides ("copy, then decide": asked for a reason and a verdict only, Qwen2.5-1.5B called
every probe answer complete — "2026年2月" and "version 5.2" included; copying first is better, still lenient):

- **faithfulness** — reported as *factual consistency* (`judge_faithfulness`, `FaithfulnessVerdict.consistent`):
  is the answer's main claim stated in the context it was written from? Needs the context, not the reference.
- **completeness** (`judge_completeness`, `CompletenessVerdict.complete`): does the answer state the reference
  answer's key fact (a figure, name, date, version)? Needs the reference, not the context. Every notebook reports
  it as what it is, *complete* (not "correct": it checks one fact, not the whole answer).

`answer_completeness` is the rule every caller applies around the completeness judge: an abstention on an
answerable question scores 0 without a judge call. Whatever fails — an unparseable verdict, an unreachable
model — is a `Judgement` with `status="judge_failed"`, no score and the cause: counted, never guessed.
Both prompts are in English whatever the question's language, and say that wording and language may differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from lessons.core.structured import invoke_structured

MAX_CONTEXT_CHARS = 6000  # a faithfulness judge reads at most this much context (the local window is small)


class FaithfulnessVerdict(BaseModel):
    """Whether the answer's main claim is stated in the context: copy both sides, then decide."""

    answer_claim: str = Field(
        description="the main fact the answer states (a figure, name, date, version…), copied: one short sentence"
    )
    context_says: str = Field(
        description="the ONE sentence or table row of the context that states that fact, copied (not the whole context); empty if none does"
    )
    consistent: Literal["yes", "no"] = Field(
        description="'yes' if context_says states the same fact with the same figures and names; otherwise 'no'"
    )


class CompletenessVerdict(BaseModel):
    """Whether the answer states the reference answer's key fact: copy both sides, then decide."""

    reference_key_fact: str = Field(description="the most important fact of the reference answer, copied")
    answer_says: str = Field(
        description="what the answer says about that fact, copied from the answer; empty if it does not say"
    )
    complete: Literal["yes", "no"] = Field(
        description="'yes' if answer_says states the same fact with the same figures and names; otherwise 'no'"
    )


FAITHFULNESS_PROMPT = """Check an answer against the context it was written from. Find the main fact the answer states,
then what the context says about it. Use only the context, nothing you know from elsewhere: a fact is supported only
if the context states it, and a different number, name or date is a different fact. Wording and language may differ.

{data_rule}

Question: {question}

Context:
{context}

Answer: {answer}"""

COMPLETENESS_PROMPT = """Compare an answer with the reference answer to the same question. Find the reference's most
important fact (a figure, name, date, version), then what the answer says about it. A different number is a
different fact. Wording and language may differ (an English reference can be matched by a Chinese answer).

Question: {question}
Reference answer: {reference}
Answer: {answer}"""

Status = Literal["judged", "judge_failed", "abstained", "not_applicable", "pipeline_error"]


@dataclass(frozen=True)
class Judgement:
    """A 0/1 score with the judge's reason, or no score and why not (`status`, `cause`)."""

    score: int | None
    status: Status
    reason: str = ""
    cause: str | None = None


def run_judge(model: BaseChatModel, schema: type[BaseModel], verdict_field: str, prompt: str) -> Judgement:
    """Ask the judge; 1 for "yes", 0 for "no"; a failure becomes `judge_failed` with its cause, never a guess."""
    try:
        verdict = invoke_structured(model, schema, prompt)
    except Exception as error:  # noqa: BLE001 - an unparseable verdict or an unreachable model is a recorded failure
        return Judgement(None, "judge_failed", cause=f"{type(error).__name__}: {str(error)[:300]}")
    notes = [f"{name}: {value.strip()}" for name, value in verdict.model_dump().items()
             if name != verdict_field and isinstance(value, str)]  # fmt: skip
    return Judgement(int(getattr(verdict, verdict_field) == "yes"), "judged", reason=" · ".join(notes))


def _context_text(context: Sequence[Document], max_chars: int = MAX_CONTEXT_CHARS) -> str:
    """The context as delimited data blocks (`lessons.core.prompt_safety.as_data`), at most `max_chars` of text in all:
    the budget is shared out before wrapping, so no block loses its closing tag."""
    from lessons.core.prompt_safety import as_data

    blocks, room = [], max_chars
    for number, document in enumerate(context, 1):
        if room <= 0:
            break
        text = document.page_content[:room]
        room -= len(text)
        blocks.append(as_data(text, number=number, source=document.metadata.get("source")))
    return "\n\n".join(blocks)


def judge_faithfulness(model: BaseChatModel, question: str, answer: str, context: Sequence[Document]) -> Judgement:
    """1 when every fact of `answer` is stated in `context`, 0 otherwise (typed verdict with a reason)."""
    from lessons.core.prompt_safety import DATA_RULE

    prompt = FAITHFULNESS_PROMPT.format(
        data_rule=DATA_RULE, question=question, context=_context_text(context), answer=answer
    )
    return run_judge(model, FaithfulnessVerdict, "consistent", prompt)


def judge_completeness(model: BaseChatModel, question: str, answer: str, reference: str) -> Judgement:
    """1 when `answer` states every key fact of `reference`, 0 otherwise (typed verdict with a reason)."""
    prompt = COMPLETENESS_PROMPT.format(question=question, reference=reference, answer=answer)
    return run_judge(model, CompletenessVerdict, "complete", prompt)


def answer_completeness(judge: BaseChatModel, question: str, reference: str, answer: str, abstained: bool) -> Judgement:
    """Completeness of an answer to an answerable question: an abstention scores 0 (status "abstained", no judge
    call), any other answer is judged by `judge_completeness`. The one rule notebooks 05, 06, 07 and the
    evaluation command apply."""
    if abstained:
        return Judgement(0, "abstained", "abstained on an answerable question")
    return judge_completeness(judge, question, answer, reference)
