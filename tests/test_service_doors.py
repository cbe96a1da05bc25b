"""The service's doors under races and hostile input: a delete that stays deleted, a long Chinese name, uploads never
stuck in `uploading`, one new name uploaded by 240 clients at once (SQLite and a throw-away PostgreSQL cluster)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from service_support import API_KEY, Postgres, document_text, postgres_binaries, service_env


def make_service(tmp_path: Path, monkeypatch, database_url: str | None = None, **extra: str):
    from service.core import Service
    from service.settings import load_service_settings

    for key, value in service_env(tmp_path, **extra).items():
        if key.startswith("AGENTIC_RAG_"):
            monkeypatch.setenv(key, value)
    if database_url:
        monkeypatch.setenv("AGENTIC_RAG_SERVICE_DATABASE_URL", database_url)
    return Service(load_service_settings())


def test_a_deleted_document_stays_deleted_when_its_old_job_finishes(tmp_path, monkeypatch):
    """Delete while the job runs, re-upload the name: the old job commits for its own upload only."""
    import io

    from service.db import Document, active_generations, claim_job, commit_job

    service = make_service(tmp_path, monkeypatch)
    first = service.upload("plan.md", io.BytesIO(document_text("plan", "secret-old")))
    claim = claim_job(service.db, "w", lease_seconds=60)
    assert claim is not None and claim.job_id == first["job_id"]
    assert service.delete(first["document_id"])
    second = service.upload("plan.md", io.BytesIO(b""))  # a new upload of the name, one that will fail
    assert commit_job(service.db, claim, 3) == "cancelled"
    generations = active_generations(service.db)
    assert first["job_id"] not in generations.values()
    with service.db.read() as session:
        old = session.get(Document, first["document_id"])
        assert old.deleted_at is not None and old.active_job_id is None
    assert second["document_id"] not in generations


def test_a_long_chinese_name_is_stored_not_a_500(tmp_path, monkeypatch):
    import io

    service = make_service(tmp_path, monkeypatch)
    name = "季度报告" * 31 + ".md"  # 127 characters, 382 bytes in UTF-8: over the file system's 255 bytes
    reply = service.upload(name, io.BytesIO(document_text("季度报告", "long-name")))
    assert reply["status"] == "pending" and reply["renamed"] and reply["name"].endswith(".md")
    assert len(reply["name"].encode("utf-8")) <= 255
    stored = list((tmp_path / "service" / "files").rglob("*.md"))
    assert [p.name for p in stored] == [reply["name"]]


def test_an_upload_interrupted_by_a_kill_is_failed_on_restart_not_stuck(tmp_path, monkeypatch):
    """A job left in `uploading` (the process died while saving) is repaired or failed when the service starts."""
    from fastapi.testclient import TestClient

    from service.api import create_app
    from service.db import Document, Job, new_id

    service = make_service(tmp_path, monkeypatch)
    long_ago = time.time() - 3600
    with service.db.write() as session:
        document = Document(id=new_id(), name="half.md", created_at=long_ago, updated_at=long_ago, chunk_count=0)
        session.add(document)
        session.flush()
        session.add(Job(document_id=document.id, status="uploading", file_name="half.md", created_at=long_ago,
                        not_before=0.0))  # fmt: skip
        document_id = document.id
    part = tmp_path / "service" / "files" / document_id / "1" / "tmpabc.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"# half")
    with TestClient(create_app(service, workers=0)) as client:
        (job,) = client.get("/v1/jobs").json()
        assert job["status"] == "failed" and "half.md" in job["error"] and "upload" in job["error"], job
        assert client.get(f"/v1/documents/{document_id}").json()["state"] == "failed"
    assert not part.exists()


def test_an_upload_is_refused_before_its_body_is_read_without_a_key_and_at_the_limit_with_413(tmp_path, monkeypatch):
    """No key: 401 before a byte of the body is read; over the limit: 413 at the limit, and no document made."""
    from fastapi.testclient import TestClient

    from service.api import create_app

    service = make_service(tmp_path, monkeypatch, AGENTIC_RAG_SERVICE_MAX_UPLOAD_BYTES="50000")
    read = []

    def body():
        for _ in range(256):  # 256 MiB, in 1 MiB blocks, counted as the server pulls them
            read.append(1)
            yield b"x" * (1 << 20)

    headers = {"Content-Type": "multipart/form-data; boundary=b"}
    with TestClient(create_app(service, workers=0)) as client:
        anonymous = client.post("/v1/documents", content=body(), headers=headers)
        assert anonymous.status_code == 401 and len(read) <= 1, (anonymous.status_code, len(read))
        read.clear()

        def framed():
            yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.md"\r\n\r\n'
            yield from body()

        too_big = client.post("/v1/documents", content=framed(), headers={**headers, "X-API-Key": API_KEY})
        assert too_big.status_code == 413 and "big.md" in too_big.json()["detail"], too_big.text
        assert "AGENTIC_RAG_SERVICE_MAX_UPLOAD_BYTES" in too_big.json()["detail"]
        fits = client.post("/v1/documents", files={"file": ("fits.md", document_text("fits", "ok"))},
                           headers={"X-API-Key": API_KEY})  # fmt: skip
        assert fits.status_code == 202 and fits.json()["name"] == "fits.md", fits.text
        assert [d["name"] for d in client.get("/v1/documents?include_deleted=true").json()] == ["fits.md"]


# --- PostgreSQL ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    if postgres_binaries() is None:
        pytest.skip("PostgreSQL is not installed (no initdb/pg_ctl): apt-get install postgresql")
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[dev]'")
    server = Postgres(tmp_path_factory.mktemp("postgres"))
    yield server.url
    server.stop()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_240_concurrent_first_uploads_of_one_name_give_one_document_and_its_last_version(backend, tmp_path,
                                                                                         monkeypatch, request):  # fmt: skip
    import io

    from service.db import Base, Document
    from service.worker import Worker

    url = request.getfixturevalue("postgres") if backend == "postgresql" else None
    service = make_service(tmp_path, monkeypatch, database_url=url)
    if url:
        Base.metadata.drop_all(service.db.engine)
        Base.metadata.create_all(service.db.engine)
    replies, errors = [], []
    start = threading.Barrier(240)

    def one(number: int) -> None:
        try:
            start.wait(timeout=60)
            replies.append(service.upload("race.md", io.BytesIO(document_text("race", f"version-{number}"))))
        except BaseException as error:  # noqa: BLE001 - counted below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(240)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, f"{len(errors)} of 240 uploads failed: {errors[:3]}"
    assert len({r["document_id"] for r in replies}) == 1
    worker = Worker(service, name="drill")
    while worker.run_once():
        pass
    last = max(replies, key=lambda r: r["job_id"])
    with service.db.read() as session:
        (document,) = session.query(Document).filter(Document.name == "race.md").all()
        assert document.active_job_id == last["job_id"]
    if url:
        Base.metadata.drop_all(service.db.engine)
    service.db.engine.dispose()


def test_a_worker_whose_job_was_taken_over_can_neither_renew_fail_nor_commit_it(tmp_path, monkeypatch):
    """Its lease ran out and another worker claimed the job: the first worker's claim is lost at every step, the
    second one's holds (the one ownership test `renew_lease`, `fail_job` and `commit_job` share)."""
    import io

    from service.db import Job, claim_job, commit_job, fail_job, renew_lease

    service = make_service(tmp_path, monkeypatch)
    upload = service.upload("plan.md", io.BytesIO(document_text("plan", "taken-over")))
    first = claim_job(service.db, "first", lease_seconds=-1)  # its lease has run out already
    second = claim_job(service.db, "second", lease_seconds=60)
    assert first is not None and second is not None and second.job_id == first.job_id == upload["job_id"]
    assert not renew_lease(service.db, first, lease_seconds=60)
    assert fail_job(service.db, first, "boom", retry=True) == "lost"
    assert commit_job(service.db, first, 3) == "lost"
    assert renew_lease(service.db, second, lease_seconds=60)
    assert commit_job(service.db, second, 3) == "done"
    assert commit_job(service.db, second, 3) == "lost", "a finished job is no longer running: nobody holds it"
    with service.db.read() as session:
        job = session.get(Job, upload["job_id"])
        assert (job.status, job.claimed_by, job.chunks, job.error) == ("done", "second", 3, None)
