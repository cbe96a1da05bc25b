"""The course's one meter: LLM calls, tokens, cached answers and DeepSeek cost.

Introduced in notebook 00 (setup). `UsageMeter` is a LangChain callback handler that adds up what
the chat-model calls it sees cost. There are two ways to attach one:

- as a callback: every chat model made by `lessons.core.models.get_chat_model` reports to the
  process-wide `USAGE` meter (`print(USAGE.report())` ends each notebook); a meter passed in
  `config={"callbacks": [meter]}` counts that one invocation;
- as a scoped measurement: `with metered() as meter:` counts every chat-model call made inside the
  block (also in the threads and tasks LangChain starts, also calls made without passing callbacks).
  Blocks nest: a call counts in its own block and in every block around it, once.

Answers served from the LLM cache are counted apart (they cost nothing). Cost has one formula,
`deepseek_cost_usd`: `cost_usd` is what the fresh DeepSeek calls cost, `list_price_usd` what all the
tokens a pipeline involved would cost at DeepSeek's list price. When `AGENTIC_RAG_USAGE_FILE` is
set (the headless notebook runner sets it), `USAGE`'s totals are also written there as JSON after
every call.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

from lessons.core.i18n import t
from lessons.core.settings import Settings, get_settings

# US$ per million tokens for deepseek-chat (cache-miss input, output), from DeepSeek's price page,
# September 2025. Override with DEEPSEEK_PRICE_INPUT / DEEPSEEK_PRICE_OUTPUT when prices change.
DEEPSEEK_PRICE_PER_MTOK = {"input": 0.28, "output": 0.42}


def _price(kind: str) -> float:
    price = getattr(get_settings(), f"deepseek_price_{kind}")
    return DEEPSEEK_PRICE_PER_MTOK[kind] if price is None else price


def deepseek_cost_usd(input_tokens: int, output_tokens: int) -> float:
    """What these tokens cost on DeepSeek at list price (cache-miss input), in US$: the course's one cost formula."""
    return (input_tokens * _price("input") + output_tokens * _price("output")) / 1e6


@dataclass
class UsageTotals:
    """What a meter has counted. `calls` and the plain token counts are fresh calls (the model was asked);
    `cached_calls` and the `cached_*` tokens are answers the LLM cache served."""

    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0
    cost_usd: float = 0.0  # what the fresh DeepSeek calls cost
    by_model: dict[str, int] = field(default_factory=dict)  # fresh calls per model

    @property
    def all_calls(self) -> int:
        """Calls the pipeline made, whether the model was asked or the cache answered."""
        return self.calls + self.cached_calls

    @property
    def total_tokens(self) -> int:
        """Tokens of the fresh calls."""
        return self.input_tokens + self.output_tokens

    @property
    def cached_tokens(self) -> int:
        """Tokens of the answers served from the cache (what a pipeline uses, at no cost)."""
        return self.cached_input_tokens + self.cached_output_tokens

    @property
    def pipeline_tokens(self) -> int:
        """Tokens the calls involved, whether the model was asked or the cache answered."""
        return self.total_tokens + self.cached_tokens

    @property
    def list_price_usd(self) -> float:
        """What all the pipeline's tokens (cached answers included) would cost on DeepSeek at list price."""
        return deepseek_cost_usd(
            self.input_tokens + self.cached_input_tokens, self.output_tokens + self.cached_output_tokens
        )


def _token_usage(response: LLMResult) -> tuple[int, int]:
    """(input, output) tokens of one model response, from message metadata or the provider's llm_output."""
    inputs = outputs = 0
    for generations in response.generations:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                inputs += usage.get("input_tokens", 0)
                outputs += usage.get("output_tokens", 0)
    if inputs or outputs:
        return inputs, outputs
    token_usage = (response.llm_output or {}).get("token_usage") or {}
    return token_usage.get("prompt_tokens", 0), token_usage.get("completion_tokens", 0)


def runner_usage_file() -> Path | None:
    """`AGENTIC_RAG_USAGE_FILE` as the environment says now. Read at each write, not from `get_settings()` (read once
    per process), so that a runner, a test or a learner may set or unset it after import; `get_settings()` has
    checked the value it started with and exported `.env`'s lines to the environment."""
    get_settings()
    value = os.environ.get(Settings.variable("usage_file"), "").strip()
    return Path(value).expanduser() if value else None


