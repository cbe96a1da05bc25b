"""Structured output the same way for every provider: typed answers, retries, honest failures.

Introduced in notebook 00 (setup). `invoke_structured(model, Schema, prompt)` returns a `Schema`
instance or raises `StructuredOutputError` — never `None`. The method is chosen per provider:

- DeepSeek's API and the local llama.cpp server: forced function calling. The server puts the tool's JSON schema
  into the prompt through the chat template and builds a grammar from it, so `min_length` / `max_length` on lists
  are enforced too;
- OpenAI-compatible providers with native `json_schema`: that;
- `"grammar"` (set `LOCAL_METHOD`): the local server gets the schema only as a grammar (`response_format`) and the
  prompt a one-line-per-field brief (`schema_brief`) instead of the template's tool block. It saves prompt
  tokens on every call, but on notebook 04's grading prompt the 1.5B model graded Chinese near misses worse with it
  (`benchmarks/bench_structured.py`), so the course keeps function calling; try it with a larger model.

When a reply cannot be parsed, the model is asked again with the parse error in the conversation
(temperature 0 would otherwise repeat itself).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ValidationError

from lessons.core.i18n import N_, ReaderText, for_reader, t

S = TypeVar("S", bound=BaseModel)

# Providers (by LangChain class name) that support OpenAI's `json_schema` response format natively.
_JSON_SCHEMA_PROVIDERS = {"ChatOpenAI", "AzureChatOpenAI"}


class StructuredOutputError(RuntimeError):
    """The model did not produce a valid `schema` after every attempt; keeps the last raw reply."""

    def __init__(self, schema: type[BaseModel], attempts: int, last_raw: Any, cause: Exception | None):
        self.schema = schema
        self.attempts = attempts
        self.last_raw = last_raw
        self.cause = cause
        raw = _raw_text(last_raw)
        super().__init__(
            t(
                "no valid {schema} after {attempts} attempt(s): {cause}. Last reply: {reply}. "
                "Try a shorter input, a simpler schema, or a larger model (AGENTIC_RAG_GGUF / DeepSeek).",
                schema=schema.__name__,
                attempts=attempts,
                cause=_reader_cause(cause),
                reply=repr(raw[:300]),
            )
        )


def _reader_cause(cause: Exception | None) -> str:
    """`repr(cause)`, with a message the code wrote as a `ReaderText` in the course language (the model read it in
    English in the repair request)."""
    if cause is not None and len(cause.args) == 1 and hasattr(cause.args[0], "shown"):
        return f"{type(cause).__name__}({for_reader(cause.args[0])!r})"
    return repr(cause)


# Why a reply could not be used when it had no function call: English in the repair request the model reads,
# the course language in the StructuredOutputError a notebook shows (notebook 06's judge-failure demo).
NO_FUNCTION_CALLED = N_("the model called no function")

LOCAL_METHOD = "function_calling"  # or "grammar": how the local llama.cpp server is asked (module docstring)


def structured_method(model: BaseChatModel) -> str:
    """`json_schema` where the provider supports it natively; `LOCAL_METHOD` on the local llama.cpp server;
    otherwise forced `function_calling`."""
    if type(model).__name__ in _JSON_SCHEMA_PROVIDERS:
        return "json_schema"
    if getattr(model, "provider", None) == "local":
        return LOCAL_METHOD
    return "function_calling"


def json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema as function calling sends it (references inlined): what the grammar is built from."""
    return convert_to_openai_tool(schema)["function"]["parameters"]


def schema_brief(schema: type[BaseModel]) -> str:
    """One short line per field — what the model needs to know when a grammar enforces the form itself."""
    lines = []
    for name, spec in json_schema(schema).get("properties", {}).items():
        kind = " | ".join(json.dumps(value) for value in spec["enum"]) if "enum" in spec else spec.get("type", "value")
        if kind == "array":
            kind = f"list of {spec.get('items', {}).get('type', 'value')}"
            if "maxItems" in spec:
                kind += f", at most {spec['maxItems']}"
        note = f": {spec['description']}" if spec.get("description") else ""
        lines.append(f'- "{name}" ({kind}){note}')
    return "Reply with one JSON object with these keys, in this order:\n" + "\n".join(lines)


