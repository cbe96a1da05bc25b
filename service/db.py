"""Document, job and evaluation records in a real database through SQLAlchemy (SQLite by default, PostgreSQL by URL).

Introduced in notebook 08 (from notebook to service). Times are Unix seconds (floats), the same on
every database. The rules the worker relies on are enforced here, in transactions:

- `claim_job`: a pending job (or one whose worker stopped renewing its lease) is taken by exactly one
  worker — a compare-and-set on the job's claim token, so two workers never take the same job;
- `commit_job`: the one moment a document's new chunks become the searchable ones (its
  `active_job_id` changes); the chunks it replaces are retired, and removed from the index later;
- a document's `active_sha256` is unique, so two documents never hold the same bytes.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from lessons.core.i18n import N_

PENDING, RUNNING, DONE, FAILED, SUPERSEDED, CANCELLED = (  # job states: notebook 08 shows them with t_marked
    N_("pending"),
    N_("running"),
    N_("done"),
    N_("failed"),
    N_("superseded"),
    N_("cancelled"),
)
FINAL_STATES = (DONE, FAILED, SUPERSEDED, CANCELLED)
UPLOADING = N_("uploading")  # the job's row exists, its file is being moved into place
_DELETED_PREFIX = "deleted:"


def deleted_name(document_id: str, name: str) -> str:
    """The name a deleted document keeps, so that its name is free for a new document (never the deleted one)."""
    return f"{_DELETED_PREFIX}{document_id}:{name}"[:255]


def shown_name(stored: str) -> str:
    """The name a document was uploaded under (a deleted document's without its prefix)."""
    if stored.startswith(_DELETED_PREFIX):
        return stored.split(":", 2)[-1]
    return stored


class Base(DeclarativeBase):
    pass


class Document(Base):
    """An uploaded document: one per file name; a re-upload is a new job for the same document."""

    __tablename__ = "documents"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    deleted_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    active_job_id: Mapped[int | None] = mapped_column(Integer, nullable=True)  # whose chunks searches see
    active_sha256: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    indexed_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class Job(Base):
    """One ingestion of one uploaded file: convert → chunk → embed → upsert → commit."""

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[str] = mapped_column(String(32), ForeignKey("documents.id"), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True, default=PENDING)
    file_name: Mapped[str] = mapped_column(String(255))
    stored_path: Mapped[str | None] = mapped_column(String(512), nullable=True)  # relative to the file store
    size: Mapped[int] = mapped_column(Integer, default=0)
    sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    chunks: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    not_before: Mapped[float] = mapped_column(Float, default=0.0)  # retry back-off
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True)
    claimed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    claim_token: Mapped[str | None] = mapped_column(String(32), nullable=True)


class RetiredChunks(Base):
    """A generation of chunks (document, job) that searches no longer see; the worker deletes them after a grace time."""

    __tablename__ = "retired_chunks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[str] = mapped_column(String(32), index=True)
    job_id: Mapped[int] = mapped_column(Integer)
    retired_at: Mapped[float] = mapped_column(Float)
    purged_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class EvalRun(Base):
    """One nightly evaluation: which documents it covered, the summary metrics, the report."""

    __tablename__ = "eval_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_at: Mapped[float] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    since: Mapped[float] = mapped_column(Float)  # documents indexed after this time were new for this run
    status: Mapped[str] = mapped_column(String(16), default=RUNNING)
    documents: Mapped[int] = mapped_column(Integer, default=0)
    questions: Mapped[int] = mapped_column(Integer, default=0)
    pipeline: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(255), default="")
    metrics_json: Mapped[str] = mapped_column(Text, default="{}")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)

    @property
    def metrics(self) -> dict[str, Any]:
        return json.loads(self.metrics_json or "{}")


class EvalResult(Base):
    """One generated question of a nightly run, with the pipeline's answer and its scores."""

    __tablename__ = "eval_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(Integer, ForeignKey("eval_runs.id"), index=True)
    question_id: Mapped[str] = mapped_column(String(64))
    question: Mapped[str] = mapped_column(Text)
    reference: Mapped[str] = mapped_column(Text, default="")
    answer: Mapped[str] = mapped_column(Text, default="")
    recall: Mapped[float | None] = mapped_column(Float, nullable=True)
    faithful: Mapped[int | None] = mapped_column(Integer, nullable=True)
    complete: Mapped[int | None] = mapped_column(Integer, nullable=True)
    row_json: Mapped[str] = mapped_column(Text, default="{}")


