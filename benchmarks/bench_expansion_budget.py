"""Context expansion at the baseline's amount of text: does widening the reranked hits with their neighbours find more
evidence than five plain chunks, when it may show no more characters than they do?

No chat model. Both corpora, every answerable gold question, per language. For each question the course's default
reranked pipeline (`reranked_hybrid`: hybrid top 20, the cross-encoder fused with the first stage for English, the
per-language routes) ranks 10 chunks; its top 5 is the baseline, and ITS characters are the question's budget.
Every variant must fit in that budget:

- "default top 5": the baseline (its recall is recall@5);
- "expanded within budget": the same 10 hits in the same order, each widened with its neighbours
  (`expand_hits(..., budget=)`: `neighbour_budget(rank)` neighbours, nearest first, at most `MAX_BLOCK_CHARS` a
  block) while the budget lasts — a block is capped at what is left, a hit that no longer fits is skipped for the next;
- "expanded when the top 2 share a section": expansion as above only when the first two hits sit in one section
  of one document (same `source` and `section_path`), else the baseline;
- "blocks reranked, then fitted": the 10 hits widened with no budget (`expand_hits`), the blocks reranked by the
  default reranker (the cross-encoder reads the whole block, fused with the hits' order), then the hits refitted to
  the budget in the blocks' new order.

Recall within the budget: the share of the question's evidence quotes found in the texts that fit (the baseline's:
recall@5). MRR@10: the first rank holding evidence among the variant's blocks before the budget cut (the default's:
its 10 chunks; blocks in the hits' order merge hits, so there it cannot fall below the default's) — and "MRR in
budget", the same over the texts that fit. Seconds per question, the median (the first question also loads the
models), through the harness (`lessons.evaluation.harness.measure`): the default's retrieval plus each variant's own
work (the block rerank's cross-encoder calls; scores persist in the cache folder, so a second run times the
retrieval alone; the load average is saved with them). The multi-hop questions are also reported alone (context
expansion's case), and every evidence quote the default's top 5 miss is located: in its hits 6-10, one or two
chunks from a top-5 hit, or elsewhere. Misses: the questions whose recall a variant raises or lowers against the
baseline.

    nice -n 19 python benchmarks/bench_expansion_budget.py     → benchmarks/results/expansion_budget.json
"""

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from langchain_core.documents import Document

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.evaluation.harness import measure
from lessons.evaluation.metrics import evidence_recall_at_k, mrr_at_k, quotes_found, relevance_labels
from lessons.ingest.corpus import load_gold
from lessons.retrieval.context_expansion import MAX_BLOCK_CHARS, ChunkNeighbours, expand_hits
from lessons.retrieval.document_processor import reranked_hybrid
from lessons.retrieval.index import load_knowledge_base
from lessons.retrieval.rerank import default_reranker
from lessons.transforms.qa_transform import chunk_id_of

K, BASE_K = 10, 5
BASELINE = "default top 5"
EXPANDED = "expanded within budget"
GATED = "expanded when the top 2 share a section"
REBLOCKED = "blocks reranked, then fitted"
VARIANTS = (BASELINE, EXPANDED, GATED, REBLOCKED)


def one_section(hits: Sequence[Document]) -> bool:
    """Do the first two hits sit in one section of one document?"""
    if len(hits) < 2:
        return False
    a, b = (h.metadata for h in hits[:2])
    return a["source"] == b["source"] and a.get("section_path", "") == b.get("section_path", "")


def labels(documents: Sequence[Document], question, neighbours: ChunkNeighbours) -> list[bool]:
    """`metrics.relevance` for chunks and blocks alike: a text holding an evidence quote, or a block holding one of
    the question's evidence chunks."""
    by_quote = relevance_labels([d.page_content for d in documents], question.evidence)
    ids = set(question.evidence_chunk_ids)

    def chunk_ids(d: Document) -> set[str]:
        if "chunk_indexes" not in d.metadata:
            return {chunk_id_of(d)}
        source = d.metadata["source"]
        return {chunk_id_of(neighbours.get(source, int(i))) for i in d.metadata["chunk_indexes"].split(",")}

    return [quoted or bool(ids & chunk_ids(d)) for d, quoted in zip(documents, by_quote)]


def scores(in_budget: Sequence[Document], ranked: Sequence[Document], question, neighbours: ChunkNeighbours) -> dict:
    texts = [d.page_content for d in in_budget]
    return {
        "recall in budget": evidence_recall_at_k(texts, question.evidence, len(texts)),
        "MRR@10": mrr_at_k(labels(ranked, question, neighbours), K),
        "MRR in budget": mrr_at_k(labels(in_budget, question, neighbours), K),
        "chars": sum(len(t) for t in texts),
        "texts": len(texts),
    }


def miss_places(question, hits: Sequence[Document], neighbours: ChunkNeighbours) -> list[str]:
    """Where each evidence quote the default's top 5 miss sits: in its hits 6-10, in a chunk next to a top-5 hit
    (1 or 2 chunks away in the same document), or elsewhere — what any expansion could reach at best."""
    top = hits[:BASE_K]
    places = []
    for quote in question.evidence:
        if quotes_found([d.page_content for d in top], [quote]):
            continue
        near = {}
        for hit in top:
            source, index = hit.metadata["source"], hit.metadata["chunk_index"]
            for distance in (1, 2):
                for side in (-1, 1):
                    chunk = neighbours.get(source, index + side * distance)
                    if chunk is not None and quotes_found([chunk.page_content], [quote]):
                        near[distance] = True
        if quotes_found([d.page_content for d in hits[BASE_K:]], [quote]):
            places.append("hits 6-10")
        elif near:
            places.append(f"{min(near)} chunk(s) from a top-5 hit")
        else:
            places.append("elsewhere")
    return places


