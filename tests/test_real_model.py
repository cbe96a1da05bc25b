"""Integration: the real offline chat model through the real server and the structured helper.

Only clear-cut cases are asserted: near-ties can flip between model versions.
"""

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from lessons.core.models import get_chat_model
from lessons.core.structured import invoke_structured
from lessons.core.usage import USAGE

pytestmark = pytest.mark.model


class GradeDocument(BaseModel):
    """Whether a document helps to answer a question."""

    binary_score: Literal["yes", "no"] = Field(description="'yes' if the document helps answer the question")


CASES = [
    ("Atlas Server listens on port 7420 by default.", "Which port does Atlas Server listen on?", "yes"),
    ("Atlas Server listens on port 7420 by default.", "What is the capital of Peru?", "no"),
    ("鹿特丹的员工每年有 27 天年假。", "鹿特丹员工有多少天年假？", "yes"),
    ("鹿特丹的员工每年有 27 天年假。", "How do I bake sourdough bread?", "no"),
]


@pytest.fixture(scope="module")
def llm():
    return get_chat_model(cache=False)


@pytest.mark.parametrize(("document", "question", "expected"), CASES)
def test_the_local_model_grades_clear_cases(llm, document, question, expected):
    grade = invoke_structured(
        llm, GradeDocument, f"Document: {document}\nQuestion: {question}\nIs the document relevant?"
    )
    assert grade.binary_score == expected


def test_calls_and_tokens_are_counted(llm):
    before = USAGE.totals.calls
    llm.invoke("Reply with the single word: ready")
    assert USAGE.totals.calls == before + 1 and USAGE.totals.output_tokens > 0


class Keywords(BaseModel):
    keywords: list[str] = Field(min_length=2, max_length=3, description="search keywords")


def test_the_grammar_enforces_list_bounds(llm):
    result = invoke_structured(llm, Keywords, "Give search keywords for: how do I back up Atlas Server every night?")
    assert 2 <= len(result.keywords) <= 3
