"""The HTTP API (FastAPI): upload, jobs, documents, search, ask — and the nightly runs.

Introduced in notebook 08 (from notebook to service). Write endpoints (upload, delete) need the key
of `AGENTIC_RAG_SERVICE_API_KEY` in an `X-API-Key` header; reads do not. The key is compared in
constant time and never logged: uvicorn's access log has no headers, and a key sent in the query string
by mistake (`?api_key=…`) is written there as `***` (`RedactSecrets`).

    POST   /v1/documents            multipart `file` → 202 {document_id, job_id, name, status}
    GET    /v1/documents            every document with its last job
    GET    /v1/documents/{id}       one document
    GET    /v1/documents/{id}/chunks  its searchable chunks
    DELETE /v1/documents/{id}       hide it from searches now; chunks and files are removed
    GET    /v1/jobs/{id}            a job: pending, running, done, failed (with the reason), …
    GET    /v1/jobs                 recent jobs (?status=failed)
    POST   /v1/search               {"query": …, "k": 3} → ranked chunks (hybrid, then the reranker)
    POST   /v1/ask                  {"question": …} → answer with citations
    GET    /v1/index                chunks per generation, duplicate ids (for checks)
    GET    /v1/eval/runs            the nightly evaluations, oldest first
    GET    /v1/health               where each store is, job counts
"""

from __future__ import annotations

import hmac
import logging
import re
from contextlib import asynccontextmanager
from urllib.parse import quote, quote_plus, unquote_plus

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from lessons.core.models import ModelError
from service.core import Service
from service.filestore import BadFileName
from service.settings import API_KEY_VARIABLE, MAX_K

logger = logging.getLogger("service.api")


class SearchRequest(BaseModel):
    query: str = Field(min_length=1, max_length=2000)
    k: int = Field(default=3, ge=1, le=MAX_K)


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    k: int = Field(default=3, ge=1, le=10)


TOO_LARGE = ("'{name}' is over the upload limit of {limit:,} bytes — split the file, or raise "
             "AGENTIC_RAG_SERVICE_MAX_UPLOAD_BYTES (now {limit})")  # fmt: skip


async def receive_file(request: Request, limit: int):
    """(name, spooled file) of the multipart field `file`, streamed; 413 as soon as it passes `limit` bytes."""
    import tempfile

    from python_multipart.multipart import MultipartParser, parse_options_header

    kind, options = parse_options_header(request.headers.get("content-type", ""))
    if kind != b"multipart/form-data" or b"boundary" not in options:
        raise HTTPException(422, "send the file as multipart/form-data in a field named 'file'")
    declared = int(request.headers.get("content-length") or 0)
    if declared > limit + (1 << 16):  # more than the file plus its multipart framing: refused unread
        raise HTTPException(413, TOO_LARGE.format(name="the upload", limit=limit))
    body = tempfile.SpooledTemporaryFile(max_size=1 << 20)  # noqa: SIM115 - the caller closes it
    state = {"field": b"", "value": b"", "disposition": b"", "name": None, "size": 0, "in_file": False}

    def header_end():
        if state["field"].lower() == b"content-disposition":
            _kind, params = parse_options_header(state["value"])
            state["in_file"] = params.get(b"name") == b"file"
            if state["in_file"]:
                state["name"] = params.get(b"filename", b"").decode("utf-8", "replace")
        state["field"] = state["value"] = b""

    def data(chunk, start, end):
        if state["in_file"]:
            state["size"] += end - start
            if state["size"] <= limit:
                body.write(chunk[start:end])

    callbacks = {
        "on_part_begin": lambda: state.update(in_file=False),
        "on_header_field": lambda c, s, e: state.update(field=state["field"] + c[s:e]),
        "on_header_value": lambda c, s, e: state.update(value=state["value"] + c[s:e]),
        "on_header_end": header_end,
        "on_part_data": data,
    }
    parser = MultipartParser(options[b"boundary"], callbacks)
    async for chunk in request.stream():
        parser.write(chunk)
        if state["size"] > limit:
            body.close()
            raise HTTPException(413, TOO_LARGE.format(name=state["name"], limit=limit))
    parser.finalize()
    if state["name"] is None:
        body.close()
        raise HTTPException(422, "no field named 'file' in the upload — send the file as multipart/form-data 'file'")
    body.seek(0)
    return state["name"], body


SECRET_PARAMETER = re.compile(r"(?i)^(?:x[-_]?)?(?:api[-_]?key|key|token|access[-_]?token|secret|password)$")


class RedactSecrets(logging.Filter):
    """Writes `***` in uvicorn's access log for the values of key-like query parameters (`?api_key=…`,
    `?token=…`) and for the service's key wherever it appears in the requested path."""

    def __init__(self, key: str | None = None):
        super().__init__("service.redact")
        self.key = key or None

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], self.redact(args[2]), *args[3:])
        return True

    def redact(self, path: str) -> str:
        if self.key:
            for form in {self.key, quote(self.key, safe=""), quote_plus(self.key)}:
                path = path.replace(form, "***")
        base, question_mark, query = path.partition("?")
        if not question_mark:
            return path
        parts = []
        for part in query.split("&"):
            name, equals, _value = part.partition("=")
            parts.append(f"{name}=***" if equals and SECRET_PARAMETER.match(unquote_plus(name)) else part)
        return f"{base}?{'&'.join(parts)}"


