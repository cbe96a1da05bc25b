"""Does the reranked pipeline keep what its first stage got right? Both corpora, every answerable gold question, per language.

No chat model. For each question the hybrid candidates (dense and BM25, each `DEPTH` deep, fused by RRF) are
scored ONCE by the packaged cross-encoder (scores persist in the cache folder's `cross_encoder_scores.sqlite`),
then ordered many ways: the cross-encoder alone over the top N, and the reciprocal rank fusion of the
cross-encoder's rank with the first stage's rank at several first-stage weights and depths N. English
questions take the cross-encoder route, Chinese ones keep the first stage (the course's per-language routes).
Plain hybrid (each retriever's top 10, fused) and dense are the references. The packaged ColBERT
(answerai-colbert-small-v1, English) is measured as a reranker fused with the first stage, and as a third
ranked list beside the first stage and the cross-encoder.

The script ends with a loud FAILED block when the course's default reranked pipeline
(`lessons.retrieval.rerank.DEFAULT_FIRST_STAGE_WEIGHT`, `RERANK_CANDIDATES`) scores below plain hybrid on
recall@5 or MRR@10 on either corpus or language.

    nice -n 10 python benchmarks/bench_rerank_fusion.py     → benchmarks/results/rerank_fusion.json
"""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core.search_text import search_text
from lessons.evaluation.metrics import retrieval_scores
from lessons.ingest.corpus import load_gold
from lessons.retrieval.cross_encoder import ColbertScorer, OnnxCrossEncoder
from lessons.retrieval.document_processor import RERANK_CANDIDATES, hybrid_over, plain_first
from lessons.retrieval.index import load_knowledge_base
from lessons.retrieval.rerank import DEFAULT_FIRST_STAGE_WEIGHT
from lessons.retrieval.retrievers import dense_retriever, reciprocal_rank_fusion
from lessons.text.language import detect_language

DEPTHS = (10, 20, 30)
WEIGHTS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7)
K = 10
METRICS = ["recall@5", "MRR@10"]


def fused(first: list, scores: dict[str, float], weight: float, depth: int) -> list:
    """The first stage's top `depth` reordered: RRF of the first stage's rank (`weight`) and the cross-encoder's."""
    top = first[:depth]
    by_model = sorted(top, key=lambda d: scores[d.page_content], reverse=True)
    if weight == 0:
        return by_model[:K]
    return reciprocal_rank_fusion([top, by_model], [weight, 1 - weight], id_key=None)[:K]


def pipelines(question, chunks, store, model, colbert) -> dict[str, list]:
    deep = hybrid_over(chunks, store, k=max(DEPTHS), candidates=max(DEPTHS)).invoke(question.question)
    plain = hybrid_over(chunks, store, k=K, candidates=K).invoke(question.question)
    out = {"dense": dense_retriever(store, K).invoke(question.question), "hybrid (plain)": plain}
    english = detect_language(question.question) == "en"
    # two first-stage orders over the same candidates: the deep fusion's, and plain hybrid's top K first
    orders = {"deep": deep, "plain first": plain_first(plain, deep)}
    for depth in DEPTHS:
        out[f"hybrid, top {depth} fused"] = deep[:K]
        for order, first in orders.items():
            if not english:  # the Chinese route keeps the first stage
                for weight in WEIGHTS:
                    out[f"{order}: top {depth} → CE, w={weight}"] = first[:K]
                continue
            top = first[:depth]
            raw = model.score([(question.question, search_text(d, d.page_content)) for d in top])
            scores = {d.page_content: s for d, s in zip(top, raw)}
            for weight in WEIGHTS:
                out[f"{order}: top {depth} → CE, w={weight}"] = fused(first, scores, weight, depth)
    first, depth = orders["plain first"], RERANK_CANDIDATES
    top = first[:depth]
    if not english:
        out["plain first: top 20 → ColBERT, w=0.2"] = out["plain first: top 20 → CE + ColBERT + first stage"] = top[:K]
        return out
    late = colbert.score([(question.question, search_text(d, d.page_content)) for d in top])
    by_colbert = [d for _, d in sorted(zip(late, top), key=lambda pair: pair[0], reverse=True)]
    raw = model.score([(question.question, search_text(d, d.page_content)) for d in top])
    by_model = [d for _, d in sorted(zip(raw, top), key=lambda pair: pair[0], reverse=True)]
    out["plain first: top 20 → ColBERT, w=0.2"] = reciprocal_rank_fusion([top, by_colbert], [0.2, 0.8], id_key=None)[:K]
    out["plain first: top 20 → CE + ColBERT + first stage"] = reciprocal_rank_fusion(
        [top, by_model, by_colbert], [0.2, 0.5, 0.3], id_key=None
    )[:K]
    return out


def main():
    model, colbert = OnnxCrossEncoder(), ColbertScorer()
    rows = []
    for corpus in ("course", "packages"):
        chunks, store = load_knowledge_base(corpus)
        for question in [q for q in load_gold(corpus=corpus) if q.answerable]:
            for name, documents in pipelines(question, chunks, store, model, colbert).items():
                rows.append({"corpus": corpus, "language": question.language, "pipeline": name,
                             **retrieval_scores(documents, question, None, k=5, rank_k=K)})  # fmt: skip
    frame = pd.DataFrame(rows)
    table = frame.groupby(["corpus", "language", "pipeline"], sort=False)[METRICS].mean().round(3)
    pd.set_option("display.width", 200, "display.max_rows", 500)
    print(table.unstack(["corpus", "language"]).to_string())
    default = f"plain first: top {RERANK_CANDIDATES} → CE, w={DEFAULT_FIRST_STAGE_WEIGHT}"
    failures = []
    for (corpus, language), part in table.groupby(level=["corpus", "language"]):
        part = part.droplevel(["corpus", "language"])
        for metric in METRICS:
            if part.loc[default, metric] < part.loc["hybrid (plain)", metric]:
                failures.append(f"{corpus}/{language} {metric}: default {part.loc[default, metric]} "
                                f"< plain hybrid {part.loc['hybrid (plain)', metric]}")  # fmt: skip
    misses = {}
    for corpus, part in frame.groupby("corpus"):
        means = part.groupby("pipeline")["recall@5"].mean()
        dense_miss = 1 - means["dense"]
        misses[corpus] = {name: round((value - means["dense"]) / dense_miss, 3) for name, value in means.items()}
    if failures:
        print("\n" + "!" * 72 + "\nFAILED: the default reranked pipeline scores below plain hybrid:")
        print("\n".join(f"  - {line}" for line in failures) + "\n" + "!" * 72)
    else:
        print(f"\nOK: default ({default}) >= plain hybrid on recall@5 and MRR@10, both corpora, both languages")
    result = {
        "default": default,
        "failures": failures,
        "table": {" | ".join(map(str, key)): row for key, row in table.to_dict("index").items()},
        "share_of_dense_recall_misses_removed": misses,
    }
    save("rerank_fusion", result)
    return result


if __name__ == "__main__":
    main()