class UsageMeter(BaseCallbackHandler):
    """A LangChain callback that adds up calls, tokens, cached answers and cost; thread-safe.

    `parent` is the meter of the enclosing `metered()` block: what this meter counts counts there too.
    A run is counted once per meter, however many ways the meter was attached to it.
    """

    def __init__(
        self,
        usage_file: str | os.PathLike | None = None,
        *,
        parent: UsageMeter | None = None,
        env_file: bool = False,
    ):
        self.totals = UsageTotals()
        self.parent = parent
        self._lock = threading.Lock()
        self._usage_file = usage_file
        self._env_file = env_file  # also write to $AGENTIC_RAG_USAGE_FILE, read at each write (the process-wide meter)
        self._providers: dict[Any, str] = {}
        self._counted: set[Any] = set()

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs) -> None:
        self._providers[run_id] = (metadata or {}).get("ls_provider", "")

    def on_llm_end(self, response: LLMResult, *, run_id, **kwargs: Any) -> None:
        provider = self._providers.pop(run_id, "")
        # A cache hit carries no llm_output: the provider was not asked.
        cached = not response.llm_output
        inputs, outputs = _token_usage(response)
        model_name = (response.llm_output or {}).get("model_name") or provider or "unknown"
        priced = not cached and provider == "deepseek" and not model_name.startswith("qwen")
        cost = deepseek_cost_usd(inputs, outputs) if priced else 0.0
        meter: UsageMeter | None = self
        while meter is not None:
            meter._add(run_id, cached, inputs, outputs, model_name, cost)
            meter = meter.parent

    def _add(self, run_id: Any, cached: bool, inputs: int, outputs: int, model_name: str, cost: float) -> None:
        with self._lock:
            if run_id is not None:
                if run_id in self._counted:
                    return
                self._counted.add(run_id)
            totals = self.totals
            if cached:
                totals.cached_calls += 1
                totals.cached_input_tokens += inputs
                totals.cached_output_tokens += outputs
            else:
                totals.calls += 1
                totals.input_tokens += inputs
                totals.output_tokens += outputs
                totals.by_model[model_name] = totals.by_model.get(model_name, 0) + 1
                totals.cost_usd += cost
            self._write()

    def _write(self) -> None:
        path = self._usage_file or (runner_usage_file() if self._env_file else None)
        if not path:
            return
        tmp = Path(f"{path}.tmp")
        tmp.write_text(json.dumps(asdict(self.totals), indent=2))
        os.replace(tmp, path)

    def reset(self) -> None:
        with self._lock:
            self.totals = UsageTotals()
            self._counted.clear()

    def counts(self) -> dict[str, int]:
        """The counts as result-table columns: every call (cached ones included), the cached ones, and the
        tokens of every call (input, output, their sum)."""
        totals = self.totals
        inputs = totals.input_tokens + totals.cached_input_tokens
        outputs = totals.output_tokens + totals.cached_output_tokens
        return {
            "llm_calls": totals.all_calls,
            "cached_calls": totals.cached_calls,
            "input_tokens": inputs,
            "output_tokens": outputs,
            "tokens": inputs + outputs,
        }

    def report(self) -> str:
        """One line for the end of a notebook."""
        totals = self.totals
        return t(
            "LLM calls: {calls} (+{cached} from cache) · tokens: {input:,} in, {output:,} out · DeepSeek cost: ${cost:.4f}",
            calls=totals.calls,
            cached=totals.cached_calls,
            input=totals.input_tokens,
            output=totals.output_tokens,
            cost=totals.cost_usd,
        )


_scope: ContextVar[UsageMeter | None] = ContextVar("agentic_rag_usage_scope", default=None)
register_configure_hook(_scope, inheritable=True)


@contextlib.contextmanager
def metered() -> Iterator[UsageMeter]:
    """A fresh `UsageMeter` that counts every chat-model call made inside the block (nested blocks count in
    the blocks around them too). Calls in threads count when the thread runs in a copy of the block's
    context, as LangChain's own executors and asyncio tasks do."""
    meter = UsageMeter(parent=_scope.get())
    token = _scope.set(meter)
    try:
        yield meter
    finally:
        _scope.reset(token)


USAGE = UsageMeter(env_file=True)
