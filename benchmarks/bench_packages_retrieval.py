"""First-stage retrieval on both knowledge bases: the course's Tidewell corpus and the real package READMEs.

No chat model. Dense, BM25 and hybrid (the course's own retrievers from `lessons.retrieval`, built as
`lessons.evaluation.retrieval_evaluation.build_techniques` builds them, without its other techniques: building
those indexes notebook 02's child collection) run on every answerable gold question of each corpus four ways:
with neither fix (context headers, whole versions), with each alone, and with both (the course's path). Context headers:
a chunk is embedded and BM25-indexed with its document and section path; versions: BM25 keeps "2.14.0" as one
token (`lessons.retrieval.chunk_context`). The script writes hit@5, recall@5 and MRR@10 overall, per language
and per question type, the questions the course's hybrid misses on the packages corpus with the chunk that holds
their evidence (its size, how much of it is code, table or changelog) and where dense and BM25 rank it, and how
well the top dense similarity separates answerable from unanswerable questions on each corpus (with the best
cut-off of one corpus applied to the other).

    python benchmarks/bench_packages_retrieval.py     → benchmarks/results/packages_retrieval.json
"""

import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core.embeddings import get_embeddings
from lessons.evaluation.metrics import relevance_labels
from lessons.evaluation.retrieval_evaluation import (
    HIT_K,
    METRICS,
    RANK_K,
    Technique,
    evaluate_techniques,
    relevant_chunk_counts,
)
from lessons.ingest.corpus import GoldQuestion, load_gold
from lessons.retrieval import bm25_retriever, dense_retriever, hybrid_retriever
from lessons.retrieval.chunk_context import without_context_header
from lessons.retrieval.index import INDEX_NAMES, build_index, load_knowledge_base
from lessons.retrieval.retrievers import tokenize_bilingual, tokenize_words_bigrams

REPORTED = [m for m in METRICS if not m.startswith("nDCG")]
DEEP_K = 60  # how deep to look for the evidence chunk of a missed question
_FENCE = re.compile(r"^ {0,8}(```|~~~)", re.MULTILINE)


def code_share(text: str) -> float:
    """Share of a chunk's characters inside fenced code (an unclosed fence runs to the end of the chunk)."""
    inside, start, total = False, 0, 0
    for match in _FENCE.finditer(text):
        if inside:
            total += match.start() - start
        else:
            start = match.start()
        inside = not inside
    if inside:
        total += len(text) - start
    return round(total / max(len(text), 1), 2)


def table(results: pd.DataFrame, by: str | None = None) -> dict:
    """Mean metrics per technique (and per value of `by`), with the number of questions."""
    out = {}
    for name, group in results.groupby("technique", sort=False):
        if by is None:
            out[name] = {"questions": len(group), **{m: round(group[m].mean(), 3) for m in REPORTED}}
        else:
            out[name] = {
                str(value): {"questions": len(part), **{m: round(part[m].mean(), 3) for m in REPORTED}}
                for value, part in group.groupby(by)
            }
    return out


def rank_of_evidence(retriever, question: GoldQuestion) -> int | None:
    """1-based rank of the first chunk holding an evidence quote within the first DEEP_K, else None."""
    labels = relevance_labels([d.page_content for d in retriever.invoke(question.question)], question.evidence)
    return next((rank for rank, hit in enumerate(labels, 1) if hit), None)


def missed_questions(results, chunks, store, gold) -> list[dict]:
    """The packages questions the course's hybrid misses at 5: the evidence chunk and where each retriever ranks it."""
    by_id = {q.id: q for q in gold}
    hybrid = results[(results["technique"] == "hybrid, headers + versions") & (results[f"hit@{HIT_K}"] == 0)]
    dense_deep, bm25_deep = dense_retriever(store, DEEP_K), bm25_retriever(chunks, DEEP_K)
    rows = []
    for question_id in hybrid["question_id"]:
        question = by_id[question_id]
        holders = [c for c in chunks if any(relevance_labels([c.page_content], question.evidence))]
        first = holders[0] if holders else None
        rows.append({
            "id": question.id,
            "language": question.language,
            "type": question.type,
            "question": question.question,
            "evidence_chunks": len(holders),
            "chunk_source": first.metadata.get("source") if first else None,
            "chunk_section": first.metadata.get("section") if first else None,
            "chunk_chars": len(first.page_content) if first else None,
            "chunk_code_share": code_share(first.page_content) if first else None,
            "chunk_has_table": bool(first and re.search(r"^\|.*\|\s*$", first.page_content, re.MULTILINE)),
            "chunk_start": first.page_content[:160] if first else None,
            "dense_rank": rank_of_evidence(dense_deep, question),
            "bm25_rank": rank_of_evidence(bm25_deep, question),
        })  # fmt: skip
    return rows


def top_scores(store, gold) -> pd.DataFrame:
    """The top dense similarity of every question (answerable or not)."""
    retriever = dense_retriever(store, 1)
    return pd.DataFrame([
        {"id": q.id, "answerable": q.answerable, "language": q.language,
         "score": retriever.invoke(q.question)[0].metadata["score"]}
        for q in gold
    ])  # fmt: skip


