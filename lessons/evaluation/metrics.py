"""Retrieval metrics against the gold set: deterministic, no LLM.

Introduced in notebook 01 (chunking); used by every notebook that compares techniques. A retrieved
chunk is *relevant* to a gold question when it contains one of the question's evidence quotes
(compared after `normalise_for_match`), so the same gold set judges any chunking strategy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lessons.text.normalise import normalise_for_match


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
