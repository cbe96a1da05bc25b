"""A small typed client for the service, and a context manager that starts it, waits for health and stops it.

Introduced in notebook 08 (from notebook to service); tests/service_support.py uses the same process classes.

- `ServiceClient(url, api_key)`: upload (one file, many with a progress bar, or only what is not indexed yet:
  `upload_new`), jobs, documents, delete, search, ask, the nightly runs — over HTTP, with the server's own
  error message in `ServiceError` when a request is refused.
- `wait_for_jobs(get_job, job_ids, timeout)`: poll until every job is in a final state; `JobTimeout`
  names the jobs still open and their states. Every loop here is bounded by a deadline.
- `running_service(data_dir=None)`: `python -m service api` on a free port of 127.0.0.1 with its own data
  folder (a temporary one by default, removed afterwards), an API key generated for the run and its own
  Chroma collection, so two runs never collide; yields a `RunningService` (its `client()`, `nightly(llm)`)
  and stops the server cleanly (SIGTERM, then SIGKILL after 30 s).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

import httpx
from langchain_core.documents import Document

from lessons.core.i18n import t
from service.db import FINAL_STATES

ROOT = Path(__file__).resolve().parent.parent


class ServiceError(RuntimeError):
    """The service refused a request; the message is the server's reason (which says what to do)."""


class JobTimeout(TimeoutError):
    """Jobs still not finished when the deadline passed; the message names them and their states."""


@dataclass(frozen=True)
class Job:
    """One ingestion job, as `GET /v1/jobs/{id}` reports it."""

    job_id: int
    document_id: str
    status: str
    file_name: str
    attempts: int = 0
    max_attempts: int = 0
    error: str | None = None
    chunks: int | None = None
    size: int | None = None
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATES

    @property
    def seconds(self) -> float | None:
        """From upload to the end of the job (None while it runs)."""
        return None if self.finished_at is None or self.created_at is None else self.finished_at - self.created_at


@dataclass(frozen=True)
class Upload:
    """The reply to an upload: the document, the job that will index it, the name it is stored under."""

    document_id: str
    job_id: int
    name: str
    status: str
    renamed: bool = False


