"""Notebook 05's checks pass on the course's own answers and fail on blanks and near misses."""

from typing import Literal

from pydantic import BaseModel, Field

from checks.nb05 import check_routing_rule, check_verdict_schema
from lessons.agents.three_agents import Verification, decide_after_verification


def test_the_verdict_schema_check():
    assert check_verdict_schema(Verification)

    class Blank(BaseModel):
        pass

    class VerdictFirst(BaseModel):
        supported: Literal["yes", "no"]
        relevant: Literal["yes", "no"]
        unsupported_claims: list[str] = Field(description="claims")
        contradictions: list[str] = Field(description="claims")

    class Boolean(BaseModel):
        unsupported_claims: list[str] = Field(description="claims")
        contradictions: list[str] = Field(description="claims")
        supported: str
        relevant: Literal["yes", "no"]

    assert not check_verdict_schema(Blank)
    assert not check_verdict_schema(VerdictFirst)
    assert not check_verdict_schema(Boolean)


def test_the_routing_rule_check():
    assert check_routing_rule(decide_after_verification)
    assert not check_routing_rule(lambda verification, round_number, max_rounds: None)
    assert not check_routing_rule(
        lambda v, r, m: (
            "accept" if v.supported == "yes" and v.relevant == "yes" else ("give_up" if r >= m else "re_research")
        )
    )
