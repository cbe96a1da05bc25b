"""Structured output: the method per provider, retries with the parse error, and honest failures."""

import asyncio
from typing import Literal

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel, Field

from lessons.core import structured
from lessons.core.fakes import ScriptedChatModel, always
from lessons.core.models import CourseChatModel
from lessons.core.structured import StructuredOutputError, ainvoke_structured, invoke_structured, structured_method


class Grade(BaseModel):
    binary_score: Literal["yes", "no"] = Field(description="relevant or not")


class Questions(BaseModel):
    questions: list[str] = Field(min_length=1, max_length=3)


def test_deepseek_and_the_local_server_use_function_calling_unless_the_grammar_is_chosen(monkeypatch):
    local = CourseChatModel(model="m", api_base="http://127.0.0.1:9/v1", api_key="x", provider="local")
    deepseek = CourseChatModel(model="deepseek-chat", api_key="x", provider="deepseek")
    assert structured_method(local) == "function_calling" and structured_method(deepseek) == "function_calling"
    monkeypatch.setattr(structured, "LOCAL_METHOD", "grammar")
    assert structured_method(local) == "grammar" and structured_method(deepseek) == "function_calling"
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


def test_async_variant_sends_the_same_attempts_and_fails_the_same_way():
    sync, async_ = (ScriptedChatModel(default=always({"binary_score": "maybe"})) for _ in range(2))
    with pytest.raises(StructuredOutputError) as sync_error:
        invoke_structured(sync, Grade, "q", retries=1)
    with pytest.raises(StructuredOutputError) as async_error:
        asyncio.run(ainvoke_structured(async_, Grade, "q", retries=1))
    assert async_error.value.attempts == sync_error.value.attempts == 2
    assert str(async_error.value.cause) == str(sync_error.value.cause)  # the replies' tool-call ids differ
    assert [c["messages"] for c in async_.calls] == [c["messages"] for c in sync.calls]


class LocalScripted(ScriptedChatModel):
    """A scripted model that says it is the local server, and records what each call was bound with."""

    provider: str = "local"
    bound: list = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.bound.append(kwargs.get("response_format"))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


class Check(BaseModel):
    label: Literal["CAN_ANSWER", "NO_MATCH"] = Field(description="whether the chunks answer")
    quotes: list[str] = Field(max_length=2, description="sentences that answer")


def test_the_local_server_gets_a_grammar_and_a_short_brief_not_the_tool_block(monkeypatch):
    monkeypatch.setattr(structured, "LOCAL_METHOD", "grammar")
    model = LocalScripted(responses=['{"label": "NO_MATCH", "quotes": []}'])
    assert structured_method(model) == "grammar"
    answer = invoke_structured(model, Check, "Do the chunks answer?")
    assert answer == Check(label="NO_MATCH", quotes=[])
    schema = model.bound[0]["schema"]
    assert model.bound[0]["type"] == "json_object" and schema["properties"]["quotes"]["maxItems"] == 2
    assert model.calls[0]["tools"] == []  # no tool block in the prompt
    system, question = model.calls[0]["messages"]
    assert question.content == "Do the chunks answer?"
    brief = system.content
    assert '"label" ("CAN_ANSWER" | "NO_MATCH"): whether the chunks answer' in brief
    assert '"quotes" (list of string, at most 2)' in brief


def test_a_grammar_reply_that_does_not_validate_is_retried_with_the_error(monkeypatch):
    monkeypatch.setattr(structured, "LOCAL_METHOD", "grammar")
    model = LocalScripted(responses=['{"label": "MAYBE", "quotes": []}', '{"label": "CAN_ANSWER", "quotes": ["x"]}'])
    assert invoke_structured(model, Check, "Do the chunks answer?").label == "CAN_ANSWER"
    assert "could not be used" in str(model.calls[1]["messages"][-1].content)
