"""QA transformation cost: seconds and tokens per chunk, concurrency 1 vs 2, and QA-cache reads.

Run on an otherwise idle machine: another busy process on a 2-core machine changes everything.
Both LangChain's LLM cache and the transformer's QA cache are off for the timed runs.
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core.usage import metered
from lessons.retrieval.index import chunk_knowledge_base
from lessons.transforms.qa_transform import QACache, QAPair, QATransformer, qa_cache_key

CHUNKS_PER_LANGUAGE = 3
MAX_PAIRS = 3
CACHE_ENTRIES = 300


def sample_chunks() -> list:
    chunks = chunk_knowledge_base()
    picked = []
    for language in ("en", "zh"):
        same = [c for c in chunks if c.metadata["language"] == language and len(c.page_content) > 200]
        step = len(same) // CHUNKS_PER_LANGUAGE
        picked += same[::step][:CHUNKS_PER_LANGUAGE]
    return picked


def generation(chunks: list, concurrency: int) -> dict:
    from lessons.core.models import get_chat_model

    qa = QATransformer(
        get_chat_model(cache=False), max_pairs=MAX_PAIRS, cache=False, concurrency=concurrency, progress=False
    )
    start = time.perf_counter()
    with metered() as meter:
        qa.generate(chunks)
    seconds = time.perf_counter() - start
    report = qa.report()
    return {
        "concurrency": concurrency,
        "chunks": len(chunks),
        "wall_s": round(seconds, 1),
        "s_per_chunk": round(seconds / len(chunks), 1),
        "calls": meter.totals.calls,
        "input_tokens": meter.totals.input_tokens,
        "output_tokens": meter.totals.output_tokens,
        "schema_success_rate": report.schema_success_rate,
        "pairs": report.pairs,
    }


def cache_reads() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cache = QACache(Path(tmp) / "qa.sqlite")
        entry = {"pairs": [QAPair(question="Which port?", answer="7420").model_dump()] * MAX_PAIRS, "status": "ok"}
        keys = [qa_cache_key(f"chunk {i}", "local:m", "v", MAX_PAIRS) for i in range(CACHE_ENTRIES)]
        for key in keys:
            cache.put(key, entry)
        start = time.perf_counter()
        for key in keys:
            cache.get(key)
        seconds = time.perf_counter() - start
    return {"entries": CACHE_ENTRIES, "read_all_ms": round(seconds * 1000, 1)}


if __name__ == "__main__":
    chunks = sample_chunks()
    results = {"generation": [generation(chunks, concurrency) for concurrency in (1, 2)], "cache": cache_reads()}
    for row in results["generation"]:
        print(row)
    print(results["cache"])
    save("qa_transform", results)
