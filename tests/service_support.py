"""Helpers for tests/test_service_*.py: start the real service (uvicorn) on 127.0.0.1, wait for jobs, start PostgreSQL.

Every loop here is bounded by a deadline and stops by itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx

from lessons.core.local_server import free_port
from service.client import Running
from service.client import ServiceProcess as _ServiceProcess
from service.client import wait_for_jobs as _wait_for_jobs

__all__ = [
    "API_KEY",
    "Postgres",
    "Running",
    "ServiceProcess",
    "document_text",
    "service_env",
    "upload",
    "wait_for_jobs",
    "wait_until",
]

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "test-key-not-secret"


def service_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A clean environment for a service under tmp_path: the fast embedder, short leases, a known key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "DEEPSEEK_"))}
    env.update({
        "AGENTIC_RAG_CACHE_DIR": str(tmp_path / "cache"),
        "AGENTIC_RAG_EMBEDDER": "use",  # ≈ 800 passages/s on 2 cores; the default e5 is ≈ 50
        "AGENTIC_RAG_MODEL": "local",
        "AGENTIC_RAG_SERVICE_DATA_DIR": str(tmp_path / "service"),
        "AGENTIC_RAG_SERVICE_API_KEY": API_KEY,
        "AGENTIC_RAG_SERVICE_LEASE_SECONDS": "2",
        "AGENTIC_RAG_SERVICE_RETIRE_SECONDS": "0.5",
        "AGENTIC_RAG_SERVICE_POLL_SECONDS": "0.1",
        "PYTHONUNBUFFERED": "1",
    })  # fmt: skip
    env.update(extra)
    return env


class ServiceProcess(_ServiceProcess):
    """`service.client.ServiceProcess` (the service on a free port of 127.0.0.1), with raw httpx clients for the tests."""

    def client(self, key: str | None = API_KEY) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-Key": key} if key else {}, timeout=60)


def upload(client: httpx.Client, name: str, content: bytes) -> dict:
    reply = client.post("/v1/documents", files={"file": (name, content)})
    assert reply.status_code == 202, reply.text
    return reply.json()


def wait_for_jobs(client: httpx.Client, job_ids, timeout: float = 120) -> dict[int, dict]:
    """Poll until every job is in a final state; the jobs (JSON) by id. Fails after `timeout` seconds
    (`service.client.wait_for_jobs`, over a raw httpx client)."""
    return _wait_for_jobs(lambda job_id: client.get(f"/v1/jobs/{job_id}").json(), job_ids, timeout=timeout, every=0.2)


def wait_until(condition, timeout: float = 30, every: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} not reached after {timeout} s"
        time.sleep(every)


def document_text(name: str, marker: str, paragraphs: int = 1, filler: int = 3) -> bytes:
    """A small Markdown document whose every paragraph carries `marker`."""
    body = "\n\n".join(f"## Part {i}\n\n{name} paragraph {i} says the marker is {marker}. " + "Filler words here. " * filler
                       for i in range(paragraphs))  # fmt: skip
    return f"# {name}\n\n{body}\n".encode()


# --- PostgreSQL from Debian's packages, started here ------------------------------------------------------


def postgres_binaries() -> Path | None:
    """The folder of initdb/pg_ctl/postgres: on PATH, or Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(os.path.realpath(found)).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: p.parts[-3])
    return versions[-1].parent if versions else None


class Postgres:
    """A throw-away cluster in `folder`, on 127.0.0.1:<free port>; as the `postgres` user when we are root."""

    def __init__(self, folder: Path):
        self.bin = postgres_binaries()
        assert self.bin is not None
        self.port = free_port()
        self.as_user = os.geteuid() == 0  # initdb refuses to run as root
        if self.as_user:  # pytest's own folders are root's alone: the cluster gets a folder postgres can reach
            import tempfile

            folder = Path(tempfile.mkdtemp(prefix="service-postgres-"))
            shutil.chown(folder, "postgres")
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / "data"
        self._run([str(self.bin / "initdb"), "-D", str(data), "-U", "service", "--auth=trust", "-E", "UTF8"])
        self._run([str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(folder / "postgres.log"), "-w", "-t", "60",
                   "-o", f"-h 127.0.0.1 -p {self.port} -k {folder}", "start"])  # fmt: skip
        self.data = data
        self.url = f"postgresql+psycopg://service@127.0.0.1:{self.port}/postgres"

    def _run(self, command: list[str]) -> None:
        if self.as_user:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/", check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {result.stdout[-1500:]} {result.stderr[-1500:]}")

    def stop(self) -> None:
        try:
            self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])
        finally:
            if self.as_user:
                shutil.rmtree(self.folder, ignore_errors=True)