def question_rows(corpus: str, question, default, neighbours: ChunkNeighbours, block_reranker) -> list[dict]:
    q = question.question
    first = measure(lambda: default.invoke(q))
    hits = list(first.value)
    top = hits[:BASE_K]
    budget = sum(len(d.page_content) for d in top)
    expand = measure(lambda: expand_hits(hits, neighbours, budget=budget))
    gated = expand.value if one_section(hits) else top
    full = expand_hits(hits, neighbours)

    def reblock():
        blocks = list(block_reranker.compress_documents(full, q))
        order = [hits[b.metadata["hit_rank"] - 1] for b in blocks]
        return blocks, expand_hits(order, neighbours, budget=budget)

    reblocked = measure(reblock)
    blocks, refitted = reblocked.value
    lists = {
        BASELINE: (top, hits, first.seconds),
        EXPANDED: (expand.value, full, first.seconds + expand.seconds),
        GATED: (gated, full if gated is expand.value else hits, first.seconds + expand.seconds),
        REBLOCKED: (refitted, blocks, first.seconds + reblocked.seconds),
    }
    base = {
        "corpus": corpus,
        "language": question.language,
        "question_id": question.id,
        "type": question.type,
        "budget": budget,
    }
    places = miss_places(question, hits, neighbours)
    return [{**base, "variant": name, **scores(fit, ranked, question, neighbours), "seconds": seconds,
             "missed quotes at": places if name == BASELINE else []}
            for name, (fit, ranked, seconds) in lists.items()]  # fmt: skip


def misses(frame: pd.DataFrame) -> dict:
    """Per corpus and language, for every variant: the questions whose recall in budget it raises / lowers."""
    out = {}
    pivot = frame.pivot_table(index=["corpus", "language", "question_id"], columns="variant", values="recall in budget")
    for (corpus, language), part in pivot.groupby(level=["corpus", "language"]):
        base = part[BASELINE]
        cell = {"baseline misses": sorted(i[2] for i in part.index[base < 1])}
        for name in VARIANTS[1:]:
            cell[name] = {"removes": sorted(i[2] for i in part.index[(part[name] > base)]),
                          "adds": sorted(i[2] for i in part.index[(part[name] < base)])}  # fmt: skip
        out[f"{corpus} {language}"] = cell
    return out


def main():
    started_load = round(os.getloadavg()[0], 2)
    block_reranker = default_reranker(top_n=K)
    rows = []
    for corpus in ("course", "packages"):
        chunks, store = load_knowledge_base(corpus)
        default, neighbours = reranked_hybrid(chunks, store, k=K), ChunkNeighbours(chunks)
        for question in [q for q in load_gold(corpus=corpus) if q.answerable]:
            rows += question_rows(corpus, question, default, neighbours, block_reranker)
    frame = pd.DataFrame(rows)
    metrics = ["recall in budget", "MRR@10", "MRR in budget", "chars", "budget", "texts"]
    groups = frame.groupby(["corpus", "language", "variant"], sort=False)
    table = groups[metrics].mean().round(3)
    table.insert(0, "questions", groups.size())
    table["seconds (median)"] = groups["seconds"].median().round(3)  # the first question also loads the models
    over = frame[frame["chars"] > frame["budget"]]
    if len(over):
        raise SystemExit(f"a variant exceeded its budget:\n{over}")
    beats = {}
    for name in VARIANTS[1:]:
        cells = [(c, lang) for c, lang, v in table.index if v == name]
        beats[name] = all(
            table.loc[(c, lang, name), m] >= table.loc[(c, lang, BASELINE), m]
            for c, lang in cells
            for m in ("recall in budget", "MRR@10")
        )
    hops = frame[frame["type"] == "multi_hop"]
    multi_hop = (
        hops.groupby(["corpus", "language", "variant"], sort=False)[["recall in budget", "chars"]].mean().round(3)
    )
    multi_hop.insert(0, "questions", hops.groupby(["corpus", "language", "variant"], sort=False).size())
    located: dict[str, dict[str, list[str]]] = {}
    for row in frame[frame["variant"] == BASELINE].to_dict("records"):
        for place in row["missed quotes at"]:
            located.setdefault(f"{row['corpus']} {row['language']}", {}).setdefault(place, []).append(
                row["question_id"]
            )
    pd.set_option("display.width", 220, "display.max_rows", 100)
    print(table.to_string())
    print("\nmulti-hop questions only:\n" + multi_hop.to_string())
    changed = misses(frame)
    for cell, values in changed.items():
        print(cell, {k: v if k == "baseline misses" else {x: len(y) for x, y in v.items()} for k, v in values.items()})
    print("where the default's top 5 miss a quote:", json.dumps(located, indent=1))
    for name, ok in beats.items():
        print(f"{name}: {'meets or beats' if ok else 'does NOT meet'} the default top 5 on recall and MRR@10 in every "
              "corpus and language, within its characters")  # fmt: skip
    save("expansion_budget", {
        "table": {" | ".join(map(str, key)): row for key, row in table.to_dict("index").items()},
        "meets or beats the default everywhere": beats,
        "multi-hop questions only": {" | ".join(map(str, key)): row for key, row in multi_hop.to_dict("index").items()},
        "recall changed against the default top 5": changed,
        "where the default's top 5 miss a quote (one entry per quote)": located,
        "load average (1 min) at start and end": [started_load, round(os.getloadavg()[0], 2)],
        "max_block_chars": MAX_BLOCK_CHARS,
    })  # fmt: skip


if __name__ == "__main__":
    main()
