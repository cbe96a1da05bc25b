"""Structured output the same way for every provider: typed answers, retries, honest failures.

Introduced in notebook 00 (setup). `invoke_structured(model, Schema, prompt)` returns a `Schema`
instance or raises `StructuredOutputError` — never `None`. The method is chosen per provider:
DeepSeek's API (and the local llama.cpp server behind the same class) supports forced function
calling but not `json_schema`; the grammar the local server derives from the schema then also
enforces `min_length` / `max_length` on lists. When a reply cannot be parsed, the model is asked
again with the parse error in the conversation (temperature 0 would otherwise repeat itself).
"""

from __future__ import annotations

from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel

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
            f"no valid {schema.__name__} after {attempts} attempt(s): {cause!r}. Last reply: {raw[:300]!r}. "
            "Try a shorter input, a simpler schema, or a larger model (AGENTIC_RAG_GGUF / DeepSeek)."
        )


def structured_method(model: BaseChatModel) -> str:
    """`json_schema` where the provider supports it natively, otherwise forced `function_calling`."""
    return "json_schema" if type(model).__name__ in _JSON_SCHEMA_PROVIDERS else "function_calling"


def structured_model(model: BaseChatModel, schema: type[S]) -> Runnable:
    """`model.with_structured_output(schema)` with the provider's method; returns raw, parsed and error."""
    return model.with_structured_output(schema, method=structured_method(model), include_raw=True)


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
        f"Your previous reply could not be used ({error}). Reply again with only a call of the "
        "function, with every required argument filled in and valid."
    )


class _Attempts:
    """The conversation of one structured request: the prompt, plus a repair note after a failed reply."""

    def __init__(self, schema: type[S], prompt: LanguageModelInput):
        self.schema = schema
        self.original = self.messages = _as_messages(prompt)
        self.raw: Any = None
        self.error: Exception | None = None
        self.count = 0

    def record(self, result: dict[str, Any]) -> S | None:
        """The parsed answer, or None after preparing the next attempt's messages."""
        self.count += 1
        parsed = result.get("parsed")
        if isinstance(parsed, self.schema):
            return parsed
        self.raw = result.get("raw")
        self.error = result.get("parsing_error") or ValueError("the model called no function")
        self.messages = [*self.original, _repair_request(self.error)]
        return None

    def failure(self) -> StructuredOutputError:
        return StructuredOutputError(self.schema, self.count, self.raw, self.error)


def invoke_structured(
    model: BaseChatModel,
    schema: type[S],
    prompt: LanguageModelInput,
    *,
    retries: int = 2,
    config: RunnableConfig | None = None,
) -> S:
    """Ask `model` for a `schema` instance; retry up to `retries` times on a parse failure, then raise."""
    runnable, attempts = structured_model(model, schema), _Attempts(schema, prompt)
    for _ in range(retries + 1):
        if (parsed := attempts.record(runnable.invoke(attempts.messages, config=config))) is not None:
            return parsed
    raise attempts.failure()


async def ainvoke_structured(
    model: BaseChatModel,
    schema: type[S],
    prompt: LanguageModelInput,
    *,
    retries: int = 2,
    config: RunnableConfig | None = None,
) -> S:
    """Async `invoke_structured`."""
    runnable, attempts = structured_model(model, schema), _Attempts(schema, prompt)
    for _ in range(retries + 1):
        if (parsed := attempts.record(await runnable.ainvoke(attempts.messages, config=config))) is not None:
            return parsed
    raise attempts.failure()