def redact_access_log(key: str | None) -> None:
    """Install `RedactSecrets` on uvicorn's access logger (once: a new app replaces the filter of the last)."""
    access = logging.getLogger("uvicorn.access")
    for old in [f for f in access.filters if isinstance(f, RedactSecrets)]:
        access.removeFilter(old)
    access.addFilter(RedactSecrets(key))


def create_app(service: Service | None = None, workers: int | None = None) -> FastAPI:
    """The app; with `workers` > 0 (default: the setting) ingestion worker threads run inside it."""
    service = service or Service()
    workers = service.settings.workers if workers is None else workers
    api_key = service.settings.api_key
    redact_access_log(api_key.get_secret_value() if api_key is not None else None)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        stop = None
        repaired = service.repair_uploads()
        if repaired:
            logger.warning("%d upload(s) interrupted by a stop were failed; upload them again", repaired)
        if workers > 0:
            from service.worker import start_threads

            stop, threads = start_threads(service, workers)
        logger.info("service ready: %s; %d worker thread(s)", service.settings.describe(), workers)
        yield
        if stop is not None:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)

    app = FastAPI(title="Agentic RAG course service", version="1", lifespan=lifespan)
    app.state.service = service

    @app.exception_handler(ModelError)
    async def model_unavailable(_request: Request, error: ModelError):
        # The chat model failed (the local server crashed or stopped, DeepSeek unreachable): say why, with a 503 —
        # the next request starts a fresh local server, so the service recovers without a restart.
        logger.error("chat model unavailable: %s", error)
        return JSONResponse(status_code=503, content={"detail": f"the chat model is unavailable: {error}"})

    def require_key(x_api_key: str | None = Header(default=None)) -> None:
        expected = service.settings.api_key
        if expected is None:
            raise HTTPException(503, f"writes are disabled: no API key is configured — set {API_KEY_VARIABLE}=… in .env "
                                     "and restart the service")  # fmt: skip
        if not x_api_key or not hmac.compare_digest(x_api_key.encode(), expected.get_secret_value().encode()):
            raise HTTPException(
                401,
                "missing or wrong API key — send it in the X-API-Key header",
                headers={"WWW-Authenticate": "X-API-Key"},
            )

    @app.get("/v1/health")
    def health():
        return {
            "status": "ok",
            "stores": service.settings.describe(),
            "jobs": service.job_counts(),
            "workers": workers,
        }

    @app.post("/v1/documents", status_code=202, dependencies=[Depends(require_key)])
    async def upload(request: Request):
        # The key is checked (the dependency) before a byte of the body is read; the body is streamed, refused at the limit.
        name, body = await receive_file(request, service.settings.max_upload_bytes)
        try:
            return await run_in_threadpool(service.upload, name, body)
        except BadFileName as error:
            raise HTTPException(400, str(error)) from None
        finally:
            body.close()

    @app.get("/v1/documents")
    def list_documents(include_deleted: bool = False):
        return service.documents(include_deleted)

    def _document(document_id: str) -> dict:
        document = service.document(document_id)
        if document is None:
            raise HTTPException(404, f"no document {document_id!r} — list them with GET /v1/documents")
        return document

    @app.get("/v1/documents/{document_id}")
    def get_document(document_id: str):
        return _document(document_id)

    @app.get("/v1/documents/{document_id}/chunks")
    def document_chunks(document_id: str):
        _document(document_id)
        return service.document_chunks(document_id)

    @app.delete("/v1/documents/{document_id}", dependencies=[Depends(require_key)])
    def delete_document(document_id: str):
        if not service.delete(document_id):
            raise HTTPException(404, f"no live document {document_id!r} — list them with GET /v1/documents")
        return {"document_id": document_id, "deleted": True}

    @app.get("/v1/jobs/{job_id}")
    def get_job(job_id: int):
        job = service.job(job_id)
        if job is None:
            raise HTTPException(404, f"no job {job_id} — the upload's reply gives its job_id")
        return job

    @app.get("/v1/jobs")
    def list_jobs(status: str | None = None, limit: int = 100):
        return service.jobs(status, limit)

    @app.post("/v1/search")
    def search(request: SearchRequest):
        return {"query": request.query, "results": service.search(request.query, request.k)}

    @app.post("/v1/ask")
    def ask(request: AskRequest):
        return service.ask(request.question, request.k)

    @app.get("/v1/index")
    def index_stats():
        return service.index_stats()

    @app.get("/v1/eval/runs")
    def eval_runs():
        return service.eval_runs()

    return app
