"""The nightly job: questions for the documents added since the last run, the batch evaluation of the service's
pipeline on them, results stored per run in the database, and a report with the trend across runs.

Introduced in notebook 08 (from notebook to service). The course's own pieces do the work:
`lessons.evaluation.testset.generate_test_set` (grounded, de-duplicated questions from chunks) and
`lessons.evaluation.evaluate` / `compare` (chunk recall; 0/1 factual consistency and completeness,
judge failures counted). The pipeline evaluated is the running service itself, through `/v1/ask`.

Every run also asks the out-of-KB probes, when a file of them is configured (`AGENTIC_RAG_SERVICE_NIGHTLY_PROBES`
or `--probes`): questions the documents do not answer, one JSON object a line in the gold format with
`"type": "out_of_kb"`. They are a standing regression set (the generated questions cover only new documents), and
the report shows the share the service refused, "abstained (out-of-KB)", per run and in the trend; a run without
probes says that abstention was not measured.

    python -m service.nightly                       # the service at AGENTIC_RAG_SERVICE_URL
    python -m service.nightly --questions 8 --out runs/nightly --probes probes.jsonl
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
from lessons.ingest.questions import Question
from service.db import DONE, FAILED, EvalResult, EvalRun
from service.db import Document as DocumentRecord
from service.pipeline import as_pipeline_result

# The pipeline a run evaluates, by the service's AGENTIC_RAG_SERVICE_RERANKER setting (service.pipeline.retrieve).
PIPELINES = {"default": "service: hybrid + rerank + cited answer", "none": "service: hybrid + cited answer"}
PIPELINE = PIPELINES["default"]
ABSTAINED = "abstained (out-of-KB)"  # `lessons.evaluation.pipelines.compare`'s column
PROBES_ASKED = "out-of-KB probes"  # how many a run asked (0: abstention not measured)
TREND_METRICS = (f"recall@{K}", f"hit@{K}", "factual consistency", "completeness", ABSTAINED)
NOT_MEASURED = "not measured"
PROBES_SETTING = "AGENTIC_RAG_SERVICE_NIGHTLY_PROBES"


class ProbeFileError(ValueError):
    """An out-of-KB probe file that cannot be used; the message names the file, the line and the fix."""


def load_probes(path: str | Path) -> list[Question]:
    """The out-of-KB probes of a JSON Lines file (`lessons.evaluation.testset.load_test_set`'s format and checks):
    every line must be an out-of-KB question (`"type": "out_of_kb"`), since a probe scores only abstention."""
    from lessons.evaluation.testset import TestSetError, load_test_set

    path = Path(path).expanduser()
    try:
        items = load_test_set(path)
    except TestSetError as error:
        raise ProbeFileError(f"out-of-KB probes ({PROBES_SETTING}): {error}") from None
    lines = [n for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1) if line.strip()]
    for number, item in zip(lines, items, strict=True):
        if item.answerable:
            raise ProbeFileError(
                f"{path}, line {number}: {item.id} has type {item.type!r} — an out-of-KB probe is a question the "
                'documents do not answer, with "type": "out_of_kb" (answerable questions belong in a test set)'
            )
    return [item.model_copy(update={"origin": "file"}) for item in items]


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
                progress: bool = True, probes: str | Path | None = None) -> dict[str, Any]:  # fmt: skip
    """One nightly run; returns its record (metrics) and the report's path. `probes`: the out-of-KB probe file
    (default: the `nightly_probes` setting), asked on every run."""
    from lessons.evaluation.testset import generate_test_set

    probes = probes if probes is not None else service.settings.nightly_probes
    probe_items = load_probes(probes) if probes is not None else []  # a bad file fails before the run is recorded
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
            counts = {"new documents": len(documents), "chunks": len(chunks), "questions": len(items),
                      PROBES_ASKED: len(probe_items)}  # fmt: skip
            metrics: dict[str, Any] = dict(counts)
            rows = None
            asked = items + probe_items
            if asked:
                rows = evaluate({pipeline: service_pipeline(client)}, asked, llm, chunks, k=K, progress=progress)
                table = compare(rows, k=K, timing=True)
                summary = table.iloc[0].to_dict()
                metrics.update({key: (None if _is_nan(value) else value) for key, value in summary.items()})
                metrics.update(counts)  # compare's "questions" counts the probes too
        with db.write() as session:
            record = session.get(EvalRun, run_id)
            record.status, record.finished_at = DONE, time.time()
            record.documents, record.questions = len(documents), len(items)
            record.metrics_json = json.dumps(json_ready(metrics), ensure_ascii=False)
            if rows is not None:
                for row in rows.to_dict(orient="records"):
                    item = next(i for i in asked if i.id == row["question_id"])
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
                 "new documents": r.documents, "questions": r.questions, PROBES_ASKED: r.metrics.get(PROBES_ASKED, 0),
                 **{m: r.metrics.get(m) for m in TREND_METRICS}} for r in runs]  # fmt: skip


def _cell(row: dict[str, Any], column: str) -> str:
    value = row[column]
    if column == ABSTAINED and not row[PROBES_ASKED]:
        return NOT_MEASURED
    if column == ABSTAINED:
        return f"{'–' if value is None else f'{value:.2f}'} of {row[PROBES_ASKED]}"
    return "–" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def write_report(db, out: Path) -> Path:
    """`report.md` (the trend table) and `trend.png` (the metrics across runs) in `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    rows = trend(db)
    scores = [m for m in TREND_METRICS if m != ABSTAINED]  # the abstention goes last, after how many probes it is of
    header = ["run", "date", "new documents", "questions", *scores, PROBES_ASKED, ABSTAINED]
    pipelines = ", ".join(dict.fromkeys(row["pipeline"] for row in rows)) or PIPELINE
    lines = ["# Nightly evaluation: the trend", "", (f"Pipeline: {pipelines}. Questions are generated from the documents "
             "indexed since the run before; a run with no new documents has no scores for them. The out-of-KB "
             f"probes ({PROBES_SETTING}) are asked on every run: {ABSTAINED} is the share the service refused."), "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]  # fmt: skip
    for row in rows:
        lines.append("| " + " | ".join(_cell(row, h) for h in header) + " |")
    if any(not row[PROBES_ASKED] for row in rows):
        lines += ["", (f"{ABSTAINED}: {NOT_MEASURED} in a run without out-of-KB probes — set {PROBES_SETTING} (or "
                       'pass --probes) to a JSON Lines file of questions the documents do not answer, "type": "out_of_kb".')]  # fmt: skip
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
    parser.add_argument("--probes", type=Path, default=None,
                        help=f"out-of-KB probes asked on every run, JSON Lines (default: {PROBES_SETTING})")  # fmt: skip
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
                             progress=not args.no_progress, probes=args.probes)  # fmt: skip
    except (SettingsError, ModelError, ProbeFileError) as error:
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
