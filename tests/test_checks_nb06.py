"""The checks of notebook 06 reject the usual mistakes and accept the course's answers."""

from typing import Literal

from pydantic import BaseModel, Field

from checks.nb06 import check_completeness_schema, check_mrr
from lessons.evaluation.judges import CompletenessVerdict
from lessons.evaluation.metrics import mrr_at_k


def test_mrr_check_accepts_the_course_metric():
    assert check_mrr(mrr_at_k)


def test_mrr_check_rejects_common_mistakes():
    def zero_based(labels, k):
        return next((1.0 / max(i, 1) for i, hit in enumerate(labels[:k]) if hit), 0.0)

    def sums_all_hits(labels, k):
        return sum(1.0 / r for r, hit in enumerate(labels[:k], 1) if hit)

    def ignores_k(labels, k):
        return next((1.0 / r for r, hit in enumerate(labels, 1) if hit), 0.0)

    for wrong in (zero_based, sums_all_hits, ignores_k):
        assert not check_mrr(wrong), wrong.__name__


def test_schema_check_accepts_the_course_schema_and_rejects_a_verdict_first_one():
    assert check_completeness_schema(CompletenessVerdict)

    class VerdictFirst(BaseModel):
        """Verdict first."""

        complete: Literal["yes", "no"] = Field(description="yes or no")
        reference_key_fact: str = Field(description="copied")
        answer_says: str = Field(description="copied")

    class FreeText(BaseModel):
        """A verdict as free text."""

        reference_key_fact: str = Field(description="copied")
        answer_says: str = Field(description="copied")
        complete: str = Field(description="yes or no")

    assert not check_completeness_schema(VerdictFirst)
    assert not check_completeness_schema(FreeText)