def sha256_of_file(path: str | Path) -> str:
    """The hex SHA-256 of a file's bytes: what the service stores as a document's `sha256`."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def wait_for_jobs(get_job: Callable[[int], Job | dict], job_ids: Iterable[int], timeout: float = 600,
                  every: float = 0.5) -> dict[int, Job | dict]:  # fmt: skip
    """Poll `get_job(id)` until every job is in a final state (done, failed, superseded, cancelled); the jobs by id.

    A failed job is returned like a done one (its `error` says why): only the caller knows whether that is fatal.
    Raises `JobTimeout` after `timeout` seconds, naming the jobs still open with their last state.
    """
    pending, jobs = dict.fromkeys(job_ids), {}
    deadline = time.monotonic() + timeout
    while pending:
        for job_id in list(pending):
            job = get_job(job_id)
            status = job["status"] if isinstance(job, dict) else job.status
            if status in FINAL_STATES:
                jobs[job_id] = job
                del pending[job_id]
            else:
                pending[job_id] = status
        if pending:
            if time.monotonic() >= deadline:
                open_jobs = ", ".join(f"{j} ({s})" for j, s in list(pending.items())[:10])
                raise JobTimeout(t("{n} job(s) not finished after {timeout:g} s: {open_jobs} — look at "
                                   "GET /v1/jobs/{{id}} and the service's log; a slow machine needs a larger timeout",
                                   n=len(pending), timeout=timeout, open_jobs=open_jobs))  # fmt: skip
            time.sleep(max(0.0, min(every, deadline - time.monotonic())))
    return jobs


class ServiceClient:
    """The service's HTTP API as typed methods. Writes need `api_key` (sent as `X-API-Key`); reads do not."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 600):
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url, headers={"X-API-Key": api_key} if api_key else {}, timeout=timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _json(self, reply: httpx.Response) -> Any:
        if reply.status_code >= 400:
            try:
                detail = reply.json().get("detail", reply.text)
            except ValueError:
                detail = reply.text
            raise ServiceError(f"{reply.request.method} {reply.request.url.path} → {reply.status_code}: {detail}")
        return reply.json()

    # --- reads ---

    def health(self) -> dict[str, Any]:
        return self._json(self.http.get("/v1/health"))

    def job(self, job_id: int) -> Job:
        return Job.from_json(self._json(self.http.get(f"/v1/jobs/{job_id}")))

    def jobs(self, status: str | None = None, limit: int = 100) -> list[Job]:
        params = {"limit": limit, **({"status": status} if status else {})}
        return [Job.from_json(j) for j in self._json(self.http.get("/v1/jobs", params=params))]

    def documents(self, include_deleted: bool = False) -> list[dict[str, Any]]:
        """Every document with its state (indexing, indexed, failed, deleted), chunk count, `sha256` and last job."""
        return self._json(self.http.get("/v1/documents", params={"include_deleted": include_deleted}))

    def search(self, query: str, k: int = 3) -> list[Document]:
        """The service's ranked chunks (hybrid, then the reranker) as LangChain documents."""
        reply = self._json(self.http.post("/v1/search", json={"query": query, "k": k}))
        return [Document(page_content=r["text"], metadata=r["metadata"]) for r in reply["results"]]

    def ask(self, question: str, k: int = 3) -> dict[str, Any]:
        """{question, answer, abstained, citations: [{source, page, chunk_id, document_id, text}], context,
        answerability: {answerable, reason, quote, missing} or None, rounds}."""
        return self._json(self.http.post("/v1/ask", json={"question": question, "k": k}))

    def index(self) -> dict[str, Any]:
        return self._json(self.http.get("/v1/index"))

    def eval_runs(self) -> list[dict[str, Any]]:
        """The nightly runs, oldest first, each with its metrics."""
        return self._json(self.http.get("/v1/eval/runs"))

    # --- writes ---

    def upload(self, name: str, content: bytes) -> Upload:
        return Upload(**self._json(self.http.post("/v1/documents", files={"file": (name, content)})))

    def upload_file(self, path: str | Path) -> Upload:
        path = Path(path)
        return self.upload(path.name, path.read_bytes())

    def upload_files(self, paths: Iterable[str | Path], progress: bool = True) -> list[Upload]:
        """Upload each file (a tqdm bar while they go); the replies in order."""
        from tqdm.auto import tqdm

        paths = list(paths)
        return [self.upload_file(p) for p in tqdm(paths, desc=t("upload"), unit="file", disable=not progress)]

    def upload_new(self, paths: Iterable[str | Path], progress: bool = True) -> dict[str, Upload | None]:
        """Upload only the files the service does not hold yet: a live document with the same name and the same
        bytes (SHA-256) is skipped (None), so running the cell again queues no work. By file name."""
        from tqdm.auto import tqdm

        held = {d["name"]: d.get("sha256") for d in self.documents()}
        result: dict[str, Upload | None] = {}
        for path in tqdm(list(paths), desc=t("upload"), unit="file", disable=not progress):
            path = Path(path)
            result[path.name] = None if held.get(path.name) == sha256_of_file(path) else self.upload_file(path)
        return result

    def delete(self, document_id: str) -> bool:
        return bool(self._json(self.http.delete(f"/v1/documents/{document_id}"))["deleted"])

    def wait(self, job_ids: Iterable[int], timeout: float = 600, every: float = 0.5) -> dict[int, Job]:
        """`wait_for_jobs` over this service's jobs."""
        return wait_for_jobs(self.job, job_ids, timeout=timeout, every=every)  # type: ignore[return-value]

    def watch(
        self, job_ids: Iterable[int], timeout: float = 600, every: float = 1.0
    ) -> tuple[dict[int, Job], list[dict]]:
        """Like `wait`, and how many of the jobs were in each state at every round of polls: (jobs by id, timeline rows)."""
        job_ids, timeline = list(job_ids), []
        started = time.monotonic()
        while True:
            jobs = {job_id: self.job(job_id) for job_id in job_ids}
            row: dict[str, Any] = {"seconds": round(time.monotonic() - started, 1)}
            for job in jobs.values():
                row[job.status] = row.get(job.status, 0) + 1
            timeline.append(row)
            if all(job.final for job in jobs.values()):
                return jobs, timeline
            if time.monotonic() - started >= timeout:
                still = ", ".join(f"{j.job_id} ({j.status})" for j in jobs.values() if not j.final)
                raise JobTimeout(
                    t(
                        "jobs not finished after {timeout:g} s: {still} — look at the service's log",
                        timeout=timeout,
                        still=still,
                    )
                )
            time.sleep(every)


# --- processes -------------------------------------------------------------------------------------------------


