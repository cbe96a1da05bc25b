"""Chroma: adding 10,000 chunks with precomputed vectors, and top-5 query latency."""

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core.embeddings import unit_vectors
from lessons.core.vectorstore import chroma_client

N, DIM, QUERIES = 10_000, 384, 200


def main():
    rng = np.random.default_rng(0)
    vectors = unit_vectors(rng.normal(size=(N, DIM)).astype(np.float32))
    with tempfile.TemporaryDirectory() as tmp:
        collection = chroma_client(Path(tmp)).create_collection("bench", configuration={"hnsw": {"space": "cosine"}})
        start = time.perf_counter()
        for i in range(0, N, 1000):
            collection.add(
                ids=[str(j) for j in range(i, i + 1000)],
                embeddings=vectors[i : i + 1000],
                documents=[f"chunk {j}" for j in range(i, i + 1000)],
            )
        add_s = time.perf_counter() - start
        latencies = []
        for q in vectors[rng.choice(N, QUERIES, replace=False)]:
            start = time.perf_counter()
            collection.query(query_embeddings=[q], n_results=5)
            latencies.append(time.perf_counter() - start)
    results = {
        "chunks": N,
        "dim": DIM,
        "add_seconds": round(add_s, 2),
        "query_top5_ms_median": round(float(np.median(latencies)) * 1000, 2),
        "query_top5_ms_p95": round(float(np.percentile(latencies, 95)) * 1000, 2),
    }
    print(results)
    save("chroma", results)


if __name__ == "__main__":
    main()
