"""Retrieval techniques of notebook 02: the uncached cost of one question on this machine.

Techniques without an LLM run on every answerable gold question; the ones that call the local model
run with the LLM cache off on a small seeded sample (half English, half Chinese). Each technique is
timed on its own, so the context-expansion pipeline pays for its own first rerank here (in the
notebook it shares those answers with the plain rerank through the cache).

    python benchmarks/bench_retrieval.py [--questions 4]
"""

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core.models import active_model_info, get_chat_model
from lessons.evaluation.retrieval_evaluation import (
    build_techniques,
    evaluate_techniques,
    relevant_chunk_counts,
)
from lessons.ingest.corpus import load_gold
from lessons.ingest.questions import balanced_sample
from lessons.retrieval.index import build_index, chunk_knowledge_base

SEED = 11


def per_question_costs(results) -> list[dict]:
    """Median time and mean LLM calls / tokens per question, one entry per technique."""
    rows = []
    for name, group in results.groupby("technique", sort=False):
        rows.append({
            "technique": name,
            "questions": len(group),
            "seconds/query (median)": round(float(group["seconds"].median()), 3),
            "seconds/query (max)": round(float(group["seconds"].max()), 3),
            "LLM calls/query": round(float(group["llm_calls"].mean()), 1),
            "input tokens/query": round(float(group["input_tokens"].mean())),
            "output tokens/query": round(float(group["output_tokens"].mean())),
        })  # fmt: skip
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=4, help="questions for the LLM techniques (default 4)")
    args = parser.parse_args()
    chunks = chunk_knowledge_base()
    store = build_index(chunks)
    gold = load_gold()
    answerable = [q for q in gold if q.answerable]
    relevant = relevant_chunk_counts(chunks, answerable)
    techniques = build_techniques(chunks, store, get_chat_model(cache=False))
    cheap = [t for t in techniques if not t.uses_llm]
    costly = [t for t in techniques if t.uses_llm]
    sample = balanced_sample(answerable, args.questions, SEED, by_type=True)
    evaluate_techniques(cheap[:1], sample[:1], relevant, progress=False)  # load the embedder before timing
    results = pd.concat(
        [evaluate_techniques(cheap, answerable, relevant), evaluate_techniques(costly, sample, relevant)],
        ignore_index=True,
    )
    rows = per_question_costs(results)
    for row in rows:
        print(row)
    save("retrieval", {
        "model": active_model_info().name,
        "llm_questions": len(sample),
        "llm_question_ids": [q.id for q in sample],
        "cheap_questions": len(answerable),
        "techniques": rows,
    })  # fmt: skip


if __name__ == "__main__":
    main()
