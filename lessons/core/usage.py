"""Count LLM calls, tokens and DeepSeek cost, per notebook.

Introduced in notebook 00 (setup). Every chat model made by `lessons.core.models.get_chat_model` reports
to the process-wide `USAGE` tracker. Answers served from the LLM cache are counted separately (they
cost nothing). When `AGENTIC_RAG_USAGE_FILE` is set (the headless notebook runner sets it), the
totals are also written there as JSON after every call.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from lessons.core.i18n import t

# US$ per million tokens for deepseek-chat (cache-miss input, output), from DeepSeek's price page,
# September 2025. Override with DEEPSEEK_PRICE_INPUT / DEEPSEEK_PRICE_OUTPUT when prices change.
DEEPSEEK_PRICE_PER_MTOK = {"input": 0.28, "output": 0.42}


@dataclass
class UsageTotals:
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # tokens of answers served from the cache (what a pipeline uses, at no cost)
    cost_usd: float = 0.0
    by_model: dict[str, int] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def pipeline_tokens(self) -> int:
        """Tokens the calls involved, whether the model was asked or the cache answered."""
        return self.total_tokens + self.cached_tokens


def _price(kind: str) -> float:
    raw = os.environ.get(f"DEEPSEEK_PRICE_{kind.upper()}", "").strip()
    return float(raw) if raw else DEEPSEEK_PRICE_PER_MTOK[kind]


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


class UsageTracker(BaseCallbackHandler):
    """A LangChain callback that adds up calls, tokens and cost; thread-safe."""

    def __init__(self, usage_file: str | os.PathLike | None = None):
        self.totals = UsageTotals()
        self._lock = threading.Lock()
        self._usage_file = usage_file
        self._providers: dict[Any, str] = {}

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs) -> None:
        self._providers[run_id] = (metadata or {}).get("ls_provider", "")

    def on_llm_end(self, response: LLMResult, *, run_id, **kwargs: Any) -> None:
        provider = self._providers.pop(run_id, "")
        # A cache hit carries no llm_output: the provider was not asked.
        cached = not response.llm_output
        inputs, outputs = _token_usage(response)
        model_name = (response.llm_output or {}).get("model_name") or provider or "unknown"
        with self._lock:
            totals = self.totals
            if cached:
                totals.cached_calls += 1
                totals.cached_tokens += inputs + outputs
            else:
                totals.calls += 1
                totals.input_tokens += inputs
                totals.output_tokens += outputs
                totals.by_model[model_name] = totals.by_model.get(model_name, 0) + 1
                if provider == "deepseek" and not model_name.startswith("qwen"):
                    totals.cost_usd += (inputs * _price("input") + outputs * _price("output")) / 1e6
            self._write()

    def _write(self) -> None:
        path = self._usage_file or os.environ.get("AGENTIC_RAG_USAGE_FILE")
        if not path:
            return
        tmp = Path(f"{path}.tmp")
        tmp.write_text(json.dumps(asdict(self.totals), indent=2))
        os.replace(tmp, path)

    def reset(self) -> None:
        with self._lock:
            self.totals = UsageTotals()

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


USAGE = UsageTracker()
