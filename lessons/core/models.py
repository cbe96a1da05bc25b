"""The one place chat models come from: DeepSeek's API or the offline local model.

Introduced in notebook 00 (setup). `get_chat_model()` returns a `CourseChatModel`, a `ChatDeepSeek`
subclass, in both cases, so every notebook runs the production code path:

- with `DEEPSEEK_API_KEY` set (environment or `.env`) → DeepSeek's `deepseek-chat`;
- without a key → the packaged Qwen2.5-Coder-1.5B served by llama.cpp on 127.0.0.1;
- `AGENTIC_RAG_MODEL=deepseek|local` forces one. Asking for DeepSeek without a key is an error:
  the course never falls back silently from DeepSeek to the local model.

Models are deterministic by default (temperature 0, fixed seed), answers are cached in SQLite
(`AGENTIC_RAG_LLM_CACHE=0` turns that off), and every call is counted by `lessons.core.usage.USAGE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import openai
from langchain_core.caches import BaseCache
from langchain_deepseek import ChatDeepSeek

from lessons.core.i18n import t
from lessons.core.llm_cache import SQLiteLLMCache
from lessons.core.settings import get_settings
from lessons.core.usage import USAGE

SEED = 42
DEEPSEEK_TIMEOUT_S = 60
LOCAL_TIMEOUT_S = 600  # a 2-core CPU generating a long answer takes minutes


class ModelError(RuntimeError):
    """A chat model could not be used; the message names the cause and the fix."""


class LocalServerCrashed(ModelError):
    """The local llama.cpp server died (a crash, or killed); nothing later in a run can be measured until it is fixed."""


@dataclass(frozen=True)
class ModelInfo:
    provider: str  # "deepseek" or "local"
    name: str
    endpoint: str

    def banner(self) -> str:
        where = (
            t("DeepSeek API")
            if self.provider == "deepseek"
            else t("local llama.cpp server, {endpoint}", endpoint=self.endpoint)
        )
        return t("Chat model: {name} ({where})", name=self.name, where=where)


class CourseChatModel(ChatDeepSeek):
    """`ChatDeepSeek` with clear error messages and a cache key that ignores the local server's port."""

    provider: str = "deepseek"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any):
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = self.provider
        return params

    def _get_llm_string(self, stop: list[str] | None = None, **kwargs: Any) -> str:
        # The default key serialises base_url, which holds the local server's (random) port:
        # every restart would miss the cache. Key on what determines the answer instead.
        params = {**self._get_invocation_params(stop=stop, **kwargs), "provider": self.provider}
        return str(sorted(params.items()))

    def _generate(self, *args: Any, **kwargs: Any):
        try:
            return super()._generate(*args, **kwargs)
        except openai.APIConnectionError as error:
            crash = self._server_crash()  # read before a restart replaces the dead server's record
            if not self._server_restarted():
                raise (LocalServerCrashed(crash) if crash else self._explain(error)) from error
        except openai.OpenAIError as error:
            raise self._explain(error) from error
        try:  # once more on the new server: a crash that happens again is named, a one-off is survived
            return super()._generate(*args, **kwargs)
        except openai.APIConnectionError as error:
            crash = self._server_crash() or crash
            raise (LocalServerCrashed(crash) if crash else self._explain(error)) from error
        except openai.OpenAIError as error:
            raise self._explain(error) from error

    def _server_restarted(self) -> bool:
        """After a lost connection to the local server: start it again on the same address, if possible."""
        if self.provider != "local":
            return False
        from lessons.core.local_server import ServerError, ensure_server

        try:
            return ensure_server().api_base == self.api_base
        except ServerError:
            return False

    def _server_crash(self) -> str | None:
        """After a lost connection to the local server: why it is gone when it crashed or stopped, else None."""
        if self.provider != "local":
            return None
        from lessons.core.local_server import crash_report

        return crash_report()

    async def _agenerate(self, *args: Any, **kwargs: Any):
        try:
            return await super()._agenerate(*args, **kwargs)
        except openai.APIConnectionError as error:
            if crash := self._server_crash():
                raise LocalServerCrashed(crash) from error
            raise self._explain(error) from error
        except openai.OpenAIError as error:
            raise self._explain(error) from error

    def _explain(self, error: openai.OpenAIError) -> ModelError:
        where = "DeepSeek" if self.provider == "deepseek" else t("the local model server at {url}", url=self.api_base)
        if isinstance(error, openai.AuthenticationError):
            return ModelError(
                t(
                    "{where} rejected the API key (401). Check DEEPSEEK_API_KEY in .env — a key from DeepSeek's "
                    "platform, without quotes or spaces — or set AGENTIC_RAG_MODEL=local to work offline.",
                    where=where,
                )
            )
        if isinstance(error, openai.APITimeoutError):
            return ModelError(
                t(
                    "the request to {where} timed out after {seconds} s. Check your network "
                    "(for DeepSeek) or whether the machine is overloaded (local); then run the cell again.",
                    where=where,
                    seconds=self.request_timeout,
                )
            )
        if isinstance(error, openai.APIConnectionError):
            fix = (
                t("check your internet connection or proxy, or set AGENTIC_RAG_MODEL=local to work offline")
                if self.provider == "deepseek"
                else t("the server may have stopped: run `python -m lessons.core.local_server_cli start` and try again")
            )
            return ModelError(t("could not reach {where}: {error}. Fix: {fix}.", where=where, error=error, fix=fix))
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            if status == 402:
                hint = t("your DeepSeek balance is exhausted — top up, or set AGENTIC_RAG_MODEL=local")
            elif status == 429:
                hint = t("rate limited — wait a moment, lower the concurrency, and run the cell again")
            else:
                hint = t("see the message above; a 400 usually means the request was too long for the model")
            return ModelError(
                t(
                    "{where} answered HTTP {status}: {message}. Fix: {hint}.",
                    where=where,
                    status=status,
                    message=error.message,
                    hint=hint,
                )
            )
        return ModelError(t("{where} failed: {error}", where=where, error=error))


