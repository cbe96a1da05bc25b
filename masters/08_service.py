# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       DOCUMENTS:
#       - release_notes.md
#       - faq_zh.html
#       LATER:
#       - support_faq.html
#       NIGHTLY_QUESTIONS: 1
#   jupytext:
#     cell_metadata_filter: tags,-all
#     notebook_metadata_filter: agentic_rag,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · From notebook to service: uploads, a background worker, a live index and a nightly evaluation
#
# | | |
# |---|---|
# | **You will learn** | how the course's pieces become a service other programs call: an HTTP API (FastAPI) that accepts uploads at once and hands them to a **background worker** through **jobs** in a database; why the upload returns a job id and not the answer; how to watch jobs and wait for one with a **timeout and a clear error**; a **live index** whose searches see a document's old chunks or its new ones, never a mix; search (hybrid, then the course's reranker) and ask (an answer with citations) over HTTP; how adding and deleting a document changes the answer; an **idempotent upload** that queues nothing when you run it twice; a **nightly evaluation** that writes questions for the new documents, scores the running service and keeps a trend across runs; how to start and stop it all cleanly |
# | **Prerequisites** | notebooks 01 (ingestion, chunks), 02 (hybrid retrieval, the cross-encoder), 05 (the research agent's cited answers), 06 (generated test sets, the judges) |
# | **Time** | offline on a 2-core laptop, a first Run All from an empty cache folder: **8.5 min** measured (510 s, 12 chat-model calls; `benchmarks/bench_notebooks.py`, 1 Dec 2026, within the 10-minute budget; the machine was busy (load average 3.7 before the run)); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
# | **Numbers in the text** | produced offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M (temperature 0), multilingual-e5-small (4-bit) and the ms-marco-MiniLM-L-12-v2 cross-encoder (ONNX); every number below is computed by the cell above it |
#
# Seven notebooks ran the pipeline inside a kernel. A team's documents do not arrive that way: people
# upload files whenever they like, others search at the same time, and someone wants to know next week
# whether the answers got worse. The code in `service/` is the course as a **service**:
#
# | piece | module | what it does |
# |---|---|---|
# | HTTP API | `service.api` (FastAPI, uvicorn) | upload, jobs, documents, delete, search, ask, nightly runs; writes need an API key |
# | records | `service.db` (SQLAlchemy: SQLite, or PostgreSQL by a setting) | documents, jobs with leases, the active generation of each document, the nightly runs |
# | files | `service.filestore` | the raw uploads in a folder, under safe names |
# | live index | `service.index` (Chroma) | each document's chunks, one generation per job |
# | worker | `service.worker` | claims a job, converts (notebook 01), chunks, embeds, upserts, commits |
# | search and ask | `service.pipeline` | hybrid retrieval, the course's reranker, notebook 05's cited answer |
# | nightly job | `service.nightly` | notebook 06's test-set generation and judges, against the running service |
# | client | `service.client` | a typed HTTP client, and `running_service()` which starts and stops the server |
#
# This notebook drives the real service end to end: a server process on 127.0.0.1, a temporary data
# folder, an API key made for this run.

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
FULL = False  # True: upload the whole course corpus (every file of data/corpus)
DOCUMENTS = ["release_notes.md", "support_faq.html", "faq_zh.html", "meeting_notes_2026_09.txt"]  # uploaded first
LATER = ["weekly_meeting_zh.txt", "atlas_admin_guide.md"]  # uploaded between the two nightly runs
NIGHTLY_QUESTIONS = 2  # questions each nightly run generates from the new documents (one chunk each)
K = 3  # chunks an answer is written from
JOB_TIMEOUT = 900  # seconds a batch of uploads may take to be indexed before we give up
SEED = 8

# %%
import contextlib
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from lessons.core import USAGE, get_chat_model, model_banner
from lessons.ingest import CORPUS_DIR, load_gold
from service.client import running_service
from service.nightly import TREND_METRICS

pd.set_option("display.max_colwidth", 90)
pd.set_option("display.width", 200)
if FULL:
    DOCUMENTS = sorted(p.name for p in CORPUS_DIR.iterdir() if p.is_file() and p.name not in LATER)
print(model_banner())
notebook_started = time.perf_counter()
stack = contextlib.ExitStack()  # what the last section closes: the server, the client, the temporary folder
started = time.perf_counter()
service = stack.enter_context(running_service())
client = stack.enter_context(service.client())
start_seconds = time.perf_counter() - started
health = client.health()
pd.DataFrame({"setting": {**health["stores"], "worker threads": health["workers"], "url": service.url,
                          "data folder": str(service.data_dir)}})

