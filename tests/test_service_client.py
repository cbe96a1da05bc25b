"""service.client: the polling loop's deadline and messages, the typed records, and running_service() end to end
(the real server on 127.0.0.1, a temporary data folder, a generated key; started, used and stopped)."""

from __future__ import annotations

import signal
import time

import httpx
import pytest
from service_support import document_text

from service.client import Job, JobTimeout, ServiceClient, ServiceError, running_service, wait_for_jobs


def scripted(states: dict[int, list[str]]):
    calls = {job_id: 0 for job_id in states}

    def get_job(job_id):
        calls[job_id] += 1
        status = states[job_id][min(calls[job_id], len(states[job_id])) - 1]
        return Job(job_id=job_id, document_id=f"d{job_id}", status=status, file_name=f"f{job_id}.md")

    return get_job, calls


def test_wait_for_jobs_returns_every_final_job_and_stops_asking_about_it():
    get_job, calls = scripted({1: ["pending", "running", "done"], 2: ["failed"], 3: ["running", "superseded"]})
    jobs = wait_for_jobs(get_job, [1, 2, 3], timeout=5, every=0.01)
    assert {j: job.status for j, job in jobs.items()} == {1: "done", 2: "failed", 3: "superseded"}
    assert calls == {1: 3, 2: 1, 3: 2}


def test_wait_for_jobs_gives_up_at_the_deadline_naming_the_open_jobs():
    get_job, calls = scripted({1: ["done"], 2: ["running"], 3: ["pending"]})
    started = time.monotonic()
    with pytest.raises(JobTimeout, match=r"2 job\(s\) not finished after 0.3 s: 2 \(running\), 3 \(pending\)"):
        wait_for_jobs(get_job, [1, 2, 3], timeout=0.3, every=0.05)
    assert 0.25 <= time.monotonic() - started < 1.5
    assert calls[2] <= 10  # it slept between rounds
    assert isinstance(JobTimeout("x"), TimeoutError)


def test_a_job_record_ignores_fields_it_does_not_know_and_says_when_it_is_final():
    job = Job.from_json({"job_id": 4, "document_id": "d", "status": "done", "file_name": "a.md", "created_at": 10.0,
                         "finished_at": 12.5, "a_field_added_later": 1})  # fmt: skip
    assert job.final and job.seconds == 2.5
    assert not Job.from_json({"job_id": 5, "document_id": "d", "status": "running", "file_name": "a.md"}).final


def test_running_service_end_to_end_then_stopped_and_cleaned_up(tmp_path, monkeypatch):
    for name in ("AGENTIC_RAG_CHROMA_URL", "AGENTIC_RAG_SERVER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENTIC_RAG_EMBEDDER", "use")
    monkeypatch.setenv("AGENTIC_RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_POLL_SECONDS", "0.1")
    first = tmp_path / "atlas.md"
    first.write_bytes(document_text("atlas", "port-7420", paragraphs=2))
    other = tmp_path / "lisbon.md"
    other.write_bytes(document_text("lisbon", "leave-25", paragraphs=1))
    with running_service() as service:
        data_dir = service.data_dir
        assert data_dir.is_dir() and service.api_key and service.api_key not in service.log()
        with service.client(api_key=None) as anonymous, pytest.raises(ServiceError, match="401.*X-API-Key"):
            anonymous.upload("sneaky.md", b"# no key")
        with service.client() as client:
            assert client.health()["stores"]["reranker"] == "default"
            uploads = client.upload_files([first, other], progress=False)
            jobs, timeline = client.watch([u.job_id for u in uploads], timeout=180, every=0.2)
            assert all(job.status == "done" and job.chunks for job in jobs.values()), jobs
            assert timeline[-1].get("done") == 2 and timeline[0]["seconds"] <= timeline[-1]["seconds"]
            hits = client.search("What is the marker of atlas?", k=2)
            assert hits and hits[0].metadata["source"] == "atlas.md" and 0 < hits[0].metadata["score"] < 1
            again = client.upload_new([first, other], progress=False)
            assert again == {"atlas.md": None, "lisbon.md": None}  # the same bytes: nothing queued
            first.write_bytes(document_text("atlas", "port-7421", paragraphs=2))
            changed = client.upload_new([first, other], progress=False)
            assert changed["lisbon.md"] is None and changed["atlas.md"] is not None
            assert client.wait([changed["atlas.md"].job_id], timeout=180)[changed["atlas.md"].job_id].status == "done"
            assert client.delete(uploads[1].document_id)
            assert {d["name"] for d in client.documents()} == {"atlas.md"}
            with pytest.raises(ServiceError, match="404"):
                client.delete(uploads[1].document_id)
        url = service.url
    # SIGTERM: uvicorn shut down within the grace time (it re-raises the signal it handled: exit status -15)
    assert not service.process.killed and service.process.process.returncode in (0, -signal.SIGTERM)
    assert not data_dir.exists()
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/v1/health", timeout=2)


def test_a_client_error_carries_the_servers_reason():
    transport = httpx.MockTransport(
        lambda request: httpx.Response(404, json={"detail": "no job 9 — the upload's reply gives its job_id"})
    )
    client = ServiceClient("http://service.invalid")
    client.http = httpx.Client(base_url="http://service.invalid", transport=transport)
    with pytest.raises(ServiceError, match=r"GET /v1/jobs/9 → 404: no job 9 — the upload's reply gives its job_id"):
        client.job(9)