def _grammar_model(model: BaseChatModel, schema: type[S]) -> Runnable:
    """The local server's structured call: the brief as the system message, the schema sent as a grammar.

    The brief stands where the chat template would have put the tool block (placed after the prompt, the 1.5B model
    graded worse in a first trial).
    """
    constrained = model.bind(response_format={"type": "json_object", "schema": json_schema(schema)})
    brief = schema_brief(schema)

    def with_brief(messages: list[BaseMessage]) -> list[BaseMessage]:
        if messages and isinstance(messages[0], SystemMessage):
            return [SystemMessage(f"{messages[0].content}\n\n{brief}"), *messages[1:]]
        return [SystemMessage(brief), *messages]

    def parse(message: AIMessage) -> dict[str, Any]:
        try:
            return {"raw": message, "parsed": schema.model_validate_json(str(message.content)), "parsing_error": None}
        except (ValidationError, ValueError) as error:
            return {"raw": message, "parsed": None, "parsing_error": error}

    return RunnableLambda(with_brief) | constrained | RunnableLambda(parse)


def structured_model(model: BaseChatModel, schema: type[S]) -> Runnable:
    """The provider's structured call for `schema`; its result holds raw, parsed and parsing_error."""
    method = structured_method(model)
    if method == "grammar":
        return _grammar_model(model, schema)
    return model.with_structured_output(schema, method=method, include_raw=True)


def _as_messages(prompt: LanguageModelInput) -> list[BaseMessage]:
    if isinstance(prompt, str):
        return [HumanMessage(prompt)]
    if isinstance(prompt, PromptValue):
        return prompt.to_messages()
    return list(prompt)


def _raw_text(raw: Any) -> str:
    if isinstance(raw, AIMessage):
        return str(raw.tool_calls or raw.content)
    return str(raw)


def _repair_request(error: Exception | None) -> HumanMessage:
    return HumanMessage(
        f"Your previous reply could not be used ({error}). Reply again with every required field filled in and valid."
    )


class _Attempts:
    """One structured request, however it is called: each attempt's messages (the prompt; after a reply that could
    not be used, the prompt and a repair note), what the replies gave, and the outcome. The sync and async entry
    points differ only in how they send the messages."""

    def __init__(self, model: BaseChatModel, schema: type[S], prompt: LanguageModelInput, retries: int):
        self.runnable = structured_model(model, schema)
        self.schema, self.retries = schema, retries
        self.original = self.messages = _as_messages(prompt)
        self.parsed: S | None = None
        self.raw: Any = None
        self.error: Exception | None = None
        self.count = 0

    def __iter__(self) -> Iterator[list[BaseMessage]]:
        """The messages to send, until a reply parses or `retries` repairs have failed too."""
        while self.parsed is None and self.count <= self.retries:
            yield self.messages

    def record(self, result: dict[str, Any]) -> None:
        """Take one reply: keep its answer, or prepare the next attempt's messages."""
        self.count += 1
        parsed = result.get("parsed")
        if isinstance(parsed, self.schema):
            self.parsed = parsed
            return
        self.raw = result.get("raw")
        self.error = result.get("parsing_error") or ValueError(ReaderText(NO_FUNCTION_CALLED))
        self.messages = [*self.original, _repair_request(self.error)]

    def outcome(self) -> S:
        """The parsed answer, or the `StructuredOutputError` after the last attempt."""
        if self.parsed is None:
            raise StructuredOutputError(self.schema, self.count, self.raw, self.error)
        return self.parsed


def invoke_structured(
    model: BaseChatModel,
    schema: type[S],
    prompt: LanguageModelInput,
    *,
    retries: int = 2,
    config: RunnableConfig | None = None,
) -> S:
    """Ask `model` for a `schema` instance; retry up to `retries` times on a parse failure, then raise."""
    attempts = _Attempts(model, schema, prompt, retries)
    for messages in attempts:
        attempts.record(attempts.runnable.invoke(messages, config=config))
    return attempts.outcome()


async def ainvoke_structured(
    model: BaseChatModel,
    schema: type[S],
    prompt: LanguageModelInput,
    *,
    retries: int = 2,
    config: RunnableConfig | None = None,
) -> S:
    """Async `invoke_structured`."""
    attempts = _Attempts(model, schema, prompt, retries)
    for messages in attempts:
        attempts.record(await attempts.runnable.ainvoke(messages, config=config))
    return attempts.outcome()
