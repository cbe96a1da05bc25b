"""The background ingestion worker: claim a pending job, convert, chunk, embed, upsert, commit.

Introduced in notebook 08 (from notebook to service). Each step is the course's own:
`lessons.ingest.convert_file` (validation with clear errors, Docling, the conversion cache),
`lessons.retrieval.document_processor.chunk_files` (Markdown sections, the bilingual size cap, numbering),
`lessons.core.embeddings` behind the cache folder's vector cache (`lessons.chunking.cached_embeddings`) through
`service.index.LiveIndex.upsert`.

- A bad file (empty, corrupt, unsupported, over the limit, the same bytes as another document)
  fails its own job with the reason, at once: trying again would give the same answer.
- Any other error is retried after a back-off, up to `AGENTIC_RAG_SERVICE_MAX_ATTEMPTS`; other jobs go on.
- While it works, the worker renews the job's lease; a worker that is killed stops renewing, and once
  the lease runs out another worker (or the same one restarted) takes the job again and upserts the
  same chunk ids: every chunk is held once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from service.db import (
    CANCELLED,
    DONE,
    Claim,
    Document,
    DuplicateDocument,
    RetiredChunks,
    claim_job,
    commit_job,
    fail_job,
    renew_lease,
)

logger = logging.getLogger("service.worker")


class PermanentError(Exception):
    """The file itself is the problem: fail the job without retrying."""


def _duplicate_message(name: str, twin: str) -> str:
    return (f"DuplicateContent: '{name}' has the same content as the document '{twin}' already in the index — "
            f"kept '{twin}'; delete one of the two, or upload a changed file")  # fmt: skip


class Worker:
    def __init__(self, service, name: str | None = None):
        self.service = service
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 100000}"

    # --- one job ---

    def _convert_and_chunk(self, claim: Claim):
        from lessons.ingest import convert_file
        from lessons.ingest.files import IngestError
        from lessons.retrieval.document_processor import chunk_files

        if claim.stored_path is None:
            raise PermanentError("the upload was not stored — upload the file again")
        with self.service.db.read() as session:
            twin = session.execute(select(Document.name).where((Document.active_sha256 == claim.sha256)
                                                               & (Document.id != claim.document_id))).scalar()  # fmt: skip
        if twin is not None:
            raise PermanentError(_duplicate_message(claim.file_name, twin))
        path = self.service.files.path(claim.stored_path)
        try:
            converted = convert_file(path, limits=self.service.settings.limits)
            chunks = chunk_files([converted])
        except IngestError as error:
            raise PermanentError(f"{type(error).__name__}: {error}") from error
        if not chunks:
            raise PermanentError(
                f"EmptyFile: '{claim.file_name}' converted to no text — check that it has visible content"
            )
        return chunks

    def process(self, claim: Claim) -> str:
        """Run one claimed job to its end; returns the job's status afterwards."""
        settings = self.service.settings
        lost = threading.Event()
        stop = threading.Event()

        def keep_lease():
            while not stop.wait(max(settings.lease_seconds / 3, 0.05)):
                if not renew_lease(self.service.db, claim, settings.lease_seconds):
                    lost.set()
                    return

        heartbeat = threading.Thread(target=keep_lease, name=f"lease-{claim.job_id}", daemon=True)
        heartbeat.start()
        try:
            chunks = self._convert_and_chunk(claim)
            count = self.service.index.upsert(claim.document_id, claim.job_id, chunks)
            if lost.is_set():
                return "lost"
            try:
                status = commit_job(self.service.db, claim, count)
            except (DuplicateDocument, IntegrityError) as error:
                twin = str(error) if isinstance(error, DuplicateDocument) else "another document"
                raise PermanentError(_duplicate_message(claim.file_name, twin)) from None
            if status == CANCELLED:  # deleted while it ran: what it just converted leaves the cache too
                self.service.forget_conversions(claim.document_id)
            logger.info("job %s (%s): %s, %d chunks", claim.job_id, claim.file_name, status, count)
            return status
        except PermanentError as error:
            return self._failed(claim, str(error), retry=False)
        except Exception as error:
            logger.exception("job %s (%s) failed on attempt %d", claim.job_id, claim.file_name, claim.attempt)
            return self._failed(claim, f"{type(error).__name__}: {str(error)[:500]}", retry=True)
        finally:
            stop.set()
            heartbeat.join(timeout=5)

    def _failed(self, claim: Claim, reason: str, *, retry: bool) -> str:
        status = fail_job(self.service.db, claim, reason, retry=retry)
        if status == "failed":  # never committed, so no search saw them: its chunks can go now
            try:
                self.service.index.delete_generation(claim.document_id, claim.job_id)
            except Exception:  # noqa: BLE001 - the purge below retries via the retired record
                with self.service.db.write() as session:
                    session.add(
                        RetiredChunks(document_id=claim.document_id, job_id=claim.job_id, retired_at=time.time())
                    )
        logger.warning("job %s (%s) %s: %s", claim.job_id, claim.file_name, status, reason)
        return status

    # --- housekeeping ---

    def purge_retired(self) -> int:
        """Delete from the index the generations retired longer ago than the grace time."""
        cutoff = time.time() - self.service.settings.retire_seconds
        with self.service.db.read() as session:
            due = session.execute(select(RetiredChunks).where(RetiredChunks.purged_at.is_(None) & (RetiredChunks.retired_at <= cutoff))
                                  .order_by(RetiredChunks.id).limit(50)).scalars().all()  # fmt: skip
        for record in due:
            self.service.index.delete_generation(record.document_id, record.job_id)
            with self.service.db.write() as session:
                session.get(RetiredChunks, record.id).purged_at = time.time()
        return len(due)

    # --- the loop ---

    def run_once(self) -> bool:
        """Purge what is due, then process one job; True when a job was processed."""
        self.purge_retired()
        claim = claim_job(self.service.db, self.name, self.service.settings.lease_seconds)
        if claim is None:
            return False
        self.process(claim)
        return True

    def run(self, stop: threading.Event, max_jobs: int | None = None) -> int:
        """Work until `stop` is set (or `max_jobs` are done); an error in the loop itself is logged and waited out."""
        done = 0
        while not stop.is_set() and (max_jobs is None or done < max_jobs):
            try:
                if self.run_once():
                    done += 1
                    continue
            except Exception:
                logger.exception("worker loop error; retrying")
            stop.wait(self.service.settings.poll_seconds)
        return done


def start_threads(service, count: int) -> tuple[threading.Event, list[threading.Thread]]:
    """`count` worker threads in this process (the embedded index allows no other process to write it)."""
    stop = threading.Event()
    threads = []
    for number in range(count):
        worker = Worker(service, name=f"{socket.gethostname()}:{os.getpid()}:w{number}")
        thread = threading.Thread(target=worker.run, args=(stop,), name=f"ingest-worker-{number}", daemon=True)
        thread.start()
        threads.append(thread)
    return stop, threads


__all__ = ["DONE", "PermanentError", "Worker", "start_threads"]