# %% [markdown]
# `running_service()` started `python -m service api` in its own process on a free port of 127.0.0.1 and
# waited until `/v1/health` answered. The server got its own data folder (database, file store, embedded
# Chroma) in a temporary directory and an API key generated for this run, so two runs never collide and
# no key is written down anywhere. In a script you would write `with running_service() as service: …`;
# a notebook spreads the work over cells, so an `ExitStack` holds the server until the last section.

# %%
display(Markdown(f"The server answered its health check {start_seconds:.1f} s after the start "
                 f"(the embedder and the cross-encoder load on first use, not here)."))

# %% [markdown]
# ## 1. Uploads are accepted at once; a worker indexes them
#
# An upload stores the file and queues a **job**; the reply comes back before any conversion starts, with
# the document's id and the job's. The worker thread inside the server claims pending jobs one by one
# (with a lease it renews, so a worker that dies mid-job gives the job back), converts the file, chunks it,
# embeds the chunks and commits the new generation. The table below is what we saw each time we asked.

# %%
paths = [CORPUS_DIR / name for name in DOCUMENTS]
uploads = client.upload_files(paths)
jobs, timeline = client.watch([u.job_id for u in uploads], timeout=JOB_TIMEOUT, every=1.0)
states = pd.DataFrame(timeline).fillna(0).set_index("seconds").astype(int)
states.iloc[sorted({0, len(states) // 3, 2 * len(states) // 3, len(states) - 1})]

# %%
job_table = pd.DataFrame([{"file": j.file_name, "status": j.status, "chunks": j.chunks, "attempts": j.attempts,
                           "seconds": round(j.seconds or 0, 1), "error": j.error} for j in jobs.values()])
job_table


# %% [markdown]
# ### Exercise 1: wait for one job, with a timeout and a clear error
#
# A client that waits for a job must stop waiting some day. Write `wait_for_job(client, job_id, timeout, every)`:
# ask `client.job(job_id)` (a `service.client.Job`), return it as soon as it is **final** (`job.final`: done,
# failed, superseded or cancelled — a failed job is finished too, its `error` says why), sleep `every` seconds
# between two requests, and when `timeout` seconds have passed raise `TimeoutError` with a message that names
# the job and the state it is stuck in.

# %% tags=["exercise"]
def wait_for_job(client, job_id, timeout=60.0, every=0.5):
    """Poll `client.job(job_id)` until the job is final; TimeoutError naming the job and its state after `timeout` s."""
    ### BEGIN SOLUTION
    deadline = time.monotonic() + timeout
    while True:
        job = client.job(job_id)
        if job.final:
            return job
        if time.monotonic() >= deadline:
            raise TimeoutError(f"job {job_id} ({job.file_name}) is still {job.status} after {timeout:g} s — "
                               "look at the service's log, or wait longer")
        time.sleep(every)
    ### END SOLUTION


# %%
from checks.nb08 import check_wait_for_job

check_wait_for_job(wait_for_job)

# %% [markdown]
# `service.client.wait_for_jobs` is the same loop for many jobs (`client.wait(job_ids)`); the cells below
# use it, so they run whatever your answer does.
#
# ## 2. Search: hybrid, then the course's reranker
#
# `POST /v1/search` runs `service.pipeline.retrieve` over one snapshot of the active generations: dense and
# BM25 fused by reciprocal rank fusion (notebook 02), the fused top 20 reordered by
# `lessons.retrieval.rerank.default_reranker` — the packaged cross-encoder for an English question, the fused order
# for a Chinese one (the English model pushes good Chinese passages down). Each hit's `score` is the
# cross-encoder's probability for English, the fusion score for Chinese.

# %%
gold = {q.id: q for q in load_gold()}
held = {p.name for p in paths}
questions = [q for q in gold.values() if q.answerable and q.sources and {s.file for s in q.sources} <= held]
asked = [next(q for q in questions if q.language == language) for language in ("en", "zh")
         if any(q.language == language for q in questions)]
rows = []
for question in asked:
    for rank, hit in enumerate(client.search(question.question, k=K), 1):
        rows.append({"question": question.id, "rank": rank, "source": hit.metadata.get("source"),
                     "score": round(hit.metadata.get("score", float("nan")), 3), "text": hit.page_content[:90]})
search_table = pd.DataFrame(rows)
search_hits = {q.id: any(r["source"] in {s.file for s in q.sources} for r in rows if r["question"] == q.id) for q in asked}
search_table

# %% [markdown]
# ## 3. Ask: an answer with citations
#
# `POST /v1/ask` retrieves the same way and hands the top chunks to notebook 05's research agent, which answers
# from them only and cites them; the reply names each cited chunk's file and page. With no supporting chunk
# the service says so instead of guessing. (The answer is written in the server's process: its model calls
# are not in this kernel's usage report at the end.)

# %%
replies = {}
for question in asked:
    replies[question.id] = client.ask(question.question, k=K)
    reply = replies[question.id]
    print(f"{question.id}: {question.question}\n  answer: {reply['answer'][:300]}\n  reference: {question.answer}")
    for citation in reply["citations"]:
        page = f" page {citation['page']}" if citation["page"] else ""
        print(f"  cites {citation['source']}{page}: {citation['text'][:80]!r}…")

# %% [markdown]
# ## 4. A new document changes the answer; deleting it takes it away
#
# A question none of the uploaded documents answers: first the service should abstain. Then we upload a
# short note that does answer it, ask again, delete the note and ask a third time. A delete hides the
# document from searches at once (the database stops listing its generation); the worker removes its
# chunks a little later.

# %%
NOTE_NAME = "office_network_note.md"
NOTE = ("# Lisbon office guest network\n\nVisitors to the Lisbon office use the guest Wi-Fi network "
        "'Tidewell-Guest'. Its password is 'harbour-lights-2026', changed on the first of every month by the "
        "office manager, Marta Sousa.\n")
NEW_QUESTION = "What is the password of the guest Wi-Fi network in the Lisbon office?"


def cited_sources(reply):
    return sorted({c["source"] for c in reply["citations"]})


changes = {"before the note": client.ask(NEW_QUESTION, k=K)}
note = client.upload(NOTE_NAME, NOTE.encode())
note_job = client.wait([note.job_id], timeout=JOB_TIMEOUT)[note.job_id]
changes["after the upload"] = client.ask(NEW_QUESTION, k=K)
client.delete(note.document_id)
changes["after the delete"] = client.ask(NEW_QUESTION, k=K)
note_in_search = any(h.metadata.get("source") == NOTE_NAME for h in client.search(NEW_QUESTION, k=K))
change_table = pd.DataFrame([{"stage": stage, "abstained": r["abstained"], "cites": ", ".join(cited_sources(r)) or "—",
                              "password in the answer": "harbour-lights-2026" in r["answer"], "answer": r["answer"][:120]}
                             for stage, r in changes.items()])
change_table

# %%
after, deleted = changes["after the upload"], changes["after the delete"]
display(Markdown(
    f"The note was indexed as {note_job.chunks} chunk(s) in {note_job.seconds:.1f} s. "
    f"Before it, the service {'abstained' if changes['before the note']['abstained'] else 'answered anyway'}; "
    f"with it, the answer {'cites the note' if NOTE_NAME in cited_sources(after) else 'does not cite the note'} and "
    f"{'contains' if 'harbour-lights-2026' in after['answer'] else 'does not contain'} the password; after the delete, "
    f"a search for the question {'still finds' if note_in_search else 'no longer finds'} the note and the answer "
    f"{'still cites it' if NOTE_NAME in cited_sources(deleted) else 'no longer cites it'}."))


# %% [markdown]
# ### Exercise 2: upload only what is new
#
# Run the upload cell of section 1 twice and the service converts and embeds every file twice. Write
# `upload_new(client, paths)`: read what the service holds with `client.documents()` (each document's `name`
# and `sha256`, the SHA-256 of the bytes it indexed; `None` when nothing was indexed), upload with
# `client.upload_file(path)` only the files whose name is not held with the same bytes
# (`service.client.sha256_of_file(path)`), and return a dict from each file's name to its `Upload`, or
# `None` for a file skipped.

# %% tags=["exercise"]
def upload_new(client, paths):
    """Upload only the files the service does not hold with the same bytes; {file name: Upload or None}."""
    ### BEGIN SOLUTION
    from pathlib import Path

    from service.client import sha256_of_file

    held = {document["name"]: document["sha256"] for document in client.documents()}
    result = {}
    for path in map(Path, paths):
        result[path.name] = None if held.get(path.name) == sha256_of_file(path) else client.upload_file(path)
    return result
    ### END SOLUTION


# %%
from checks.nb08 import check_upload_new

check_upload_new(upload_new)

# %%
again = client.upload_new(paths)  # the course's version of the exercise (service.client.ServiceClient.upload_new)
display(Markdown(f"Uploading the same files again: {sum(u is None for u in again.values())} of {len(again)} skipped, "
                 f"{sum(u is not None for u in again.values())} job(s) queued."))

# %% [markdown]
# ## 5. The nightly evaluation and its trend
#
# Nobody re-runs notebook 06 by hand every night. `service.nightly.run_nightly` (`python -m service nightly`
# from cron) takes the documents indexed since the last run, generates grounded questions from their chunks
# (notebook 06's `generate_test_set`), asks the **running service** each one through `/v1/ask`, scores the
# replies with notebook 06's judges (chunk recall; factual consistency and completeness, typed verdicts) and
# stores the run with its metrics in the database, where `GET /v1/eval/runs` lists them. We run it twice:
# once now, and once after a second batch of uploads — two points of a trend. The questions are few and the
# judge is the small model, so read a change between two runs as a prompt to look, not as a result.

# %%
llm = get_chat_model()
first_run = service.nightly(llm, questions=NIGHTLY_QUESTIONS, seed=SEED)
later = client.upload_files([CORPUS_DIR / name for name in LATER])
later_jobs = client.wait([u.job_id for u in later], timeout=JOB_TIMEOUT)
second_run = service.nightly(llm, questions=NIGHTLY_QUESTIONS, seed=SEED)
runs = pd.DataFrame([{"run": r["run_id"], "new documents": r["documents"], "questions": r["questions"],
                      **{m: r["metrics"].get(m) for m in TREND_METRICS}}
                     for r in client.eval_runs() if r["status"] == "done"]).set_index("run")
runs

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
for metric in TREND_METRICS:
    points = runs[metric].dropna()
    ax.plot(points.index, points.values, marker="o", label=metric)
ax.set_xticks(runs.index)
ax.set_xlabel("nightly run")
ax.set_ylim(-0.05, 1.05)
ax.set_title("The service on questions about its new documents")
ax.legend(fontsize=8, loc="lower left")
plt.show()
print(f"report: {second_run['report']}")

# %% [markdown]
# ## 6. Stop the service
#
# Closing the stack stops the server with SIGTERM: uvicorn finishes the requests it has, the worker threads
# stop after their current job, the process exits; then the client closes and the temporary folder goes.

# %%
import httpx

data_dir = service.data_dir
stack.close()
try:
    httpx.get(f"{service.url}/v1/health", timeout=2)
    still_answers = True
except httpx.HTTPError:
    still_answers = False
display(Markdown(f"The server {'needed SIGKILL' if service.process.killed else 'stopped on SIGTERM'} "
                 f"(exit status {service.process.process.returncode}); after it, the health check "
                 f"{'still answers' if still_answers else 'gets no answer'} and the data folder "
                 f"{'is still there' if data_dir.exists() else 'is gone'}."))

# %% [markdown]
# ## What we found

# %%
from lessons.core import num

first, second = first_run["metrics"], second_run["metrics"]
recall, complete = TREND_METRICS[0], TREND_METRICS[-1]
findings = [
    (f"Our run: {len(paths)} documents uploaded first, {len(later)} between the nightly runs; the worker indexed "
    f"{sum(j.status == 'done' for j in jobs.values())} of the first {len(jobs)} "
    f"({int(job_table['chunks'].fillna(0).sum())} chunks) in {timeline[-1]['seconds']:.0f} s."),
    "Search (hybrid + reranker): " + "; ".join(
        f"{qid} {'found' if hit else 'missed'} a chunk of its gold source in the top {K}" for qid, hit in search_hits.items()) + ".",
    "Ask: " + "; ".join(f"{qid} {'abstained' if r['abstained'] else 'answered citing ' + (', '.join(cited_sources(r)) or 'nothing')}"
                        for qid, r in replies.items()) + ".",
    (f"The nightly runs: run {first_run['run_id']} with {first.get('questions', 0)} question(s) on {first.get('new documents', 0)} "
    f"new document(s) ({recall} {num(first.get(recall))}, {complete} {num(first.get(complete))}); run "
    f"{second_run['run_id']} with {second.get('questions', 0)} on {second.get('new documents', 0)} ({recall} "
    f"{num(second.get(recall))}, {complete} {num(second.get(complete))}) — each run scores only the "
    "documents added since the one before, so the two are different questions, not a before and after."),
    f"The whole notebook took {(time.perf_counter() - notebook_started) / 60:.1f} min.",
]
display(Markdown("\n".join(f"- {line}" for line in findings)))

# %%
print(USAGE.report())
