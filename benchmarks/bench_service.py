"""The service under load: 200 uploads from 20 concurrent clients, search latency while they are ingested, and
search latency on the idle service afterwards — with the search reranker on (the default) and off.

Starts `python -m service api` on 127.0.0.1 (SQLite, embedded Chroma, the USE embedder, 2 worker threads) in a
temporary folder; 20 clients upload 200 small Markdown files; 4 clients search the whole time until every job is
done; then, with nothing else running in the service, `IDLE_SEARCHES` searches from one client and
`IDLE_SECONDS` of searches from 4 clients. It does all that twice: `AGENTIC_RAG_SERVICE_RERANKER=default` (hybrid top
20, then the cross-encoder: the queries are English) and `=none` (the hybrid order alone). Writes
benchmarks/results/service.json: upload throughput, end-to-end indexing throughput, search p50/p95 per phase.
Run it on an idle machine: the search latencies measure the cores' other users too.

    python benchmarks/bench_service.py            # both settings
    python benchmarks/bench_service.py none       # one of them
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from service.client import ServiceProcess

UPLOADS, CLIENTS, SEARCHERS, KEY = 200, 20, 4, "bench-key"
IDLE_SEARCHES, IDLE_SECONDS = 100, 20
RERANKERS = {
    "default": "hybrid top 20 + cross-encoder (AGENTIC_RAG_SERVICE_RERANKER=default)",
    "none": "hybrid only (AGENTIC_RAG_SERVICE_RERANKER=none)",
}


def percentiles(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    if not ordered:
        return {"searches": 0, "p50 ms": None, "p95 ms": None}
    return {
        "searches": len(ordered),
        "p50 ms": round(1000 * statistics.median(ordered), 1),
        "p95 ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
    }


def query(number: int) -> str:
    return f"which note has marker n{number * 37 % UPLOADS:03d}"


def document(number: int) -> bytes:
    return (f"# Note {number}\n\nNote {number} records that the marker is n{number:03d}. "
            + "Filler words for a short note. " * 3 + "\n").encode()  # fmt: skip


def start(reranker: str, folder: str | Path) -> ServiceProcess:
    """`python -m service api` with its data, cache and log in `folder` (SQLite, embedded Chroma, the USE embedder,
    2 worker threads, `reranker`), none of this shell's AGENTIC_RAG_ or DEEPSEEK_ settings; returned once /v1/health
    answers (`service.client.ServiceProcess`, the one wait for health: RuntimeError with the server's log if not)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "DEEPSEEK_"))}
    env.update(AGENTIC_RAG_CACHE_DIR=f"{folder}/cache", AGENTIC_RAG_EMBEDDER="use", AGENTIC_RAG_SERVICE_DATA_DIR=f"{folder}/service",
               AGENTIC_RAG_SERVICE_API_KEY=KEY, AGENTIC_RAG_SERVICE_WORKERS="2", AGENTIC_RAG_SERVICE_POLL_SECONDS="0.1",
               AGENTIC_RAG_SERVICE_RERANKER=reranker)  # fmt: skip
    return ServiceProcess(env, Path(folder) / "service.log", timeout=120)


def measure(reranker: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        process = start(reranker, tmp)
        url = process.url
        try:
            deadline = time.monotonic() + 120
            with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=60) as warm:  # embedder loaded first
                job = warm.post("/v1/documents", files={"file": ("warm.md", b"# Warm\n\nwarm up the embedder")}).json()[
                    "job_id"
                ]
                while warm.get(f"/v1/jobs/{job}").json()["status"] != "done" and time.monotonic() < deadline:
                    time.sleep(0.2)
                warm.post("/v1/search", json={"query": "warm up the reranker", "k": 3}).raise_for_status()  # loads it
            latencies: list[float] = []
            done = threading.Event()

            def search_all_the_time(number: int) -> None:
                with httpx.Client(base_url=url, timeout=60) as client:
                    stop_at = time.monotonic() + 600
                    while not done.is_set() and time.monotonic() < stop_at:
                        started = time.perf_counter()
                        client.post("/v1/search", json={"query": query(number), "k": 3}).raise_for_status()
                        latencies.append(time.perf_counter() - started)

            searchers = [threading.Thread(target=search_all_the_time, args=(n,)) for n in range(SEARCHERS)]
            for searcher in searchers:
                searcher.start()

            def one(number: int) -> int:
                with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=60) as client:
                    reply = client.post("/v1/documents", files={"file": (f"note-{number:03d}.md", document(number))})
                    reply.raise_for_status()
                    return reply.json()["job_id"]

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
                jobs = list(pool.map(one, range(UPLOADS)))
            uploaded = time.perf_counter() - started
            with httpx.Client(base_url=url, timeout=60) as client:
                stop_at = time.monotonic() + 900
                while time.monotonic() < stop_at:
                    states = [
                        j["status"]
                        for j in client.get("/v1/jobs", params={"limit": 1000}).json()
                        if j["job_id"] in set(jobs)
                    ]
                    if len(states) == UPLOADS and all(s in ("done", "failed") for s in states):
                        break
                    time.sleep(0.25)
                indexed = time.perf_counter() - started
                stats = client.get("/v1/index").json()
            done.set()
            for searcher in searchers:
                searcher.join(timeout=60)
            ordered = sorted(latencies)
            idle_one: list[float] = []
            with httpx.Client(base_url=url, timeout=60) as client:  # the service idle: one client, one search at a time
                for number in range(IDLE_SEARCHES):
                    started_search = time.perf_counter()
                    client.post("/v1/search", json={"query": query(number), "k": 3}).raise_for_status()
                    idle_one.append(time.perf_counter() - started_search)
            idle_many: list[float] = []

            def search_for_a_while(number: int) -> None:
                with httpx.Client(base_url=url, timeout=60) as client:
                    stop_at, count = time.monotonic() + IDLE_SECONDS, 0
                    while time.monotonic() < stop_at:
                        started_search = time.perf_counter()
                        client.post("/v1/search", json={"query": query(number * 50 + count), "k": 3}).raise_for_status()
                        idle_many.append(time.perf_counter() - started_search)
                        count += 1

            load_before_idle = os.getloadavg()[0]
            with ThreadPoolExecutor(max_workers=SEARCHERS) as pool:
                list(pool.map(search_for_a_while, range(SEARCHERS)))
            results = {
                "reranker": RERANKERS[reranker],
                "uploads": UPLOADS, "clients": CLIENTS, "searching clients": SEARCHERS, "worker threads": 2,
                "embedder": "use", "stores": "SQLite + embedded Chroma",
                "upload seconds": round(uploaded, 2), "uploads/s accepted": round(UPLOADS / uploaded, 1),
                "seconds until all indexed": round(indexed, 2), "documents indexed/s": round(UPLOADS / indexed, 1),
                "jobs done": states.count("done"), "chunks in index": stats["total"], "duplicate ids": stats["duplicate_ids"],
                "searches under load": len(ordered),
                "search p50 ms": round(1000 * statistics.median(ordered), 1) if ordered else None,
                "search p95 ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1) if ordered else None,
                "load average at end of ingestion": round(load_before_idle, 2),
                "idle, 1 client": percentiles(idle_one),
                f"idle, {SEARCHERS} clients for {IDLE_SECONDS} s": percentiles(idle_many),
                "load average at end": round(os.getloadavg()[0], 2),
            }  # fmt: skip
            print(results, flush=True)
            return results
        finally:
            process.stop()


def main(names: list[str]) -> None:
    unknown = [n for n in names if n not in RERANKERS]
    if unknown:
        raise SystemExit(f"unknown reranker setting(s) {unknown}: use {list(RERANKERS)}")
    load_before = round(os.getloadavg()[0], 2)
    runs = {name: measure(name) for name in names or RERANKERS}
    save("service", {"load average before": load_before, "runs": runs})


if __name__ == "__main__":
    main(sys.argv[1:])