class Running:
    """A `python -m service …` process and its log file."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path):
        self.log_path = Path(log)
        self.killed = False  # set when stop() had to send SIGKILL
        self._log = self.log_path.open("a")
        self.process = subprocess.Popen([sys.executable, "-m", "service", *args], cwd=ROOT, env=env,
                                        stdout=self._log, stderr=subprocess.STDOUT)  # fmt: skip

    def log(self) -> str:
        """The end of the log (the last 4,000 characters)."""
        return self.log_path.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind runs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log.close()

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM (uvicorn finishes its requests, the worker threads stop), SIGKILL after `timeout` s; the exit code
        (uvicorn re-raises the SIGTERM it handled, so a clean stop exits with -15; `killed` says whether SIGKILL was needed)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.killed = True
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode


class ServiceProcess(Running):
    """`python -m service api` on a free port of 127.0.0.1, ready when /v1/health answers (else RuntimeError with the log)."""

    def __init__(self, env: dict[str, str], log: Path, port: int | None = None, workers: int | None = None,
                 timeout: float = 90):  # fmt: skip
        from lessons.core.local_server import free_port

        self.port = port or free_port()
        args = ["api", "--host", "127.0.0.1", "--port", str(self.port), "--no-access-log", "--log-level", "warning"]
        if workers is not None:
            args += ["--workers", str(workers)]
        super().__init__(args, env, log)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(t("the service did not start: {log}", log=self.log()))
            time.sleep(0.2)


@dataclass
class RunningService:
    """A service started by `running_service`: where it is, its key and data folder, its process."""

    url: str
    api_key: str
    data_dir: Path
    env: dict[str, str]
    process: ServiceProcess

    def client(self, api_key: str | None | bool = True) -> ServiceClient:
        """A client with the run's key (`api_key=None`: without a key, as an anonymous reader)."""
        return ServiceClient(self.url, self.api_key if api_key is True else api_key or None)

    def log(self) -> str:
        return self.process.log()

    def settings(self):
        """The service's settings as the server process has them (for jobs that run beside it, e.g. the nightly run)."""
        from pydantic import SecretStr

        from service.settings import load_service_settings

        return load_service_settings().model_copy(update=dict(
            api_key=SecretStr(self.api_key) if self.api_key else None, data_dir=self.data_dir,
            database_url=self.env["AGENTIC_RAG_SERVICE_DATABASE_URL"], file_store=self.data_dir / "files",
            collection=self.env["AGENTIC_RAG_SERVICE_COLLECTION"], url=self.url,
            reranker=self.env.get("AGENTIC_RAG_SERVICE_RERANKER", "default"),
            nightly_probes=self.env.get("AGENTIC_RAG_SERVICE_NIGHTLY_PROBES")))  # fmt: skip

    def nightly(self, llm, questions: int = 6, seed: int = 0, progress: bool = True,
                probes: str | Path | None = None) -> dict[str, Any]:  # fmt: skip
        """One nightly evaluation of this service (`service.nightly.run_nightly`), run in this process with `llm`:
        questions for the documents indexed since the last run, and the out-of-KB `probes` (a JSONL file; default:
        the service's AGENTIC_RAG_SERVICE_NIGHTLY_PROBES), scored through `/v1/ask`. Its record and report path."""
        from service.core import Service
        from service.nightly import run_nightly

        service = Service(self.settings())
        try:
            return run_nightly(service, self.url, llm, questions=questions, seed=seed, progress=progress, probes=probes)
        finally:
            service.db.engine.dispose()


def service_environment(data_dir: Path, api_key: str, **extra: str) -> dict[str, str]:
    """This process's environment (the course's settings: cache folder, embedder, model) with the service's
    data folder, database, key and a collection of its own; `extra` overrides any variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTIC_RAG_SERVICE_")}
    env.update({
        "AGENTIC_RAG_SERVICE_DATA_DIR": str(data_dir),
        "AGENTIC_RAG_SERVICE_DATABASE_URL": f"sqlite:///{data_dir / 'service.sqlite'}",
        "AGENTIC_RAG_SERVICE_API_KEY": api_key,
        "AGENTIC_RAG_SERVICE_COLLECTION": f"service-{secrets.token_hex(4)}",
        "PYTHONUNBUFFERED": "1",
    })  # fmt: skip
    env.update(extra)
    return env


@contextlib.contextmanager
def running_service(data_dir: str | Path | None = None, *, workers: int | None = None, timeout: float = 180,
                    **env: str) -> Iterator[RunningService]:  # fmt: skip
    """Start the service (`python -m service api` on 127.0.0.1), wait for /v1/health, yield it, stop it.

    `data_dir`: its database, file store and embedded index (default: a temporary folder, removed at the end).
    `env`: extra variables, e.g. `AGENTIC_RAG_SERVICE_RERANKER="none"`. The API key is generated for the run.
    """
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="agentic-rag-service-"))
        data_dir = Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        api_key = secrets.token_urlsafe(24)
        environment = service_environment(data_dir, api_key, **env)
        process = ServiceProcess(environment, data_dir / "service.log", workers=workers, timeout=timeout)
        try:
            yield RunningService(process.url, api_key, data_dir, environment, process)
        finally:
            process.stop()