# --- engines ------------------------------------------------------------------------------------------


@dataclass
class Database:
    """An engine and two session factories: `read()` for lookups, `write()` for transactions that change rows."""

    engine: Engine
    _read: sessionmaker
    _write: sessionmaker

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._read() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that commits at the end (SQLite: BEGIN IMMEDIATE, so read-then-write never deadlocks)."""
        with self._write.begin() as session:
            yield session

    def lock_name(self, session: Session, name: str) -> None:
        """Serialise the transactions that look up or create the document of `name`, until this one ends.

        PostgreSQL: a transaction-scoped advisory lock on the name (FOR UPDATE locks nothing while the row
        does not exist yet); SQLite: BEGIN IMMEDIATE already serialises every write.
        """
        if self.dialect == "postgresql":
            from sqlalchemy import text

            session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:name, 0))"), {"name": name})

    def locked(self, statement):
        """`statement` with FOR UPDATE where the database has row locks (PostgreSQL); SQLite locks the whole file."""
        return statement.with_for_update() if self.dialect != "sqlite" else statement


def open_database(url: str) -> Database:
    """The database at `url`, its tables created if missing. SQLite gets WAL and a busy timeout."""
    if url.startswith("sqlite:///"):
        from pathlib import Path

        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = create_engine(url, pool_pre_ping=True)
    except Exception as error:  # noqa: BLE001 - an unknown dialect or a missing driver
        raise ValueError(
            f"cannot use the database URL in AGENTIC_RAG_SERVICE_DATABASE_URL ({type(error).__name__}: {error}) — "
            "use sqlite:///path/service.sqlite, or postgresql+psycopg://user:password@host:5432/db (pip install 'psycopg[binary]')"
        ) from None
    if engine.dialect.name == "sqlite":
        _sqlite_setup(engine)
    Base.metadata.create_all(engine)
    write_engine = engine.execution_options(write=True)
    return Database(
        engine, sessionmaker(engine, expire_on_commit=False), sessionmaker(write_engine, expire_on_commit=False)
    )


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.get_execution_options().get("write") else "BEGIN")


# --- the job queue ------------------------------------------------------------------------------------


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Claim:
    """A job this worker holds: renew it with `renew_lease`, finish it with the token."""

    job_id: int
    document_id: str
    token: str
    attempt: int
    file_name: str
    stored_path: str | None
    sha256: str | None
    size: int


def claim_job(db: Database, worker: str, lease_seconds: float) -> Claim | None:
    """Take the oldest job that is pending, or whose worker's lease ran out; None when there is none.

    A compare-and-set on (status, claim token): of two workers that pick the same job, one update
    matches and the other changes no row. A job that ran out of attempts (its worker died each time) is failed.
    """
    now = time.time()
    with db.read() as session:
        candidates = session.execute(
            select(Job.id, Job.status, Job.claim_token, Job.attempts, Job.max_attempts)
            .where(
                or_(
                    (Job.status == PENDING) & (Job.not_before <= now), (Job.status == RUNNING) & (Job.lease_until < now)
                )
            )
            .order_by(Job.id)
            .limit(8)
        ).all()
    for job_id, status, token, attempts, max_attempts in candidates:
        same = (Job.id == job_id) & (Job.status == status)
        same &= Job.claim_token.is_(None) if token is None else Job.claim_token == token
        if status == RUNNING:
            same &= Job.lease_until < now
        with db.write() as session:
            if attempts >= max_attempts:
                reason = (f"StoppedWorker: the worker processing this job stopped {attempts} time(s) without finishing "
                          "(killed or crashed) — look at the worker's log; upload the file again to retry")  # fmt: skip
                failed = update(Job).where(same).values(status=FAILED, error=reason, finished_at=now, lease_until=None)
                if session.execute(failed).rowcount == 1:
                    session.add(
                        RetiredChunks(document_id=session.get(Job, job_id).document_id, job_id=job_id, retired_at=now)
                    )
                continue
            new_token = new_id()
            changed = session.execute(
                update(Job).where(same).values(status=RUNNING, claim_token=new_token, claimed_by=worker,
                                               lease_until=now + lease_seconds, attempts=Job.attempts + 1, started_at=now)
            ).rowcount  # fmt: skip
            if changed != 1:
                continue
            job = session.get(Job, job_id)
            return Claim(
                job.id, job.document_id, new_token, job.attempts, job.file_name, job.stored_path, job.sha256, job.size
            )
    return None


def _held(claim: Claim):
    """Where the job is still `claim`'s: running, with the claim's token (a worker that took it over has another)."""
    return (Job.id == claim.job_id) & (Job.claim_token == claim.token) & (Job.status == RUNNING)


def _held_job(db: Database, session, claim: Claim) -> Job | None:
    """The job `claim` still holds, locked for this write; None when it is no longer this worker's."""
    return session.execute(db.locked(select(Job).where(_held(claim)))).scalar_one_or_none()


