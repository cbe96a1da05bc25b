"""The service's other storage paths, by settings only: PostgreSQL (Debian's package, started here as a throw-away
cluster on 127.0.0.1) and a Chroma server (`chroma run` on 127.0.0.1) with separate worker processes; and the job
claim that keeps two workers off the same job, on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from service_support import (
    Postgres,
    Running,
    ServiceProcess,
    document_text,
    postgres_binaries,
    service_env,
    upload,
    wait_for_jobs,
    wait_until,
)
from test_evaluate_cli import chroma_server  # noqa: F401 - the fixture that starts `chroma run` on 127.0.0.1


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    if postgres_binaries() is None:
        pytest.skip("PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin): "
                    "apt-get install postgresql, or run scripts/setup.sh dev as root")  # fmt: skip
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed: pip install -e '.[dev]'")
    server = Postgres(tmp_path_factory.mktemp("postgres"))
    yield server.url
    server.stop()


def queue_jobs(db, count: int) -> None:
    from service.db import Document, Job, new_id

    now = time.time()
    with db.write() as session:
        for number in range(count):
            document = Document(id=new_id(), name=f"doc-{number}.md", created_at=now, updated_at=now, chunk_count=0)
            session.add(document)
            session.add(
                Job(document_id=document.id, status="pending", file_name=document.name, created_at=now, not_before=0.0)
            )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_workers_never_take_the_same_job(backend, tmp_path, request):
    from service.db import claim_job, open_database

    url = f"sqlite:///{tmp_path / 'claims.sqlite'}" if backend == "sqlite" else request.getfixturevalue("postgres")
    db = open_database(url)
    if backend == "postgresql":
        from service.db import Base

        Base.metadata.drop_all(db.engine)
        Base.metadata.create_all(db.engine)
    queue_jobs(db, 60)
    taken: list[tuple[str, int]] = []
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                claim = claim_job(db, name, lease_seconds=600)
                if claim is None:
                    return
                taken.append((name, claim.job_id))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert not errors, errors
    counts = Counter(job_id for _name, job_id in taken)
    assert len(counts) == 60 and set(counts.values()) == {1}  # every job taken, and by one worker only
    assert len({name for name, _ in taken}) > 1  # the workers really competed
    if backend == "postgresql":
        from service.db import Base

        Base.metadata.drop_all(db.engine)
    db.engine.dispose()


def test_postgres_and_a_chroma_server_with_separate_workers_one_killed_mid_job(postgres, chroma_server, tmp_path):  # noqa: F811
    env = service_env(tmp_path, AGENTIC_RAG_SERVICE_DATABASE_URL=postgres, AGENTIC_RAG_CHROMA_URL=chroma_server,
                      AGENTIC_RAG_SERVICE_COLLECTION="backends-test")  # fmt: skip
    api = ServiceProcess(env, tmp_path / "api.log", workers=0)
    workers = [Running(["worker"], env, tmp_path / f"worker{i}.log") for i in range(2)]
    try:
        with api.client() as client:
            health = client.get("/v1/health").json()
            assert health["stores"]["database"].startswith("postgresql+psycopg://service@127.0.0.1")
            assert health["stores"]["index"] == f"Chroma server {chroma_server}"
            small = [upload(client, f"small-{n}.md", document_text(f"small {n}", f"s{n}")) for n in range(12)]
            big = upload(client, "big.md", document_text("big", "kill-me", paragraphs=300))
            generation = f"{big['document_id']}:{big['job_id']}"

            def big_job_half_way():
                job = client.get(f"/v1/jobs/{big['job_id']}").json()
                held = client.get("/v1/index").json()["generations"].get(generation, 0)
                return job if job["status"] == "running" and held > 0 else None

            wait_until(big_job_half_way, timeout=180, every=0.05, what="the big job half-way")
            for worker in workers:  # SIGKILL both (whichever holds the big job), then start a fresh one
                worker.kill()
            workers = [Running(["worker"], env, tmp_path / "worker-restarted.log")]
            jobs = wait_for_jobs(client, [r["job_id"] for r in small] + [big["job_id"]], timeout=240)
            assert all(j["status"] == "done" for j in jobs.values()), [
                j for j in jobs.values() if j["status"] != "done"
            ]
            assert jobs[big["job_id"]]["attempts"] == 2
            stats = client.get("/v1/index").json()
            assert stats["duplicate_ids"] == 0 and stats["generations"][generation] == jobs[big["job_id"]]["chunks"]
            assert stats["total"] == sum(j["chunks"] for j in jobs.values())
            hits = client.post("/v1/search", json={"query": "small 7 marker s7", "k": 3}).json()["results"]
            assert any("s7" in hit["text"] for hit in hits)
    finally:
        for worker in workers:
            worker.stop()
        api.stop()
