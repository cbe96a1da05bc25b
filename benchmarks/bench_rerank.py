"""The packaged cross-encoder and ColBERT model: pairs per second on knowledge-base chunks, batch sizes compared.

Writes benchmarks/results/rerank.json. Against it stands the chat model's P(yes) judge at one call per pair
(notebook 02 prints the seconds of both on the same candidates).
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import save
from lessons.retrieval import cross_encoder
from lessons.retrieval.cross_encoder import ColbertScorer, OnnxCrossEncoder
from lessons.retrieval.index import chunk_knowledge_base


def pairs_per_second(model, pairs) -> float:
    cross_encoder._SCORES.clear()  # measure the model, not the memo
    start = time.perf_counter()
    model.score(pairs)
    return len(pairs) / (time.perf_counter() - start)


def main() -> dict:
    chunks = chunk_knowledge_base()[:120]
    pairs = [("On which port does Atlas Server expose its APIs by default?", c.page_content) for c in chunks]
    rows = []
    for batch_size in (1, 8, 16, 32):
        rows.append(
            {
                "model": "cross-encoder (ms-marco-MiniLM-L-12-v2)",
                "batch_size": batch_size,
                "pairs_per_second": round(
                    pairs_per_second(OnnxCrossEncoder(batch_size=batch_size, persist=False), pairs), 1
                ),
            }
        )
    rows.append(
        {
            "model": "ColBERT (answerai-colbert-small-v1)",
            "batch_size": 16,
            "pairs_per_second": round(pairs_per_second(ColbertScorer(batch_size=16), pairs), 1),
        }
    )
    for row in rows:
        print(row)
    return {
        "pairs": len(pairs),
        "mean_passage_chars": round(sum(len(p) for _, p in pairs) / len(pairs)),
        "results": rows,
    }


if __name__ == "__main__":
    save("rerank", main())
