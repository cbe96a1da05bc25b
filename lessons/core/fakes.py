"""A scripted chat model for unit tests: logic is tested without any real model.

Introduced in notebook 00 (setup). langchain-core's fake chat models raise on `bind_tools` and
`with_structured_output`; `ScriptedChatModel` supports both, so structured output and agent loops
run against it exactly as against DeepSeek or the local model.

Each scripted reply is one of:
- a `str` → an AI message with that text;
- a `dict` or a Pydantic model → a call of the (first) bound tool with those arguments — what a
  provider returns for `with_structured_output`;
- an `AIMessage` → returned as is;
- an `Exception` → raised;
- a callable `(messages, tool_names) -> reply` → called, and its result treated as above.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field

_ids = itertools.count(1)


class ScriptedChatModel(BaseChatModel):
    """Returns scripted replies in order; records every call in `calls`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: list[Any] = Field(default_factory=list)
    default: Any = None  # reply used once the script is exhausted; None raises instead
    calls: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any):
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "fake"
        return params

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _next_reply(self) -> Any:
        index = len(self.calls) - 1
        if index < len(self.responses):
            return self.responses[index]
        if self.default is not None:
            return self.default
        raise AssertionError(
            f"ScriptedChatModel ran out of replies: call {index + 1}, but only {len(self.responses)} were scripted"
        )

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        tool_names = [tool["function"]["name"] for tool in kwargs.get("tools") or []]
        self.calls.append({"messages": list(messages), "tools": tool_names})
        reply = self._next_reply()
        if callable(reply) and not isinstance(reply, type):
            reply = reply(messages, tool_names)
        if isinstance(reply, Exception):
            raise reply
        message = _to_message(reply, tool_names)
        prompt_tokens = sum(len(str(m.content).split()) for m in messages)
        completion_tokens = len(str(message.content).split()) + sum(
            len(json.dumps(call["args"]).split()) for call in message.tool_calls
        )
        message.usage_metadata = {
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        return ChatResult(
            generations=[ChatGeneration(message=message)],
            llm_output={"model_name": "scripted-fake", "token_usage": {}},
        )


def _to_message(reply: Any, tool_names: list[str]) -> AIMessage:
    if isinstance(reply, AIMessage):
        return reply.model_copy(deep=True)
    if isinstance(reply, str):
        return AIMessage(reply)
    if isinstance(reply, BaseModel):
        reply = reply.model_dump(mode="json")
    if isinstance(reply, dict):
        if not tool_names:
            return AIMessage(json.dumps(reply, ensure_ascii=False))
        return AIMessage("", tool_calls=[{"name": tool_names[0], "args": reply, "id": f"call_{next(_ids)}"}])
    raise TypeError(f"cannot script a reply of type {type(reply).__name__}: use str, dict, BaseModel or AIMessage")


def always(reply: Any) -> Callable[[list[BaseMessage], list[str]], Any]:
    """A script entry that gives the same reply to every call (e.g. a grader that always says "no")."""
    return lambda messages, tool_names: reply