def renew_lease(db: Database, claim: Claim, lease_seconds: float) -> bool:
    """Extend the lease; False when the job is no longer this worker's (another one took it)."""
    with db.write() as session:
        changed = session.execute(
            update(Job).where(_held(claim)).values(lease_until=time.time() + lease_seconds)
        ).rowcount
    return changed == 1


def fail_job(db: Database, claim: Claim, reason: str, *, retry: bool, backoff: float = 1.0) -> str:
    """Record a failure: back to pending after a back-off while attempts remain (if `retry`), else failed."""
    now = time.time()
    with db.write() as session:
        if (job := _held_job(db, session, claim)) is None:
            return "lost"
        job.error = reason
        job.lease_until = None
        if retry and job.attempts < job.max_attempts:
            job.status, job.not_before, job.claim_token = PENDING, now + backoff * job.attempts, None
        else:
            job.status, job.finished_at = FAILED, now
        return job.status


class DuplicateDocument(Exception):
    """Another document already holds these exact bytes."""


def commit_job(db: Database, claim: Claim, chunks: int) -> str:
    """Make the job's chunks the document's searchable ones, atomically; returns the job's final status.

    The previous generation is retired (searches stop seeing it at this very commit). A job older than
    the document's active one, or for a deleted document, is superseded/cancelled and its own chunks retired.
    Raises `DuplicateDocument` when another document holds the same bytes.
    """
    now = time.time()
    with db.write() as session:
        if (job := _held_job(db, session, claim)) is None:
            return "lost"  # another worker took it over after our lease ran out: it will commit, not us
        document = session.execute(db.locked(select(Document).where(Document.id == job.document_id))).scalar_one()
        outcome = DONE
        if document.deleted_at is not None:
            outcome = CANCELLED
        elif document.active_job_id is not None and document.active_job_id > job.id:
            outcome = SUPERSEDED
        else:
            twin = session.execute(
                select(Document.name).where((Document.active_sha256 == job.sha256) & (Document.id != document.id))
            ).scalar()
            if twin is not None:
                raise DuplicateDocument(twin)
            if document.active_job_id is not None and document.active_job_id != job.id:
                session.add(RetiredChunks(document_id=document.id, job_id=document.active_job_id, retired_at=now))
            document.active_job_id, document.active_sha256 = job.id, job.sha256
            document.chunk_count, document.indexed_at, document.updated_at = chunks, now, now
        if outcome != DONE:
            session.add(RetiredChunks(document_id=document.id, job_id=job.id, retired_at=now))
        job.status, job.chunks, job.finished_at, job.lease_until, job.error = outcome, chunks, now, None, None
        return outcome


def active_generations(db: Database) -> dict[str, int]:
    """document id → the job whose chunks searches see, for every live indexed document (one consistent read)."""
    with db.read() as session:
        rows = session.execute(
            select(Document.id, Document.active_job_id).where(
                Document.deleted_at.is_(None) & Document.active_job_id.is_not(None)
            )
        ).all()
    return {document_id: job_id for document_id, job_id in rows}


def job_counts(db: Database) -> dict[str, int]:
    with db.read() as session:
        return dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
