"""A LangChain LLM cache in SQLite: a re-run of a notebook costs no model calls.

Introduced in notebook 00 (setup). Keyed by the SHA-256 of the prompt and the model's parameters;
values are LangChain's JSON serialisation of the generations (never pickle), read back with an
allow-list of message and generation classes only.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import warnings
from pathlib import Path

from langchain_core._api import LangChainBetaWarning
from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.load import dumps, loads
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, Generation

_ALLOWED = [AIMessage, AIMessageChunk, ChatGeneration, ChatGenerationChunk, Generation]


class SQLiteFile:
    """A SQLite file with one connection per thread (WAL journal, 30 s busy timeout): safe to share
    between threads and processes. `_open(path, schema)` creates the folder and the table.

    Introduced in notebook 00 (setup) for the LLM cache; notebook 03's QA cache stands on it too.
    """

    def _open(self, path: Path, schema: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._connect() as db:
            db.execute(schema)

    def _connect(self) -> sqlite3.Connection:
        if getattr(self._local, "db", None) is None:
            db = sqlite3.connect(self.path, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return self._local.db


class SQLiteLLMCache(BaseCache, SQLiteFile):
    """LLM answers keyed by content hash in one SQLite file; safe to share between processes."""

    def __init__(self, path: str | Path):
        self._open(
            Path(path),
            "CREATE TABLE IF NOT EXISTS llm_cache ("
            "key TEXT PRIMARY KEY, llm TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)",
        )

    @staticmethod
    def _key(prompt: str, llm_string: str) -> str:
        return hashlib.sha256(f"{llm_string}\x00{prompt}".encode()).hexdigest()

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        row = (
            self._connect()
            .execute("SELECT response FROM llm_cache WHERE key = ?", (self._key(prompt, llm_string),))
            .fetchone()
        )
        if row is None:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LangChainBetaWarning)
                return [loads(item, allowed_objects=_ALLOWED) for item in _split(row[0])]
        except (ValueError, TypeError, ImportError):  # an entry another LangChain version wrote: a miss, rewritten
            return None

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        response = "\n".join(dumps(generation) for generation in return_val)
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO llm_cache (key, llm, response, created) VALUES (?, ?, ?, ?)",
                (self._key(prompt, llm_string), llm_string, response, time.time()),
            )

    def clear(self, **kwargs) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM llm_cache")

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0]


def _split(response: str) -> list[str]:
    # dumps() writes one JSON document per generation without newlines, so lines separate them.
    return [line for line in response.split("\n") if line]