def auc(scores: pd.DataFrame) -> float:
    """Probability that an answerable question has a higher top score than an unanswerable one."""
    positive, negative = scores[scores.answerable]["score"], scores[~scores.answerable]["score"]
    pairs = [(p > n) + 0.5 * (p == n) for p in positive for n in negative]
    return round(sum(pairs) / max(len(pairs), 1), 3)


def best_cutoff(scores: pd.DataFrame) -> float:
    """The cut-off (answer when top score >= it) with the best balanced accuracy on these questions."""
    candidates = sorted(scores["score"].unique())
    return max(candidates, key=lambda c: balanced_accuracy(scores, c))


def balanced_accuracy(scores: pd.DataFrame, cutoff: float) -> float:
    answered = scores["score"] >= cutoff
    kept = (answered & scores.answerable).sum() / max(scores.answerable.sum(), 1)
    abstained = (~answered & ~scores.answerable).sum() / max((~scores.answerable).sum(), 1)
    return round(float((kept + abstained) / 2), 3)


def cutoff_report(scores: dict[str, pd.DataFrame]) -> dict:
    """AUC per corpus, and each corpus's best cut-off measured on both corpora."""
    report = {"auc": {name: auc(frame) for name, frame in scores.items()}, "cutoffs": {}}
    for home, frame in scores.items():
        cutoff = best_cutoff(frame)
        report["cutoffs"][f"calibrated on {home}"] = {
            "cutoff": round(float(cutoff), 4),
            **{f"balanced accuracy on {name}": balanced_accuracy(other, cutoff) for name, other in scores.items()},
            **{f"answerable kept on {name}": round(float((other[other.answerable]["score"] >= cutoff).mean()), 3)
               for name, other in scores.items()},
            **{f"unanswerable refused on {name}": round(float((other[~other.answerable]["score"] < cutoff).mean()), 3)
               for name, other in scores.items()},
        }  # fmt: skip
    return report


def first_stage(name: str, chunks, store, tokenizer) -> list[Technique]:
    """Dense, BM25 and hybrid (RRF) over `chunks` and `store`, as `build_techniques` builds them, named after `name`."""
    dense, bm25 = dense_retriever(store, RANK_K), bm25_retriever(chunks, RANK_K, tokenizer=tokenizer)
    return [
        Technique(f"dense{name}", dense),
        Technique(f"BM25{name}", bm25),
        Technique(f"hybrid{name}", hybrid_retriever(dense, bm25, k=RANK_K)),
    ]


def variant_techniques(chunks, store, corpus: str) -> list[Technique]:
    """The course's path and each of its two fixes left out, so each fix is measured alone and both.

    "headers": every chunk is embedded and BM25-indexed with its document and section path (the course's chunks,
    `lessons.core.search_text`); "versions": BM25 keeps "2.14.0" as one token (`tokenize_bilingual`). "no fix" is
    the path without either fix: chunks without their header, in a collection of their own, and `tokenize_words_bigrams`.
    """
    plain = without_context_header(chunks)
    plain_store = build_index(plain, name=f"{INDEX_NAMES[corpus]}-plain")
    none = first_stage(" (no fix)", plain, plain_store, tokenize_words_bigrams)
    versions = first_stage(", versions", plain, plain_store, tokenize_bilingual)[1:]  # dense is the no-fix one
    headers = first_stage(", headers", chunks, store, tokenize_words_bigrams)
    both = first_stage(", headers + versions", chunks, store, tokenize_bilingual)[1:]
    return none + versions + headers + both


def main():
    get_embeddings()  # load the embedder before anything is timed
    summary, by_language, by_type, scores, corpora = {}, {}, {}, {}, {}
    missed = []
    for corpus in ("course", "packages"):
        chunks, store = load_knowledge_base(corpus)
        gold = load_gold(corpus=corpus)
        answerable = [q for q in gold if q.answerable]
        techniques = variant_techniques(chunks, store, corpus)
        results = evaluate_techniques(techniques, answerable, relevant_chunk_counts(chunks, answerable), progress=False)
        summary[corpus], by_language[corpus], by_type[corpus] = (
            table(results),
            table(results, "language"),
            table(results, "type"),
        )
        scores[corpus] = top_scores(store, gold)
        corpora[corpus] = {
            "chunks": len(chunks),
            "questions": len(gold),
            "answerable": len(answerable),
            "index": INDEX_NAMES[corpus],
            "chunk chars (median)": int(pd.Series([len(c.page_content) for c in chunks]).median()),
        }
        if corpus == "packages":
            missed = missed_questions(results, chunks, store, gold)
        for name, row in summary[corpus].items():
            print(f"{corpus:9} {name:28} " + "  ".join(f"{m} {row[m]:.3f}" for m in REPORTED))
    thresholds = cutoff_report(scores)
    print(thresholds)
    save("packages_retrieval", {
        "embedder": getattr(get_embeddings(), "name", type(get_embeddings()).__name__),
        "corpora": corpora,
        "overall": summary,
        "by_language": by_language,
        "by_type": by_type,
        "dense_top_score_as_answerability": thresholds,
        "packages_missed_by_hybrid_at_5": missed,
    })  # fmt: skip


if __name__ == "__main__":
    main()
