"""Measure retrieval techniques on the gold set: quality, latency and LLM cost per question.

Introduced in notebook 02 (retrieval tricks). A `Technique` is a name and a Runnable from a
question to ranked `Document`s. `evaluate_techniques` runs each one on its questions and returns
one row per (technique, question): hit@5, evidence recall@5, MRR@10, nDCG@10, characters in the
top 5, seconds, and the LLM calls and tokens the question cost — counted by an `LLMCallMeter`
passed as a callback, which also counts answers served from the LLM cache (with the tokens they
cost when first asked), so a re-run reports the same cost. `summarise` turns the rows into one
table against the baseline, always compared on the same questions.
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from langchain_chroma import Chroma
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import LLMResult
from langchain_core.runnables import Runnable

from lessons.context_expansion import MAX_BLOCK_CHARS, ChunkNeighbours, ContextExpansionRetriever
from lessons.corpus import GoldQuestion
from lessons.metrics import evidence_recall_at_k, hit_at_k, mrr_at_k, ndcg_at_k, relevance_labels
from lessons.query_transform import hyde_retriever, multi_query_retriever, step_back_retriever
from lessons.rerank import llm_reranker
from lessons.retrieval import bm25_retriever, dense_retriever, hybrid_retriever, small_to_big_retriever
from lessons.usage import _token_usage

HIT_K = 5
RANK_K = 10
METRICS = [f"hit@{HIT_K}", f"recall@{HIT_K}", f"MRR@{RANK_K}", f"nDCG@{RANK_K}"]
BASELINE = "dense (baseline)"
BLEND_WEIGHT = 0.5  # share of the first stage's order when a reranker's order is blended with it


@dataclass(frozen=True)
class Technique:
    """A named retrieval technique: a Runnable from question to ranked documents."""

    name: str
    retriever: Runnable
    uses_llm: bool = False


class LLMCallMeter(BaseCallbackHandler):
    """Counts chat-model calls and their tokens, including answers served from the LLM cache."""

    def __init__(self):
        self.calls = self.cached_calls = self.input_tokens = self.output_tokens = 0
        self._lock = threading.Lock()

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        inputs, outputs = _token_usage(response)
        with self._lock:
            self.calls += 1
            self.cached_calls += not response.llm_output  # a cache hit carries no llm_output
            self.input_tokens += inputs
            self.output_tokens += outputs

    def counts(self) -> dict[str, int]:
        """The counts as result-table columns: llm_calls, cached_calls, input/output tokens and their sum."""
        return {"llm_calls": self.calls, "cached_calls": self.cached_calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "tokens": self.input_tokens + self.output_tokens}


def build_techniques(
    chunks: Sequence[Document],
    store: Chroma,
    llm: BaseChatModel | None = None,
    *,
    k: int = RANK_K,
    candidates: int = 20,
    hits: int = 10,
    max_block_chars: int = MAX_BLOCK_CHARS,
) -> list[Technique]:
    """Every technique of notebook 02, baseline first; the LLM-based ones only when `llm` is given.

    `candidates` first-stage results are reranked; the best `hits` are expanded with neighbours
    into blocks of at most `max_block_chars` characters. The context-expansion pipeline uses the
    blended reranker (the LLM's order fused with the incoming order) in both of its rerank stages.
    """

    def hybrid(size: int):
        return hybrid_retriever(dense_retriever(store, size), bm25_retriever(chunks, size), k=size)

    neighbours = ChunkNeighbours(chunks)
    techniques = [
        Technique(BASELINE, dense_retriever(store, k)),
        Technique("BM25", bm25_retriever(chunks, k)),
        Technique("hybrid (RRF)", hybrid(k)),
        Technique("small-to-big", small_to_big_retriever(chunks)),
        Technique("hybrid + neighbours", ContextExpansionRetriever(
            first_stage=hybrid(k), neighbours=neighbours, hits=hits, max_block_chars=max_block_chars)),
    ]  # fmt: skip
    if llm is None:
        return techniques
    reranker = llm_reranker(llm, top_n=k, max_chars=max_block_chars)
    blended = llm_reranker(llm, top_n=k, max_chars=max_block_chars, first_stage_weight=BLEND_WEIGHT)
    return techniques + [
        Technique("hybrid → LLM rerank", ContextualCompressionRetriever(
            base_retriever=hybrid(candidates), base_compressor=reranker), uses_llm=True),
        Technique("hybrid → LLM rerank, blended", ContextualCompressionRetriever(
            base_retriever=hybrid(candidates), base_compressor=blended), uses_llm=True),
        Technique("HyDE", hyde_retriever(llm, dense_retriever(store, k)), uses_llm=True),
        Technique("multi-query", multi_query_retriever(llm, dense_retriever(store, k)), uses_llm=True),
        Technique("step-back", step_back_retriever(llm, dense_retriever(store, k)), uses_llm=True),
        Technique("context expansion + rerank", ContextExpansionRetriever(
            first_stage=hybrid(candidates), neighbours=neighbours, reranker=blended, block_reranker=blended,
            hits=hits, max_block_chars=max_block_chars), uses_llm=True),
    ]  # fmt: skip


def relevant_chunk_counts(chunks: Sequence[Document], questions: Iterable[GoldQuestion]) -> dict[str, int]:
    """For each question, how many chunks of the index contain one of its evidence quotes (for nDCG)."""
    texts = [chunk.page_content for chunk in chunks]
    return {q.id: sum(relevance_labels(texts, q.evidence)) for q in questions}


def stratified_sample(
    questions: Sequence[GoldQuestion], n: int, seed: int = 0, include: Sequence[str] = ()
) -> list[GoldQuestion]:
    """`n` answerable questions, half English and half Chinese, spread over question types; seeded.

    Questions whose id is in `include` are always taken (they count towards their language's half).
    """
    rng = random.Random(seed)
    by_language: dict[str, list[GoldQuestion]] = defaultdict(list)
    for question in questions:
        if question.answerable:
            by_language[question.language].append(question)
    languages = sorted(by_language)
    sample = []
    for position, language in enumerate(languages):
        share = n // len(languages) + (1 if position < n % len(languages) else 0)
        forced = [q for q in by_language[language] if q.id in include][:share]
        rest = [q for q in by_language[language] if q not in forced]
        sample += forced + _round_robin_by_type(rest, share - len(forced), rng)
    return sample


def _round_robin_by_type(questions: list[GoldQuestion], n: int, rng: random.Random) -> list[GoldQuestion]:
    """Shuffle each question type, then take one of each type in turn until `n` are taken."""
    by_type: dict[str, list[GoldQuestion]] = defaultdict(list)
    for question in questions:
        by_type[question.type].append(question)
    for group in by_type.values():
        rng.shuffle(group)
    types = sorted(by_type)
    taken: list[GoldQuestion] = []
    while len(taken) < min(n, len(questions)):
        for kind in types:
            if by_type[kind] and len(taken) < n:
                taken.append(by_type[kind].pop())
    return taken


def score_ranking(documents: Sequence[Document], question: GoldQuestion, n_relevant: int | None) -> dict[str, float]:
    """The retrieval metrics of one ranked list for one gold question."""
    texts = [document.page_content for document in documents]
    labels = relevance_labels(texts, question.evidence)
    return {
        f"hit@{HIT_K}": hit_at_k(labels, HIT_K),
        f"recall@{HIT_K}": evidence_recall_at_k(texts, question.evidence, HIT_K),
        f"MRR@{RANK_K}": mrr_at_k(labels, RANK_K),
        f"nDCG@{RANK_K}": ndcg_at_k(labels, RANK_K, n_relevant),
        f"chars@{HIT_K}": float(sum(len(t) for t in texts[:HIT_K])),
    }


def evaluate_question(technique: Technique, question: GoldQuestion, n_relevant: int | None) -> dict[str, Any]:
    """Run one technique on one question: its metrics, time and LLM cost (an error becomes an empty list)."""
    meter = LLMCallMeter()
    started = time.perf_counter()
    error = None
    try:
        documents = technique.retriever.invoke(question.question, config={"callbacks": [meter]})
    except Exception as exc:  # one failing question must not lose a long evaluation run
        documents, error = [], f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - started
    return {
        "technique": technique.name,
        "question_id": question.id,
        "language": question.language,
        "type": question.type,
        **score_ranking(documents, question, n_relevant),
        "seconds": seconds,
        **meter.counts(),
        "error": error,
    }


def evaluate_techniques(
    techniques: Sequence[Technique],
    questions: Sequence[GoldQuestion],
    relevant_counts: Mapping[str, int] | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per (technique, question); see the module docstring for the columns."""
    from tqdm.auto import tqdm

    relevant_counts = relevant_counts or {}
    pairs = [(t, q) for t in techniques for q in questions]
    rows = [
        evaluate_question(technique, question, relevant_counts.get(question.id))
        for technique, question in tqdm(pairs, desc="technique × question", disable=not progress)
    ]
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame, baseline: str, question_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per technique: mean metrics and cost per question, and Δ against `baseline`.

    Each technique is compared with the baseline on the questions that technique ran on, so a
    technique evaluated on a sample is never compared with the baseline's score on all questions.
    """
    if question_ids is not None:
        results = results[results["question_id"].isin(set(question_ids))]
    base = results[results["technique"] == baseline].set_index("question_id")
    rows = []
    for name, group in results.groupby("technique", sort=False):
        row: dict[str, Any] = {"technique": name, "questions": len(group)}
        row.update({m: group[m].mean() for m in METRICS})
        paired = base.loc[base.index.intersection(group["question_id"])]
        row.update({f"Δ {m}": group[m].mean() - paired[m].mean() for m in METRICS})
        row.update({
            f"chars@{HIT_K}": group[f"chars@{HIT_K}"].mean(),
            "ms/query": 1000 * group["seconds"].mean(),
            "LLM calls/query": group["llm_calls"].mean(),
            "tokens/query": group["tokens"].mean(),
            "cached share": group["cached_calls"].sum() / max(group["llm_calls"].sum(), 1),
            "errors": int(group["error"].notna().sum()),
        })  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows).set_index("technique")


def breakdown(
    results: pd.DataFrame, metric: str, by: str, groups: Sequence[str] | None = None, question_ids: Iterable[str] | None = None
) -> pd.DataFrame:
    """`metric` averaged per technique and per value of `by` (e.g. language or type); n per group in the headers.

    Pass `question_ids` so every technique is averaged over the same questions.
    """
    if question_ids is not None:
        results = results[results["question_id"].isin(set(question_ids))]
    if groups is not None:
        results = results[results[by].isin(groups)]
    table = results.pivot_table(index="technique", columns=by, values=metric, aggfunc="mean", sort=False)
    questions = results.drop_duplicates("question_id").groupby(by).size()
    table.columns = [f"{group} (n={questions[group]})" for group in table.columns]
    return table.reindex(results["technique"].drop_duplicates())
