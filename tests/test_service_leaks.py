"""What the service must not keep or write: a key sent in the query string (the access log) and a deleted
document's text (the conversion cache)."""

from __future__ import annotations

import io
import logging
import threading
import time
from pathlib import Path

import httpx
import pytest
from service_support import API_KEY, document_text
from test_service_doors import make_service


@pytest.fixture(autouse=True)
def settings_read_anew():
    """The course settings (and so the cache folder) read from the environment each test sets."""
    from lessons.core.settings import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def cached_texts(tmp_path: Path) -> str:
    """Every conversion cached under the service's cache folder, as one string."""
    return "\n".join(path.read_text(encoding="utf-8") for path in (tmp_path / "cache" / "docling").glob("*.json"))


def test_a_deleted_documents_text_leaves_the_conversion_cache_unless_a_live_document_has_its_bytes(
    tmp_path, monkeypatch
):
    from lessons.core.settings import get_settings
    from service.worker import Worker

    service = make_service(tmp_path, monkeypatch)
    assert get_settings().cache_dir == tmp_path / "cache"
    worker = Worker(service, "w")
    plan = service.upload("plan.md", io.BytesIO(document_text("plan", "secret-plan")))
    assert worker.run_once()
    assert "secret-plan" in cached_texts(tmp_path)
    assert service.delete(plan["document_id"])
    assert "secret-plan" not in cached_texts(tmp_path), "the deleted text stayed in the conversion cache"

    # the same bytes under two names: deleting the copy keeps the conversion of the live one
    notes = service.upload("notes.md", io.BytesIO(document_text("notes", "shared-notes")))
    copy = service.upload("copy.md", io.BytesIO(document_text("notes", "shared-notes")))
    assert worker.run_once() and worker.run_once()
    assert service.delete(copy["document_id"])
    assert "shared-notes" in cached_texts(tmp_path)
    assert service.delete(notes["document_id"])
    assert "shared-notes" not in cached_texts(tmp_path)


def test_a_document_deleted_while_its_job_converts_leaves_no_text_in_the_cache(tmp_path, monkeypatch):
    from service.worker import Worker

    service = make_service(tmp_path, monkeypatch)
    upload = service.upload("late.md", io.BytesIO(document_text("late", "secret-late")))
    upsert = service.index.upsert

    def delete_meanwhile(document_id, job_id, chunks):  # converted and embedded; the delete comes before the commit
        count = upsert(document_id, job_id, chunks)
        assert "secret-late" in cached_texts(tmp_path)
        assert service.delete(upload["document_id"])
        return count

    monkeypatch.setattr(service.index, "upsert", delete_meanwhile)
    assert Worker(service, "w").run_once()
    with service.db.read() as session:
        from service.db import Job

        assert session.get(Job, upload["job_id"]).status == "cancelled"
    assert "secret-late" not in cached_texts(tmp_path)


def test_a_key_sent_in_the_query_string_is_not_written_to_the_access_log(tmp_path, monkeypatch):
    """The real app under uvicorn (its own access logger and format), on a free port of 127.0.0.1."""
    import uvicorn

    from lessons.core.local_server import free_port
    from service.api import create_app

    service = make_service(tmp_path, monkeypatch)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(service, workers=0), host="127.0.0.1", port=port,
                                           log_level="info", access_log=True))  # fmt: skip
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record):
            lines.append(self.format(record))

    capture = Capture()
    logging.getLogger("uvicorn.access").addHandler(capture)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 30
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        assert server.started
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30) as client:
            assert client.get(f"/v1/health?api_key={API_KEY}&verbose=1").status_code == 200
            assert client.delete(f"/v1/documents/nothing?key={API_KEY}").status_code == 401
            assert client.get("/v1/jobs", params={"token": "other-secret", "status": "failed"}).status_code == 200
            assert client.get(f"/v1/documents/{API_KEY}").status_code == 404  # the key where a path goes
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        logging.getLogger("uvicorn.access").removeHandler(capture)
    log = "\n".join(lines)
    assert len(lines) >= 4, log
    assert API_KEY not in log and "other-secret" not in log, log
    assert "/v1/health?api_key=***&verbose=1" in log and "/v1/documents/nothing?key=***" in log, log
    assert "token=***&status=failed" in log and "/v1/documents/***" in log, log
