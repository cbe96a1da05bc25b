"""The nightly job: questions for the documents added since the last run, the batch evaluation of the service's
pipeline on them, results stored per run in the database, and a report with the trend across runs.

Introduced in notebook 08 (from notebook to service). The course's own pieces do the work:
`lessons.evaluation.testset.generate_test_set` (grounded, de-duplicated questions from chunks) and
`lessons.evaluation.evaluate` / `compare` (chunk recall; 0/1 factual consistency and completeness,
judge failures counted). The pipeline evaluated is the running service itself, through `/v1/ask`.

    python -m service.nightly                       # the service at AGENTIC_RAG_SERVICE_URL
    python -m service.nightly --questions 8 --out runs/nightly
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from langchain_core.documents import Document
from sqlalchemy import select

from lessons.agents.pipelines import K
from lessons.core.i18n import t
from lessons.evaluation.pipelines import compare, evaluate, json_ready
from service.db import DONE, FAILED, EvalResult, EvalRun
from service.db import Document as DocumentRecord
from service.pipeline import as_pipeline_result

# The pipeline a run evaluates, by the service's AGENTIC_RAG_SERVICE_RERANKER setting (service.pipeline.retrieve).
PIPELINES = {"default": "service: hybrid + rerank + cited answer", "none": "service: hybrid + cited answer"}
PIPELINE = PIPELINES["default"]
TREND_METRICS = (f"recall@{K}", f"hit@{K}", "factual consistency", "completeness")


def _since(db) -> float:
    with db.read() as session:
        last = session.execute(
            select(EvalRun.started_at).where(EvalRun.status == DONE).order_by(EvalRun.id.desc()).limit(1)
        ).scalar()
    return float(last or 0.0)


def new_documents(db, since: float) -> list[str]:
    """Live documents whose current chunks were committed after `since`."""
    with db.read() as session:
        return list(session.execute(select(DocumentRecord.id).where(DocumentRecord.deleted_at.is_(None)
                                                                    & (DocumentRecord.indexed_at > since))
                                    .order_by(DocumentRecord.indexed_at)).scalars())  # fmt: skip


def fetch_chunks(client: httpx.Client, document_ids: list[str]) -> list[Document]:
    chunks = []
    for document_id in document_ids:
        reply = client.get(f"/v1/documents/{document_id}/chunks")
        reply.raise_for_status()
        chunks += [Document(page_content=c["text"], metadata=c["metadata"]) for c in reply.json()]
    return chunks


def service_pipeline(client: httpx.Client, k: int = K):
    """The running service as an evaluation pipeline: question → `PipelineResult` from `/v1/ask`."""

    def run(question: str):
        reply = client.post("/v1/ask", json={"question": question, "k": k}, timeout=600)
        reply.raise_for_status()
        return as_pipeline_result(reply.json())

    return run


def run_nightly(service, url: str, llm, *, questions: int = 6, seed: int = 0, out: Path | None = None,
                progress: bool = True) -> dict[str, Any]:  # fmt: skip
    """One nightly run; returns its record (metrics) and the report's path."""
    from lessons.evaluation.testset import generate_test_set

    db = service.db
    since = _since(db)
    started = time.time()
    pipeline = PIPELINES.get(service.settings.reranker, PIPELINE)
    with db.write() as session:
        record = EvalRun(started_at=started, since=since, status="running", pipeline=pipeline, model=_model_name(llm))
        session.add(record)
        session.flush()
        run_id = record.id
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            documents = new_documents(db, since)
            chunks = fetch_chunks(client, documents)
            items = []
            if chunks:
                report = generate_test_set(llm, chunks, n_single=questions, n_multi=0, seed=seed, progress=progress)
                items = report.items
                print(report)
            metrics: dict[str, Any] = {"new documents": len(documents), "chunks": len(chunks), "questions": len(items)}
            rows = None
            if items:
                rows = evaluate({pipeline: service_pipeline(client)}, items, llm, chunks, k=K, progress=progress)
                table = compare(rows, k=K, timing=True)
                summary = table.iloc[0].to_dict()
                metrics.update(
                    {key: (None if _is_nan(value) else value) for key, value in summary.items()}
                )  # NaN → None
        with db.write() as session:
            record = session.get(EvalRun, run_id)
            record.status, record.finished_at = DONE, time.time()
            record.documents, record.questions = len(documents), len(items)
            record.metrics_json = json.dumps(json_ready(metrics), ensure_ascii=False)
            if rows is not None:
                for row in rows.to_dict(orient="records"):
                    item = next(i for i in items if i.id == row["question_id"])
                    session.add(EvalResult(run_id=run_id, question_id=item.id, question=item.question, reference=item.reference,
                                           answer=row["answer"], recall=_num(row.get(f"recall@{K}")),
                                           faithful=_int(row.get("faithful")), complete=_int(row.get("complete")),
                                           row_json=json.dumps(json_ready(row), ensure_ascii=False, default=str)))  # fmt: skip
    except Exception as error:
        with db.write() as session:
            record = session.get(EvalRun, run_id)
            record.status, record.finished_at, record.error = (
                FAILED,
                time.time(),
                f"{type(error).__name__}: {str(error)[:500]}",
            )
        raise
    path = write_report(db, out or service.settings.data_dir / "nightly")
    return {"run_id": run_id, "metrics": metrics, "report": path}


