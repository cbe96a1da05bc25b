"""RAPTOR at laptop scale (lessons.retrieval.summary_tree): leaves + cluster summaries against the default pipeline.

Questions: those whose answer spans sections — every gold question of type "multi_hop" of both corpora
(data/eval/gold_en.jsonl, gold_zh.jsonl, packages_gold.jsonl), and any other gold question whose sources name two or
more (file, section) pairs. Per corpus the tree is built once (clusters per language, one chat-model summary per
cluster, through the LLM cache: a re-run makes no call), indexed with the leaves in its own Chroma collection, and
four pipelines are compared on recall@5 (of the evidence quotes: a multi-hop question needs all) and MRR@10:

- hybrid: the course's hybrid top 10 (`hybrid_over`), no reranker;
- hybrid + tree: the same over leaves + summaries, each summary replaced by its member chunks;
- reranked hybrid: the default pipeline (`reranked_hybrid`: hybrid top 20, the default reranker);
- reranked hybrid + tree: `summary_tree_retriever` (the fused top 20 over leaves + summaries, expanded, reranked);
- the two tree pipelines again with each summary's chunks nearest to the question first (`members="question"`)
  instead of in document order: a variant added after the first (Chinese-only) run showed a summary's chunks
  pushing evidence out of the top 5 (zh-029).

The build's cost: clusters, calls (fresh and cached), prompt / completion tokens, seconds, and the load average
(other processes share the 2 cores and the model server). Writes benchmarks/results/raptor.json.

    nice -n 19 python benchmarks/bench_raptor.py [--levels 1] [--corpus course packages] [--name raptor]
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import save

K, RANK_K = 5, 10


def spans_sections(question) -> bool:
    return question.type == "multi_hop" or len({(s.file, s.section) for s in question.sources}) >= 2


def mean(values) -> float:
    values = list(values)
    return round(sum(values) / len(values), 3) if values else 0.0


def build(corpus: str, levels: int, languages):
    from lessons.chunking import cached_embeddings
    from lessons.core.models import get_chat_model
    from lessons.core.usage import metered
    from lessons.retrieval.index import INDEX_NAMES, build_index, load_knowledge_base
    from lessons.retrieval.summary_tree import build_summary_tree, index_vectors, summaries_by_level

    chunks, store = load_knowledge_base(corpus)
    vectors = index_vectors(store, chunks)
    load_before = os.getloadavg()
    start = time.perf_counter()

    def progress(done: int, level: int) -> None:
        print(f"  {corpus}: {done} summaries (level {level}), {time.perf_counter() - start:.0f} s", flush=True)

    with metered() as meter:
        tree = build_summary_tree(
            chunks,
            get_chat_model(),
            cached_embeddings(),
            levels=levels,
            languages=languages,
            vectors=vectors,
            progress=progress,
        )
    summary_seconds = time.perf_counter() - start
    tree_store = build_index(tree.documents(), name=f"{INDEX_NAMES[corpus]}-tree", embeddings=cached_embeddings())
    totals = meter.totals
    cost = {
        "chunks": len(chunks),
        "summarised languages": sorted(languages) if languages else "all",
        "clusters": tree.clusters,
        "summaries": {str(level): n for level, n in summaries_by_level(tree).items()},
        "fresh_calls": totals.calls,
        "cached_calls": totals.cached_calls,
        "prompt_tokens": totals.input_tokens + totals.cached_input_tokens,
        "completion_tokens": totals.output_tokens + totals.cached_output_tokens,
        "fresh_prompt_tokens": totals.input_tokens,
        "fresh_completion_tokens": totals.output_tokens,
        "summary_seconds": round(summary_seconds, 1),
        "index_seconds": round(time.perf_counter() - start - summary_seconds, 1),
        "load_average_1min": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)},
        "summary_chars_mean": mean(len(s.page_content) for s in tree.summaries),
    }
    return chunks, store, tree, tree_store, cost


def evaluate(corpus: str, chunks, store, tree, tree_store) -> tuple[dict, list[dict]]:
    from lessons.evaluation.metrics import retrieval_scores
    from lessons.ingest.corpus import load_gold
    from lessons.retrieval.document_processor import hybrid_over, reranked_hybrid
    from lessons.retrieval.summary_tree import is_summary, question_order, summary_tree_retriever

    questions = [q for q in load_gold(corpus=corpus) if spans_sections(q)]
    from langchain_core.runnables import RunnableLambda

    tree_hybrid = hybrid_over(tree.documents(), tree_store, k=RANK_K)
    pipelines = {
        "hybrid": hybrid_over(chunks, store, k=RANK_K),
        "hybrid + tree": RunnableLambda(lambda q: tree.expand(tree_hybrid.invoke(q))[:RANK_K]),
        "reranked hybrid": reranked_hybrid(chunks, store, k=RANK_K),
        "reranked hybrid + tree": summary_tree_retriever(tree, tree_store, k=RANK_K),
        "hybrid + tree, members by question": RunnableLambda(
            lambda q: tree.expand(tree_hybrid.invoke(q), question_order(tree_store, q))[:RANK_K]
        ),
        "reranked hybrid + tree, members by question": summary_tree_retriever(
            tree, tree_store, k=RANK_K, members="question"
        ),
    }
    rows = []
    for q in questions:
        row = {"id": q.id, "language": q.language, "type": q.type, "corpus": corpus}
        for name, pipeline in pipelines.items():
            ranked = pipeline.invoke(q.question)
            scores = retrieval_scores(ranked, q, k=K, rank_k=RANK_K)
            row[name] = {"recall@5": scores["recall@5"], "MRR@10": scores["MRR@10"]}
        fused = pipelines["reranked hybrid + tree"].first_stage.invoke(q.question)
        row["summaries in fused top 20"] = sum(is_summary(d) for d in fused)
        row["summaries in fused top 5"] = sum(is_summary(d) for d in fused[:5])
        rows.append(row)
    summary = {}
    for language in ("en", "zh", "all"):
        cell = [r for r in rows if language == "all" or r["language"] == language]
        if not cell:
            continue
        summary[language] = {"n": len(cell)}
        for name in pipelines:
            summary[language][name] = {m: mean(r[name][m] for r in cell) for m in ("recall@5", "MRR@10")}
        for tree_name in (name for name in pipelines if "tree" in name):
            base = tree_name.split(" + ")[0]
            diff = [r[tree_name]["recall@5"] - r[base]["recall@5"] for r in cell]
            summary[language][f"{tree_name} vs {base}: recall@5 better/same/worse"] = [
                sum(d > 0 for d in diff),
                sum(d == 0 for d in diff),
                sum(d < 0 for d in diff),
            ]
        summary[language]["questions with a summary in the fused top 5"] = sum(
            r["summaries in fused top 5"] > 0 for r in cell
        )
    return summary, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, default=1, choices=(1, 2))
    parser.add_argument("--corpus", nargs="+", default=["course", "packages"])
    parser.add_argument("--languages", nargs="+", help="summarise only these languages' chunks (default: all)")
    parser.add_argument("--name", default="raptor")
    args = parser.parse_args()
    from lessons.core.models import active_model_info

    result = {
        "model": str(active_model_info()),
        "levels": args.levels,
        "questions": "multi_hop gold questions + gold questions with evidence in >= 2 sections",
        "metrics": f"recall@{K} of the evidence quotes, MRR@{RANK_K}",
        "by_corpus": {},
    }
    for corpus in args.corpus:
        print(f"{corpus}: building the summary tree", flush=True)
        chunks, store, tree, tree_store, cost = build(corpus, args.levels, args.languages)
        print(f"{corpus}: {cost}", flush=True)
        summary, rows = evaluate(corpus, chunks, store, tree, tree_store)
        result["by_corpus"][corpus] = {"build": cost, "retrieval": summary, "rows": rows}
        print(summary, flush=True)
    save(args.name, result)


if __name__ == "__main__":
    main()
