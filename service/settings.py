"""The service's settings: read from the environment and `.env`, like every other course setting.

Introduced in notebook 08 (from notebook to service). Each storage is a setting, not a code change:

| variable | meaning | default |
|---|---|---|
| `AGENTIC_RAG_SERVICE_API_KEY` | the key write endpoints need (`X-API-Key` header); never logged | unset: writes are refused |
| `AGENTIC_RAG_SERVICE_DATA_DIR` | where the default database, file store and embedded index live | `<cache_dir>/service` |
| `AGENTIC_RAG_SERVICE_DATABASE_URL` | any SQLAlchemy URL, e.g. `postgresql+psycopg://user@host/db` | SQLite in the data folder |
| `AGENTIC_RAG_SERVICE_FILE_STORE` | the folder raw uploads are kept in | `<data_dir>/files` |
| `AGENTIC_RAG_CHROMA_URL` | a Chroma server (`chroma run`) instead of the embedded store (the course's own setting) | unset |
| `AGENTIC_RAG_SERVICE_COLLECTION` | the Chroma collection of the service's chunks | `service-docs` |
| `AGENTIC_RAG_SERVICE_MAX_UPLOAD_BYTES` | a larger upload fails its job with `FileTooLarge` | 25 MiB (the course's limit) |
| `AGENTIC_RAG_SERVICE_MAX_ATTEMPTS` | attempts of a job before it is failed for good | `3` |
| `AGENTIC_RAG_SERVICE_LEASE_SECONDS` | a claimed job whose worker stopped renewing it for this long is taken again | `60` |
| `AGENTIC_RAG_SERVICE_RETIRE_SECONDS` | how long replaced chunks stay in the index for searches already running | `10` |
| `AGENTIC_RAG_SERVICE_POLL_SECONDS` | how often an idle worker looks for jobs | `0.5` |
| `AGENTIC_RAG_SERVICE_WORKERS` | ingestion worker threads inside the API process (0: run `python -m service worker` instead, needs a Chroma server) | `1` |
| `AGENTIC_RAG_SERVICE_RERANKER` | `default`: the hybrid top 20 reordered by `lessons.retrieval.rerank.default_reranker` (the cross-encoder for English, the fused order for Chinese); `none`: the hybrid order alone | `default` |
| `AGENTIC_RAG_SERVICE_URL` | where the nightly job finds the running service | `http://127.0.0.1:8008` |
| `AGENTIC_RAG_SERVICE_HOST`, `AGENTIC_RAG_SERVICE_PORT` | where `python -m service api` listens | `127.0.0.1`, `8008` |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lessons.core.settings import SettingsError, _int, get_settings
from lessons.ingest.files import IngestLimits

API_KEY_VARIABLE = "AGENTIC_RAG_SERVICE_API_KEY"
RERANKERS = ("default", "none")  # AGENTIC_RAG_SERVICE_RERANKER: service.pipeline.service_reranker


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number — set e.g. {name}={default}") from None
    if value < 0:
        raise SettingsError(f"{name}={raw!r} must not be negative — set e.g. {name}={default}")
    return value


@dataclass(frozen=True)
class ServiceSettings:
    api_key: str | None
    data_dir: Path
    database_url: str
    file_store: Path
    chroma_url: str | None
    collection: str
    max_upload_bytes: int
    max_attempts: int
    lease_seconds: float
    retire_seconds: float
    poll_seconds: float
    host: str
    port: int
    workers: int = 1
    url: str = "http://127.0.0.1:8008"
    reranker: str = "default"

    def __repr__(self) -> str:  # the key never appears in a log line or a traceback
        fields = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "api_key"}
        shown = ", ".join(f"{name}={value!r}" for name, value in fields.items())
        return f"ServiceSettings(api_key={'<set>' if self.api_key else None}, {shown})"

    __str__ = __repr__

    @property
    def limits(self) -> IngestLimits:
        """The course's ingestion limits with the service's per-file limit."""
        return IngestLimits(
            max_file_bytes=self.max_upload_bytes,
            max_total_bytes=max(self.max_upload_bytes, IngestLimits().max_total_bytes),
        )

    def describe(self) -> dict[str, str]:
        """Where each store is, for the health endpoint and the nightly report (no secret in it)."""
        return {
            "database": _redact_url(self.database_url),
            "file store": f"folder {self.file_store}",
            "index": f"Chroma server {self.chroma_url}"
            if self.chroma_url
            else f"embedded Chroma in {self.data_dir / 'chroma'}",
            "collection": self.collection,
            "reranker": self.reranker,
        }


def _redact_url(url: str) -> str:
    """A database URL without its password."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - a malformed URL is reported when the engine is made
        return url.split("@")[-1]


def load_service_settings() -> ServiceSettings:
    """The service's settings from the environment (`.env` loaded first by the course settings)."""
    course = get_settings()  # loads .env; the service reuses its cache folder and Chroma URL
    data_dir = Path(os.environ.get("AGENTIC_RAG_SERVICE_DATA_DIR", "") or course.cache_dir / "service").expanduser()
    database_url = (
        os.environ.get("AGENTIC_RAG_SERVICE_DATABASE_URL", "").strip() or f"sqlite:///{data_dir / 'service.sqlite'}"
    )
    if "://" not in database_url:
        raise SettingsError(
            f"AGENTIC_RAG_SERVICE_DATABASE_URL={_redact_url(database_url)!r} is not a database URL — use e.g. "
            "sqlite:///path/service.sqlite or postgresql+psycopg://user:password@127.0.0.1:5432/service"
        )
    port = _int("AGENTIC_RAG_SERVICE_PORT", 8008)
    reranker = os.environ.get("AGENTIC_RAG_SERVICE_RERANKER", "").strip().lower() or "default"
    if reranker not in RERANKERS:
        raise SettingsError(f"AGENTIC_RAG_SERVICE_RERANKER={reranker!r} — use 'default' (hybrid, then the course's "
                            "reranker) or 'none' (the hybrid order alone)")  # fmt: skip
    return ServiceSettings(
        api_key=os.environ.get(API_KEY_VARIABLE, "").strip() or None,
        data_dir=data_dir,
        database_url=database_url,
        file_store=Path(os.environ.get("AGENTIC_RAG_SERVICE_FILE_STORE", "") or data_dir / "files").expanduser(),
        chroma_url=course.chroma_url,
        collection=os.environ.get("AGENTIC_RAG_SERVICE_COLLECTION", "").strip() or "service-docs",
        max_upload_bytes=_int("AGENTIC_RAG_SERVICE_MAX_UPLOAD_BYTES", IngestLimits().max_file_bytes),
        max_attempts=_int("AGENTIC_RAG_SERVICE_MAX_ATTEMPTS", 3),
        lease_seconds=_float("AGENTIC_RAG_SERVICE_LEASE_SECONDS", 60.0),
        retire_seconds=_float("AGENTIC_RAG_SERVICE_RETIRE_SECONDS", 10.0),
        poll_seconds=_float("AGENTIC_RAG_SERVICE_POLL_SECONDS", 0.5),
        host=os.environ.get("AGENTIC_RAG_SERVICE_HOST", "").strip() or "127.0.0.1",
        port=port,
        workers=int(_float("AGENTIC_RAG_SERVICE_WORKERS", 1)),
        url=(os.environ.get("AGENTIC_RAG_SERVICE_URL", "").strip() or f"http://127.0.0.1:{port}").rstrip("/"),
        reranker=reranker,
    )