def _model_name(llm) -> str:
    return str(getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__)


def _is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)  # numpy's float64 is a float


def _num(value) -> float | None:
    return None if value is None or _is_nan(value) else float(value)


def _int(value) -> int | None:
    return None if value is None or _is_nan(value) else int(value)


def trend(db) -> list[dict[str, Any]]:
    """Every finished run, oldest first, with its trend metrics."""
    with db.read() as session:
        runs = session.execute(select(EvalRun).where(EvalRun.status == DONE).order_by(EvalRun.id)).scalars().all()
        return [{"run": r.id, "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started_at)), "pipeline": r.pipeline,
                 "new documents": r.documents, "questions": r.questions,
                 **{m: r.metrics.get(m) for m in TREND_METRICS}} for r in runs]  # fmt: skip


def write_report(db, out: Path) -> Path:
    """`report.md` (the trend table) and `trend.png` (the metrics across runs) in `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    rows = trend(db)
    header = ["run", "date", "new documents", "questions", *TREND_METRICS]
    pipelines = ", ".join(dict.fromkeys(row["pipeline"] for row in rows)) or PIPELINE
    lines = ["# Nightly evaluation: the trend", "", (f"Pipeline: {pipelines}. Questions are generated from the documents "
             "indexed since the run before; a run with no new documents has no scores."), "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]  # fmt: skip
    for row in rows:
        lines.append("| " + " | ".join("–" if row[h] is None else f"{row[h]:.2f}" if isinstance(row[h], float) else str(row[h])
                                       for h in header) + " |")  # fmt: skip
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for metric in TREND_METRICS:
        points = [(row["run"], row[metric]) for row in rows if row[metric] is not None]
        if points:
            ax.plot(*zip(*points), marker="o", label=metric)
    ax.set_xlabel(t("nightly run"))
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    ax.set_title(t("Service pipeline, questions on new documents"))
    fig.tight_layout()
    fig.savefig(out / "trend.png", dpi=100)
    plt.close(fig)
    return out / "report.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.nightly", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=None, help="the running service (default: AGENTIC_RAG_SERVICE_URL)")
    parser.add_argument("--questions", type=int, default=6, help="questions generated per run (one chunk each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="report folder (default: <data dir>/nightly)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    from lessons.core.models import ModelError, get_chat_model
    from lessons.core.settings import SettingsError
    from service.core import Service

    try:
        service = Service()
        url = args.url or service.settings.url
        result = run_nightly(service, url, get_chat_model(), questions=args.questions, seed=args.seed, out=args.out,
                             progress=not args.no_progress)  # fmt: skip
    except (SettingsError, ModelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except httpx.HTTPError as error:
        print(f"error: the service at {args.url or 'AGENTIC_RAG_SERVICE_URL'} did not answer ({error}) — start it with "
              "`python -m service api`, or pass --url", file=sys.stderr)  # fmt: skip
        return 2
    print(json.dumps(result["metrics"], ensure_ascii=False, indent=1, default=str))
    print(f"report: {result['report']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
