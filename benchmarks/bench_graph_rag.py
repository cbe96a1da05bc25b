"""Graph RAG (lessons.retrieval.graph_index) on the multi-hop gold questions of both corpora, per language.

Three retrievers over the same first stage, each returning 10 passages:
- the default reranked hybrid (`reranked_hybrid`, k=10: hybrid top 20, the cross-encoder fused with the hybrid order);
- context expansion (`ContextExpansionRetriever`, notebook 02) of its 10 hits, blocks in the hits' order (no block
  rerank); a block holds several chunks, so it is longer than one passage: its recall is of more text;
- graph expansion (`GraphExpansionRetriever`): the chunks sharing entities with its top `--seeds` hits, fused by RRF.

What is extracted (bounded: one chat-model call per chunk): the default's top `--depth` hits of every multi-hop
question, read in rank order across both corpora (every question's rank-1 hit, then every rank-2 hit, …) until
`--budget-minutes` is spent, so a stopped run has read the top r hits of every question and part of rank r+1 (the
result says r, `complete_depth`); `--scope corpus` reads every chunk of both corpora instead. The graph reaches only
the chunks it read. Questions of other types are not run. Calls go through the LLM cache: a re-run is free and gives
the same graph (its cost then shows as cached calls). Writes benchmarks/results/graph_rag.json.

    python benchmarks/bench_graph_rag.py [--depth 10] [--budget-minutes 60] [--scope pools|corpus] [--seeds 3]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, save

CORPORA = ("course", "packages")
METRICS = ("recall@5", "MRR@10")


def mean_by_language(rows: list[dict], name: str) -> dict:
    result = {}
    for language in ("en", "zh", "all"):
        cell = [r for r in rows if language in (r["language"], "all")]
        if cell:
            result[language] = {"n": len(cell)} | {
                m: round(sum(r[name][m] for r in cell) / len(cell), 3) for m in METRICS
            }
    return result


def first_stage(corpus: str) -> dict:
    """The corpus's chunks, its multi-hop gold questions and the default's 10 hits for each."""
    from lessons.ingest.corpus import load_gold
    from lessons.retrieval.document_processor import reranked_hybrid
    from lessons.retrieval.index import load_knowledge_base

    chunks, store = load_knowledge_base(corpus)
    questions = [q for q in load_gold(corpus=corpus) if q.type == "multi_hop"]
    default = reranked_hybrid(chunks, store, k=10)
    return {
        "chunks": chunks,
        "default": default,
        "questions": questions,
        "first": {q.id: default.invoke(q.question) for q in questions},
    }


def extraction_order(stages: dict, depth: int) -> list[tuple[str, int, object]]:
    """(corpus, rank, chunk): every question's rank-1 hit (both corpora), then every rank-2 hit, … down to `depth`,
    each chunk once (`lessons.retrieval.graph_index.extraction_order`)."""
    from lessons.retrieval.graph_index import extraction_order as order

    return order([(corpus, hits) for corpus, stage in stages.items() for hits in stage["first"].values()], depth)


def extract(stages: dict, args) -> dict:
    """Extract in `extraction_order` until `--budget-minutes` is spent; per corpus: the merged Extraction and the
    deepest rank whose hits were all read."""
    from tqdm.auto import tqdm

    from lessons.core.models import get_chat_model
    from lessons.core.usage import metered
    from lessons.retrieval.graph_index import Extraction, extract_graph

    model, order = get_chat_model(), extraction_order(stages, args.depth)
    if args.scope == "corpus":
        order = [(corpus, 0, c) for corpus, stage in stages.items() for c in stage["chunks"]]
    done = {corpus: {"extraction": Extraction(), "ranks": []} for corpus in stages}
    load_before, start = os.getloadavg(), time.perf_counter()
    with metered() as meter:
        for corpus, rank, chunk in tqdm(order, desc="extract"):
            if time.perf_counter() - start > 60 * args.budget_minutes or len(done[corpus]["ranks"]) + sum(
                len(d["ranks"]) for c, d in done.items() if c != corpus
            ) >= (args.limit or len(order)):
                break
            one = extract_graph(model, [chunk])
            merged = done[corpus]["extraction"]
            merged.entities.update(one.entities)
            merged.relations.update(one.relations)
            merged.failures.update(one.failures)
            merged.seconds += one.seconds
            done[corpus]["ranks"].append(rank)
    counts = meter.counts()
    for corpus in stages:
        left = [rank for c, rank, _ in order if c == corpus][len(done[corpus]["ranks"]) :]
        done[corpus]["complete_depth"] = (min(left) - 1) if left else args.depth
        done[corpus]["left"] = len(left)
    cost = {
        "calls": counts["llm_calls"] - counts["cached_calls"],
        "cached_calls": counts["cached_calls"],
        "prompt_tokens": counts["input_tokens"],
        "completion_tokens": counts["output_tokens"],
        "seconds": round(time.perf_counter() - start, 1),
        "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }
    return {"by_corpus": done, "cost": cost}


def run_corpus(corpus: str, stage: dict, done: dict, args) -> dict:
    from lessons.evaluation.metrics import retrieval_scores
    from lessons.retrieval.context_expansion import ChunkNeighbours, ContextExpansionRetriever
    from lessons.retrieval.graph_index import EntityGraph, GraphExpansionRetriever

    chunks, default, extraction = stage["chunks"], stage["default"], done["extraction"]
    graph = EntityGraph.from_extraction(extraction)
    expansion = ContextExpansionRetriever(first_stage=default, neighbours=ChunkNeighbours(chunks), hits=10)
    graph_retriever = GraphExpansionRetriever.over(
        default, graph, chunks, seeds=args.seeds, k=10, graph_weight=args.graph_weight
    )
    rows = []
    for q in stage["questions"]:
        hits = stage["first"][q.id]
        graphed = graph_retriever.invoke(q.question)
        rows.append(
            {
                "id": q.id,
                "language": q.language,
                "evidence": len(q.evidence),
                "default": retrieval_scores(hits, q),
                "context expansion": retrieval_scores(expansion.invoke(q.question), q),
                "graph expansion": retrieval_scores(graphed, q),
                "graph_added_top5": sum(1 for d in graphed[:5] if d.metadata.get("graph_entities")),
            }
        )
    return {
        "chunks_in_corpus": len(chunks),
        "extracted": {
            "chunks": extraction.chunks,
            "complete_depth": done["complete_depth"],
            "chunks_not_read": done["left"],
            "documents": sorted(
                {
                    stage_chunk.metadata["source"]
                    for stage_chunk in chunks
                    if str(stage_chunk.metadata["chunk_id"]) in extraction.entities
                }
            ),
            "seconds": round(extraction.seconds, 1),
            "seconds_per_chunk": round(extraction.seconds / max(1, extraction.chunks), 1),
            "failures": len(extraction.failures),
        },
        "graph": {**graph.summary(), "hub names": sorted(graph.names[e] for e in graph.hubs())},
        "questions": len(stage["questions"]),
        "by_language": {
            name: mean_by_language(rows, name) for name in ("default", "context expansion", "graph expansion")
        },
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scope", choices=("pools", "corpus"), default="pools")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--graph-weight", type=float, default=0.5)
    parser.add_argument("--depth", type=int, default=10, help="extract the default's top DEPTH hits per question")
    parser.add_argument("--budget-minutes", type=float, default=60.0, help="stop extracting after this long")
    parser.add_argument("--limit", type=int, default=None, help="stop extracting after this many chunks")
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA))
    args = parser.parse_args()
    start = time.perf_counter()
    stages = {corpus: first_stage(corpus) for corpus in args.corpora}
    extracted = extract(stages, args)
    results = {c: run_corpus(c, stages[c], extracted["by_corpus"][c], args) for c in args.corpora}
    cost, previous = extracted["cost"], RESULTS / "graph_rag.json"
    if cost["calls"] == 0 and previous.exists():  # every answer came from the cache: keep what building it cost
        before = json.loads(previous.read_text(encoding="utf-8"))
        read = {c: r["extracted"]["chunks"] for c, r in results.items()}
        if {c: r["extracted"]["chunks"] for c, r in before["corpora"].items()} == read:
            cost = {**before["extraction_cost"], "re_run_from_cache": extracted["cost"]}
    save(
        "graph_rag",
        {
            "settings": {
                "scope": args.scope,
                "depth": args.depth,
                "budget_minutes": args.budget_minutes,
                "seeds": args.seeds,
                "graph_weight": args.graph_weight,
                "k": 10,
            },
            "load": "shared 2-core machine: the chat-model server answered other helpers' calls in between (nice 19)",
            "extraction_cost": cost,
            "seconds": round(time.perf_counter() - start, 1),
            "corpora": results,
        },
    )


if __name__ == "__main__":
    main()
