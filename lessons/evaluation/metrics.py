"""Retrieval metrics against the gold set: deterministic, no LLM.

Introduced in notebook 01 (chunking); used by every notebook that compares techniques. A retrieved
chunk is *relevant* to a gold question when it contains one of the question's evidence quotes
(compared after `normalise_for_match`), so the same gold set judges any chunking strategy; a
question with no quotes (a generated one) counts its evidence chunk ids instead.

`retrieval_scores` is the one place the metric bundle of a ranked list is computed — hit@k,
recall@k, MRR and nDCG; notebooks 01, 02, 03 and 06 and the evaluation command all call it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from langchain_core.documents import Document

from lessons.ingest.questions import Question
from lessons.text.normalise import normalise_for_match
from lessons.transforms.qa_transform import chunk_id_of


def relevance_labels(texts: Sequence[str], evidence: Sequence[str]) -> list[bool]:
    """For each ranked text: does it contain at least one evidence quote?"""
    quotes = [normalise_for_match(q) for q in evidence]
    return [any(q in normalise_for_match(text) for q in quotes) for text in texts]


def quotes_found(texts: Sequence[str], evidence: Sequence[str]) -> set[int]:
    """Indexes of the evidence quotes that occur in at least one of `texts`."""
    normalised = [normalise_for_match(t) for t in texts]
    return {i for i, quote in enumerate(evidence) if any(normalise_for_match(quote) in t for t in normalised)}


def hit_at_k(labels: Sequence[bool], k: int) -> float:
    """1.0 when a relevant chunk is among the first k, else 0.0."""
    return float(any(labels[:k]))


def mrr_at_k(labels: Sequence[bool], k: int) -> float:
    """Reciprocal rank of the first relevant chunk within the first k (0.0 when none)."""
    for rank, relevant in enumerate(labels[:k], 1):
        if relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(labels: Sequence[bool], k: int, n_relevant: int | None = None) -> float:
    """Binary-gain nDCG@k; `n_relevant` is how many relevant chunks exist in the whole index."""
    dcg = sum(1.0 / math.log2(rank + 1) for rank, relevant in enumerate(labels[:k], 1) if relevant)
    ideal_count = min(k, n_relevant if n_relevant is not None else sum(labels))
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, ideal_count + 1))
    return dcg / ideal if ideal else 0.0


def evidence_recall_at_k(texts: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of a question's evidence quotes found in the first k chunks (multi-hop needs all of them)."""
    if not evidence:
        return 0.0
    return len(quotes_found(texts[:k], evidence)) / len(evidence)


def chunk_recall_at_k(ranked_ids: Sequence[str], relevant_ids: Sequence[str], k: int) -> float:
    """Share of the relevant chunk ids found among the first k ranked ids (0.0 when there are none).

    Introduced in notebook 06 (evaluation), for test sets whose evidence is a list of chunk ids.
    """
    relevant = set(relevant_ids)
    if not relevant:
        return 0.0
    return len(relevant & set(ranked_ids[:k])) / len(relevant)


def relevance(documents: Sequence[Document], question: Question) -> list[bool]:
    """For each ranked document: is it relevant to `question` — one of its evidence chunks, or does it
    contain one of its evidence quotes?"""
    by_quote = relevance_labels([d.page_content for d in documents], question.evidence)
    ids = set(question.evidence_chunk_ids)
    if not ids:
        return by_quote
    return [chunk_id_of(d) in ids or quoted for d, quoted in zip(documents, by_quote)]


def evidence_ranks(documents: Sequence[Document], question: Question) -> list[int]:
    """The ranks (1 = first) at which a ranked list holds evidence for `question` (`relevance`): where an order put
    what the reader needs. Introduced in notebook 02 (retrieval tricks)."""
    return [rank for rank, relevant in enumerate(relevance(documents, question), start=1) if relevant]


def retrieval_scores(
    documents: Sequence[Document], question: Question, n_relevant: int | None = None, k: int = 5, rank_k: int = 10
) -> dict[str, float]:
    """The retrieval metric bundle of one ranked list: hit@k, recall@k, MRR@rank_k and nDCG@rank_k.

    Recall is of the evidence quotes when the question has them (a multi-hop question needs all),
    else of its evidence chunks. `n_relevant` is how many chunks of the whole index are relevant
    (the ideal ranking of nDCG; None: the relevant ones in the list).
    """
    labels = relevance(documents, question)
    if question.evidence:
        recall = evidence_recall_at_k([d.page_content for d in documents], question.evidence, k)
    else:
        recall = chunk_recall_at_k([chunk_id_of(d) for d in documents], question.evidence_chunk_ids, k)
    return {
        f"hit@{k}": hit_at_k(labels, k),
        f"recall@{k}": recall,
        f"MRR@{rank_k}": mrr_at_k(labels, rank_k),
        f"nDCG@{rank_k}": ndcg_at_k(labels, rank_k, n_relevant),
    }
