"""Structured output: the method per provider, retries with the parse error, and honest failures."""

import asyncio
from typing import Literal

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel, Field

from lessons.core.fakes import ScriptedChatModel, always
from lessons.core.models import CourseChatModel
from lessons.core.structured import StructuredOutputError, ainvoke_structured, invoke_structured, structured_method


class Grade(BaseModel):
    binary_score: Literal["yes", "no"] = Field(description="relevant or not")


class Questions(BaseModel):
    questions: list[str] = Field(min_length=1, max_length=3)


def test_deepseek_and_the_local_server_use_function_calling():
    model = CourseChatModel(model="m", api_base="http://127.0.0.1:9/v1", api_key="x", provider="local")
    assert structured_method(model) == "function_calling"
    assert structured_method(ScriptedChatModel()) == "function_calling"


def test_a_valid_reply_is_parsed_into_the_schema():
    model = ScriptedChatModel(responses=[{"binary_score": "yes"}])
    assert invoke_structured(model, Grade, "q") == Grade(binary_score="yes")
    assert model.calls[0]["tools"] == ["Grade"]


def test_a_parse_failure_is_retried_with_the_error_shown_to_the_model():
    model = ScriptedChatModel(responses=[{"binary_score": "maybe"}, "no function call", {"binary_score": "no"}])
    assert invoke_structured(model, Grade, "q", retries=2).binary_score == "no"
    assert len(model.calls) == 3
    repair = model.calls[1]["messages"][-1].content
    assert "could not be used" in repair and "binary_score" in repair
    # Each retry carries the original prompt plus exactly one repair note.
    assert [len(call["messages"]) for call in model.calls] == [1, 2, 2]


def test_after_the_last_retry_it_raises_with_the_last_reply_never_none():
    model = ScriptedChatModel(default=always({"questions": []}))
    with pytest.raises(StructuredOutputError) as error:
        invoke_structured(model, Questions, "q", retries=1)
    assert error.value.attempts == 2
    assert "Questions" in str(error.value) and "questions" in str(error.value.last_raw)
    assert len(model.calls) == 2


def test_list_bounds_in_the_schema_are_enforced():
    too_many = {"questions": ["a", "b", "c", "d"]}
    model = ScriptedChatModel(responses=[too_many, {"questions": ["a"]}])
    assert invoke_structured(model, Questions, "q").questions == ["a"]


def test_async_variant_behaves_the_same():
    model = ScriptedChatModel(responses=[AIMessage("nothing"), {"binary_score": "yes"}])
    assert asyncio.run(ainvoke_structured(model, Grade, "q")).binary_score == "yes"
