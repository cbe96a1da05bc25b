"""The service's settings: read from the environment and `.env`, like every other course setting.

Introduced in notebook 08 (from notebook to service). Each storage is a setting, not a code change:

| variable | meaning | default |
|---|---|---|
| `AGENTIC_RAG_SERVICE_API_KEY` | the key write endpoints need (`X-API-Key` header); never logged | unset: writes are refused |
| `AGENTIC_RAG_SERVICE_DATA_DIR` | where the default database, file store and embedded index live | `<cache_dir>/service` |
| `AGENTIC_RAG_SERVICE_DATABASE_URL` | any SQLAlchemy URL, e.g. `postgresql+psycopg://user@host/db` | SQLite in the data folder |
| `AGENTIC_RAG_SERVICE_FILE_STORE` | the folder raw uploads are kept in | `<data_dir>/files` |
| `AGENTIC_RAG_SERVICE_COLLECTION` | the Chroma collection of the service's chunks | `service-docs` |
| `AGENTIC_RAG_SERVICE_MAX_UPLOAD_BYTES` | a larger upload fails its job with `FileTooLarge` | 25 MiB (the course's limit) |
| `AGENTIC_RAG_SERVICE_MAX_ATTEMPTS` | attempts of a job before it is failed for good | `3` |
| `AGENTIC_RAG_SERVICE_LEASE_SECONDS` | a claimed job whose worker stopped renewing it for this long is taken again | `60` |
| `AGENTIC_RAG_SERVICE_RETIRE_SECONDS` | how long replaced chunks stay in the index for searches already running | `10` |
| `AGENTIC_RAG_SERVICE_POLL_SECONDS` | how often an idle worker looks for jobs | `0.5` |
| `AGENTIC_RAG_SERVICE_WORKERS` | ingestion worker threads inside the API process (0: run `python -m service worker` instead, needs a Chroma server) | `1` |
| `AGENTIC_RAG_SERVICE_RERANKER` | `default`: the hybrid top 20 reordered by `lessons.retrieval.rerank.default_reranker` (the cross-encoder for English, the fused order for Chinese); `none`: the hybrid order alone | `default` |
| `AGENTIC_RAG_SERVICE_ANSWER_CACHE` | which stored reply `/v1/ask` may serve instead of answering (`service.pipeline.answer_cache`, over the same documents and `k` only): `exact` the reply to the same question (after `normalise_question`: case, spaces, the final question mark); `semantic` also the reply to a question whose embedding is close enough (notebook 09's cache: the threshold calibrated for the embedder, with the specifics guard) — opt-in, because it serves near questions another question's answer: on the 311 lookups of `data/eval/cache_heldout.jsonl`, 6 of 210 near questions (2.9 %, 95 % upper bound 6.1 %; `benchmarks/results/semantic_cache_heldout.json`) — measured on the lookups the guard's contrast words were chosen from, so a fresh set must confirm it (before them: 16 of 210); `off` answers every question anew. The old switch still reads: `true` is `exact`, `false` is `off` | `exact` |
| `AGENTIC_RAG_SERVICE_NIGHTLY_PROBES` | a JSON Lines file of out-of-KB questions (gold format, `"type": "out_of_kb"`) every nightly run asks: its report's "abstained (out-of-KB)" | unset: abstention not measured |
| `AGENTIC_RAG_SERVICE_URL` | where the nightly job finds the running service | `http://127.0.0.1:8008` |
| `AGENTIC_RAG_SERVICE_HOST`, `AGENTIC_RAG_SERVICE_PORT` | where `python -m service api` listens | `127.0.0.1`, `8008` |

The index is embedded Chroma in the data folder, or a Chroma server: the course's own setting `AGENTIC_RAG_CHROMA_URL`
(in the table of `lessons/core/settings.py`, like every variable without the `AGENTIC_RAG_SERVICE_` prefix).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from lessons.core.i18n import N_, t_marked
from lessons.core.settings import EnvModel, get_settings, read_settings
from lessons.core.store_names import CHROMA_SERVER, EMBEDDED_CHROMA
from lessons.ingest.files import IngestLimits

API_KEY_VARIABLE = "AGENTIC_RAG_SERVICE_API_KEY"
MAX_K = 50  # the most chunks a request may ask for (service.api), and what the served reranker keeps
RERANKERS = ("default", "none")  # AGENTIC_RAG_SERVICE_RERANKER: service.pipeline.service_reranker
ANSWER_CACHE_MODES = ("exact", "semantic", "off")  # AGENTIC_RAG_SERVICE_ANSWER_CACHE: service.core.Service.ask
_OLD_SWITCH = {"true": "exact", "1": "exact", "yes": "exact", "on": "exact", "false": "off", "0": "off", "no": "off"}


class ServiceSettings(EnvModel):
    """The service's settings (the table above); `load_service_settings()` reads them. The key is a `SecretStr`:
    never in a log line, a repr or a traceback."""

    model_config = SettingsConfigDict(env_prefix="AGENTIC_RAG_SERVICE_")

    api_key: SecretStr | None = None
    data_dir: Path | None = None  # default: <course cache_dir>/service
    database_url: str | None = None  # default: SQLite in the data folder
    file_store: Path | None = None  # default: <data_dir>/files
    chroma_url: str | None = Field(None, exclude=True)  # the course's AGENTIC_RAG_CHROMA_URL, passed in
    collection: str = "service-docs"
    max_upload_bytes: int = Field(default_factory=lambda: IngestLimits().max_file_bytes)
    max_attempts: int = 3
    lease_seconds: float = 60.0
    retire_seconds: float = 10.0
    poll_seconds: float = 0.5
    host: str = "127.0.0.1"
    port: int = 8008
    workers: int = 1
    url: str | None = None  # default: http://127.0.0.1:<port>
    reranker: str = "default"
    answer_cache: str = "exact"  # one of ANSWER_CACHE_MODES: service.core.Service.ask
    nightly_probes: Path | None = None  # service.nightly.load_probes reads and checks it

    @field_validator("max_upload_bytes", "max_attempts", mode="before")
    @classmethod
    def _positive(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._whole(value, info)

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._whole(value, info, maximum=65535)

    @field_validator("lease_seconds", "retire_seconds", "poll_seconds", mode="before")
    @classmethod
    def _seconds(cls, value: Any, info: ValidationInfo) -> Any:
        return cls._number(value, info)

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, value: Any, info: ValidationInfo) -> Any:
        return int(cls._number(value, info))

    @field_validator("reranker", mode="before")
    @classmethod
    def _reranker(cls, value: Any, info: ValidationInfo) -> Any:
        value = str(value).strip().lower()
        if value not in RERANKERS:
            raise ValueError(f"AGENTIC_RAG_SERVICE_RERANKER={value!r} — use 'default' (hybrid, then the course's "
                             "reranker) or 'none' (the hybrid order alone)")  # fmt: skip
        return value

    @field_validator("answer_cache", mode="before")
    @classmethod
    def _answer_cache(cls, value: Any) -> Any:
        """A mode; the old switch maps onto one (true: `exact`, the only reuse it ever made safely; false: `off`)."""
        text = str(value).strip().lower()
        mode = _OLD_SWITCH.get(text, text)
        if mode not in ANSWER_CACHE_MODES:
            raise ValueError(f"AGENTIC_RAG_SERVICE_ANSWER_CACHE={text!r} — use 'exact' (the same question again), "
                             "'semantic' (also a close enough one: can serve another question's answer) or 'off'")  # fmt: skip
        return mode

    @field_validator("database_url", mode="after")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is not None and "://" not in value:
            raise ValueError(
                f"AGENTIC_RAG_SERVICE_DATABASE_URL={_redact_url(value)!r} is not a database URL — use e.g. "
                "sqlite:///path/service.sqlite or postgresql+psycopg://user:password@127.0.0.1:5432/service"
            )
        return value

    @model_validator(mode="after")
    def _derived(self) -> ServiceSettings:
        """The defaults that follow from other settings (frozen model: set once, here)."""
        data_dir = (self.data_dir or get_settings().cache_dir / "service").expanduser()
        derived = {
            "data_dir": data_dir,
            "database_url": self.database_url or f"sqlite:///{data_dir / 'service.sqlite'}",
            "file_store": (self.file_store or data_dir / "files").expanduser(),
            "url": (self.url or f"http://127.0.0.1:{self.port}").rstrip("/"),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)
        return self

    @property
    def limits(self) -> IngestLimits:
        """The course's ingestion limits with the service's per-file limit."""
        return IngestLimits(
            max_file_bytes=self.max_upload_bytes,
            max_total_bytes=max(self.max_upload_bytes, IngestLimits().max_total_bytes),
        )

    def describe(self) -> dict[str, str]:
        """Where each store is, for the health endpoint and the nightly report (no secret in it); in English, like
        the rest of the API (`stores_for_reader` words it for a reader)."""
        return {
            "database": _redact_url(self.database_url),
            "file store": FILE_STORE.format(path=self.file_store),
            "index": CHROMA_SERVER.format(url=self.chroma_url)
            if self.chroma_url
            else EMBEDDED_CHROMA.format(path=self.data_dir / "chroma"),
            "collection": self.collection,
            "reranker": self.reranker,
        }


# How `describe()` words a store. The health payload keeps the English; a notebook shows it through
# `stores_for_reader`, which gives each value written from one of these in the course language.
FILE_STORE = N_("folder {path}")
STORE_WORDING = (FILE_STORE, EMBEDDED_CHROMA, CHROMA_SERVER)


def _wording_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)  # text, name, text, name, …, text
    return re.compile(
        "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+)" for i, part in enumerate(parts)) + r"\Z"
    )


def stores_for_reader(stores: dict[str, str]) -> dict[str, str]:
    """The health endpoint's `stores` (`describe()`) as a reader sees them: a value worded by `STORE_WORDING` in
    the course language, any other (a URL, a collection's name, a setting's value) as it is. Introduced in
    notebook 08 (from notebook to service)."""
    shown = {}
    for name, value in stores.items():
        shown[name] = value
        for template in STORE_WORDING:
            if match := _wording_pattern(template).match(value):
                shown[name] = t_marked(template, **match.groupdict())
                break
    return shown


def _redact_url(url: str) -> str:
    """A database URL without its password."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a malformed URL is reported when the engine is made
        return url.split("@")[-1]


def load_service_settings() -> ServiceSettings:
    """The service's settings from the environment and `.env`, with the course's Chroma server and cache folder."""
    course = get_settings()  # the service reuses its cache folder and Chroma URL
    from lessons.core import settings

    return read_settings(ServiceSettings, settings.PROJECT_ROOT / ".env", chroma_url=course.chroma_url)