@lru_cache(maxsize=1)
def _llm_cache() -> BaseCache:
    settings = get_settings()
    return SQLiteLLMCache(settings.llm_cache_file or settings.cache_dir / "llm-cache.sqlite")


def active_model_info() -> ModelInfo:
    """Which chat model `get_chat_model()` will use, without starting anything."""
    settings = get_settings()
    if settings.model == "deepseek" and not settings.deepseek_api_key:
        raise ModelError(
            t(
                "AGENTIC_RAG_MODEL=deepseek but DEEPSEEK_API_KEY is not set. Add the line "
                "DEEPSEEK_API_KEY=sk-... to .env at the project root, or set AGENTIC_RAG_MODEL=local "
                "(or auto) to use the offline model."
            )
        )
    if settings.uses_deepseek:
        return ModelInfo("deepseek", settings.deepseek_model, "https://api.deepseek.com")
    from lessons.core.local_model import QWEN_CODER_1_5B

    name = settings.gguf_path.stem if settings.gguf_path else QWEN_CODER_1_5B.alias
    return ModelInfo("local", name, settings.server_url or t("127.0.0.1 (started on first use)"))


def get_chat_model(temperature: float = 0.0, max_tokens: int | None = 1024, **kwargs: Any) -> CourseChatModel:
    """A chat model for the active provider: temperature 0, fixed seed, cached, counted."""
    settings = get_settings()
    info = active_model_info()
    common: dict[str, Any] = dict(
        temperature=temperature,
        max_tokens=max_tokens,
        seed=SEED,
        max_retries=2,
        cache=_llm_cache() if settings.llm_cache else False,
        callbacks=[USAGE],
    )
    common.update(kwargs)
    if info.provider == "deepseek":
        return CourseChatModel(
            model=settings.deepseek_model,
            api_key=settings.deepseek_api_key,
            timeout=DEEPSEEK_TIMEOUT_S,
            provider="deepseek",
            **common,
        )
    from lessons.core.local_server import ensure_server

    server = ensure_server()
    return CourseChatModel(
        model=server.alias,
        api_base=server.api_base,
        api_key="not-needed-locally",
        timeout=LOCAL_TIMEOUT_S,
        provider="local",
        **common,
    )


def model_banner() -> str:
    """The line every notebook prints first: which chat model answers."""
    return active_model_info().banner()
