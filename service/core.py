"""What the API, the worker and the nightly job share: settings, database, file store, live index, chat model.

Introduced in notebook 08 (from notebook to service).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import cached_property
from typing import BinaryIO

from sqlalchemy import func, select, update

from service.db import (
    CANCELLED,
    FAILED,
    PENDING,
    UPLOADING,
    Database,
    Document,
    EvalRun,
    Job,
    RetiredChunks,
    active_generations,
    deleted_name,
    job_counts,
    new_id,
    open_database,
    shown_name,
)
from service.filestore import open_file_store
from service.settings import ServiceSettings, load_service_settings


class Service:
    def __init__(self, settings: ServiceSettings | None = None, chat_model: Callable | None = None):
        self.settings = settings or load_service_settings()
        self.db: Database = open_database(self.settings.database_url)
        self.files = open_file_store(self.settings.file_store)
        self._chat_model_factory = chat_model
        self._lock = threading.Lock()

    @cached_property
    def index(self):
        """The live index (opened on first use: the embedder loads then).

        Its embedder goes through the course's passage- and query-vector cache in the cache folder
        (`lessons.chunking.cached_embeddings`): a vector is keyed by the model's name and the text's SHA-256 and depends
        on nothing else, so a chunk the course's index already embedded (notebook 08 uploads the knowledge base the
        notebooks indexed) or a question asked before is not embedded again."""
        from lessons.chunking import cached_embeddings
        from service.index import LiveIndex

        return LiveIndex(self.settings.collection, cached_embeddings(), chroma_url=self.settings.chroma_url,
                         path=self.settings.data_dir / "chroma")  # fmt: skip

    @cached_property
    def reranker(self):
        """The search reranker the settings choose (`service.pipeline.service_reranker`); None: the hybrid order."""
        from service.pipeline import service_reranker

        return service_reranker(self.settings.reranker)

    @cached_property
    def llm(self):
        """The chat model of the ask endpoint: `lessons.core.models.get_chat_model()` unless one was given."""
        if self._chat_model_factory is not None:
            return self._chat_model_factory()
        from lessons.core.models import get_chat_model

        return get_chat_model()

    # --- uploads ---

    def upload(self, name: str, stream: BinaryIO) -> dict:
        """Store the file and queue its job; returns the document id and the job id at once.

        A file over the size limit is not kept: its job is recorded as failed with the reason.
        """
        from lessons.ingest.files import FileTooLarge
        from service.filestore import safe_name

        stored_name = safe_name(name)
        now = time.time()
        with self.db.write() as session:
            self.db.lock_name(session, stored_name)  # uploads of one name, even a new one, one at a time
            document = session.execute(
                self.db.locked(select(Document).where(Document.name == stored_name))
            ).scalar_one_or_none()
            if document is not None and document.deleted_at is not None:
                # A deleted document is never revived: it keeps its old jobs (which can then only be cancelled)
                # under a name of its own, and the upload starts a new document.
                document.name = deleted_name(document.id, stored_name)
                session.flush()
                document = None
            if document is None:
                document = Document(id=new_id(), name=stored_name, created_at=now, updated_at=now, chunk_count=0)
                session.add(document)
            job = Job(document_id=document.id, status="uploading", file_name=stored_name, created_at=now,
                      max_attempts=self.settings.max_attempts, not_before=0.0)  # fmt: skip
            session.add(job)
            session.flush()
            document_id, job_id = document.id, job.id
        stored = self.files.save(document_id, job_id, stored_name, stream, self.settings.max_upload_bytes)
        limit = self.settings.max_upload_bytes
        with self.db.write() as session:
            job = session.get(Job, job_id)
            job.size = stored.size
            if stored.truncated:
                job.status, job.finished_at = FAILED, time.time()
                job.error = (f"{FileTooLarge.__name__}: '{stored_name}' is over the upload limit of {limit:,} bytes — split "
                             f"the file, or raise AGENTIC_RAG_SERVICE_MAX_UPLOAD_BYTES (now {limit})")  # fmt: skip
            else:
                job.status, job.stored_path, job.sha256 = PENDING, stored.relative_path, stored.sha256
        return {"document_id": document_id, "job_id": job_id, "name": stored_name, "renamed": stored_name != name,
                "status": FAILED if stored.truncated else PENDING}  # fmt: skip

    def repair_uploads(self, older_than: float = 60.0) -> int:
        """Fail the jobs left in `uploading` by a process that stopped while saving; remove their `.part` files.

        Called when the API starts; an upload is in that state only while its file is renamed into place.
        """
        cutoff = time.time() - older_than
        with self.db.write() as session:
            stuck = (
                session.execute(
                    self.db.locked(select(Job).where((Job.status == UPLOADING) & (Job.created_at < cutoff)))
                )
                .scalars()
                .all()
            )
            for job in stuck:
                job.status, job.finished_at = FAILED, time.time()
                job.error = (f"InterruptedUpload: the service stopped while it was receiving '{job.file_name}' — "
                             "upload the file again")  # fmt: skip
            found = [(job.document_id, job.id) for job in stuck]
        for document_id, job_id in found:
            self.files.remove_partial(document_id, job_id)
        return len(found)

    def delete(self, document_id: str) -> bool:
        """Hide a document from searches at once; its chunks are removed by the worker, its files now."""
        now = time.time()
        with self.db.write() as session:
            document = session.execute(
                self.db.locked(select(Document).where(Document.id == document_id))
            ).scalar_one_or_none()
            if document is None or document.deleted_at is not None:
                return False
            if document.active_job_id is not None:
                session.add(RetiredChunks(document_id=document.id, job_id=document.active_job_id, retired_at=now))
            document.deleted_at, document.updated_at = now, now
            document.active_job_id = document.active_sha256 = None
            document.chunk_count = 0
            session.execute(update(Job).where((Job.document_id == document_id) & (Job.status == PENDING))
                            .values(status=CANCELLED, finished_at=now, error="document deleted before it was processed"))  # fmt: skip
        self.forget_conversions(document_id)
        self.files.delete_document(document_id)
        return True

    def forget_conversions(self, document_id: str) -> int:
        """Remove a deleted document's text from the conversion cache (`lessons.ingest.files.forget_conversion`),
        except for bytes a live document also has; returns how many cache entries were removed."""
        from lessons.ingest.files import forget_conversion

        with self.db.read() as session:
            mine = session.execute(
                select(Job.sha256, Job.file_name).where((Job.document_id == document_id) & Job.sha256.is_not(None))
            ).all()
            digests = sorted({sha256 for sha256, _name in mine})
            shared = set(
                session.execute(
                    select(Job.sha256)
                    .join(Document, Document.id == Job.document_id)
                    .where(Document.deleted_at.is_(None) & (Document.id != document_id) & Job.sha256.in_(digests))
                ).scalars()
            ) if digests else set()  # fmt: skip
        return sum(forget_conversion(sha256, name) for sha256, name in set(mine) if sha256 not in shared)

    # --- reading ---

    def snapshot(self):
        from service.pipeline import Snapshot

        return Snapshot(active_generations(self.db))

    def job_counts(self) -> dict:
        """Jobs per status (`/v1/health`)."""
        return job_counts(self.db)

    def documents(self, include_deleted: bool = False) -> list[dict]:
        """Every document (oldest first) with its last job; deleted ones only when asked."""
        with self.db.read() as session:
            query = select(Document).order_by(Document.created_at)
            if not include_deleted:
                query = query.where(Document.deleted_at.is_(None))
            documents = session.execute(query).scalars().all()
            last = dict(session.execute(select(Job.document_id, func.max(Job.id)).group_by(Job.document_id)).all())
            jobs = {
                j.id: j for j in session.execute(select(Job).where(Job.id.in_(list(last.values()) or [-1]))).scalars()
            }
            return [document_record(d, jobs.get(last.get(d.id))) for d in documents]

    def document(self, document_id: str) -> dict | None:
        """One document with its last job; None when there is no such document."""
        with self.db.read() as session:
            document = session.get(Document, document_id)
            if document is None:
                return None
            last = session.execute(
                select(Job).where(Job.document_id == document_id).order_by(Job.id.desc()).limit(1)
            ).scalar()
            return document_record(document, last)

    def document_chunks(self, document_id: str) -> list[dict]:
        """The searchable chunks of a document's active generation ([] when it has none)."""
        snapshot = self.snapshot().generations
        if document_id not in snapshot:
            return []
        chunks = self.index.chunks({document_id: snapshot[document_id]})
        return [{"text": c.page_content, "metadata": c.metadata} for c in chunks]

    def job(self, job_id: int) -> dict | None:
        """One job; None when there is no such job."""
        with self.db.read() as session:
            job = session.get(Job, job_id)
            return None if job is None else job_record(job)

    def jobs(self, status: str | None = None, limit: int = 100) -> list[dict]:
        """The most recent jobs (newest first, at most `limit`, 1 to 1000), of one status when given."""
        with self.db.read() as session:
            query = select(Job).order_by(Job.id.desc()).limit(max(1, min(limit, 1000)))
            if status:
                query = query.where(Job.status == status)
            return [job_record(j) for j in session.execute(query).scalars()]

    def search(self, query: str, k: int) -> list[dict]:
        """`/v1/search`: the best `k` chunks (`service.pipeline.retrieve` with the settings' reranker)."""
        from service.pipeline import retrieve

        ranked = retrieve(self.index, self.snapshot(), query, k=k, reranker=self.reranker)
        return [{"text": d.page_content, "metadata": d.metadata} for d in ranked]

    def ask(self, question: str, k: int) -> dict:
        """`/v1/ask`: the served pipeline's answer (`service.pipeline.answer`) over one snapshot of the index — or
        a stored reply over the same documents and `k` (`service.pipeline.answer_cache`): by default (`exact`) the
        reply to the same question, with `AGENTIC_RAG_SERVICE_ANSWER_CACHE=semantic` also one to a close enough
        question; `cached` in the reply says which question it was and which mode served it."""
        from service.pipeline import answer, answer_cache, retrieve, subject_names

        snapshot = self.snapshot()
        mode = self.settings.answer_cache
        cache = None if mode == "off" else answer_cache(self.index, snapshot, self.settings.data_dir / "answers.sqlite")
        hit = cache.lookup(question, exact=mode == "exact") if cache is not None else None
        if hit is not None and hit.metadata.get("k") == k:
            cached = {"question": hit.question, "similarity": round(hit.similarity, 4), "exact": hit.exact,
                      "mode": mode}  # fmt: skip
            return {**hit.metadata["reply"], "question": question, "cached": cached}

        def search(query: str):
            return retrieve(self.index, snapshot, query, k=k, reranker=self.reranker)

        reply = answer(self.llm, question, search, subject_names(self.index, snapshot)).as_json()
        if cache is not None:
            cache.store(question, reply["answer"], {"reply": reply, "k": k})
        return {**reply, "cached": None}

    def index_stats(self) -> dict:
        """Chunks per generation and duplicate ids (`service.index.LiveIndex.stats`), with the active generations."""
        stats = self.index.stats()
        stats["active"] = {d: f"{d}:{j}" for d, j in self.snapshot().generations.items()}
        return stats

    def eval_runs(self) -> list[dict]:
        """The nightly evaluations, oldest first."""
        with self.db.read() as session:
            runs = session.execute(select(EvalRun).order_by(EvalRun.id)).scalars().all()
            return [{"run_id": r.id, "started_at": r.started_at, "finished_at": r.finished_at, "status": r.status,
                     "documents": r.documents, "questions": r.questions, "pipeline": r.pipeline, "model": r.model,
                     "metrics": r.metrics, "error": r.error} for r in runs]  # fmt: skip


def job_record(job: Job) -> dict:
    return {"job_id": job.id, "document_id": job.document_id, "status": job.status, "file_name": job.file_name,
            "size": job.size, "attempts": job.attempts, "max_attempts": job.max_attempts, "error": job.error,
            "chunks": job.chunks, "created_at": job.created_at, "started_at": job.started_at,
            "finished_at": job.finished_at}  # fmt: skip


def document_record(document: Document, last_job: Job | None = None) -> dict:
    if document.deleted_at is not None:
        state = "deleted"
    elif last_job is not None and last_job.status in (PENDING, "running", "uploading"):
        state = "indexing" if document.active_job_id is None else "indexed, new version indexing"
    elif document.active_job_id is not None:
        state = "indexed"
    else:
        state = "failed"
    return {"document_id": document.id, "name": shown_name(document.name), "state": state, "chunks": document.chunk_count,
            "active_job_id": document.active_job_id, "sha256": document.active_sha256,
            "created_at": document.created_at, "indexed_at": document.indexed_at,
            "last_job": job_record(last_job) if last_job is not None else None}  # fmt: skip
