"""Measure retrieval techniques on the gold set: quality, latency and LLM cost per question.

Introduced in notebook 02 (retrieval tricks). A `Technique` is a name and a Runnable from a
question to ranked `Document`s. `evaluate_techniques` runs each one on its questions and returns
one row per (technique, question): hit@5, evidence recall@5, MRR@10, nDCG@10, characters in the
top 5, seconds, and the LLM calls and tokens the question cost — counted by a `lessons.core.usage.UsageMeter`
passed as a callback, which also counts answers served from the LLM cache (with the tokens they
cost when first asked), so a re-run reports the same cost. `summarise` turns the rows into one
table against the baseline, always compared on the same questions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from lessons.core.i18n import LANGUAGES, N_, language_name, t, t_marked
from lessons.core.usage import UsageMeter
from lessons.evaluation.metrics import relevance_labels, retrieval_scores
from lessons.ingest.corpus import GoldQuestion
from lessons.retrieval.context_expansion import MAX_BLOCK_CHARS, ChunkNeighbours, ContextExpansionRetriever
from lessons.retrieval.document_processor import hybrid_over, reranked_hybrid
from lessons.retrieval.query_transform import hyde_retriever, multi_query_retriever, step_back_retriever
from lessons.retrieval.rerank import llm_reranker
from lessons.retrieval.retrievers import bm25_retriever, dense_retriever, small_to_big_retriever

HIT_K = 5
RANK_K = 10
METRICS = [f"hit@{HIT_K}", f"recall@{HIT_K}", f"MRR@{RANK_K}", f"nDCG@{RANK_K}"]
BASELINE = N_("dense (baseline)")
# Hybrid fused from each retriever's top `candidates`: the candidates every reranker of notebook 02 reads, in the deep
# fusion's own order (the rerankers read them with plain hybrid's order first, `document_processor.plain_first`,
# which is also what the Chinese route keeps: the deep order ranks worse on the package READMEs).
DEEP_HYBRID = N_("hybrid (RRF), the rerankers' candidates")
# The chat-model rerankers' fair comparison: the cross-encoder over the same top N (a name made from a template).
CROSS_ENCODER_TOP = N_("hybrid → cross-encoder (top {n})")


@dataclass(frozen=True)
class Technique:
    """A named retrieval technique: a Runnable from question to ranked documents."""

    name: str
    retriever: Runnable
    uses_llm: bool = False
    sample_only: bool = False  # evaluated on the chat model's sample only (a matched comparison for it)

    @property
    def on_sample(self) -> bool:
        """Whether the technique runs on the sample (it calls the chat model, or is compared with one that does)."""
        return self.uses_llm or self.sample_only


# Names made from a template: a number or a tokenizer's name fills the placeholder (the tokenizer's through the catalogue).
NAME_TEMPLATES = (CROSS_ENCODER_TOP, N_("BM25 · {tokenizer}"))


def _template_pattern(template: str) -> re.Pattern:
    parts = re.split(r"\{(\w+)\}", template)  # literal, name, literal, name, …, literal
    return re.compile("".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts)))


_TEMPLATE_PATTERNS = tuple((template, _template_pattern(template)) for template in NAME_TEMPLATES)  # built once


def technique_label(name: str) -> str:
    """A technique's name as the reader sees it: the English name (the key the code filters on) in the course language.

    Introduced in notebook 02 (retrieval tricks): its tables, plot axes, side-by-side columns and explorer show every
    name through it (notebook 09 its graph table). Each name is marked with `N_()` where it is defined, so the Chinese
    uses the glossary's term (稠密检索（基线）, 混合检索（RRF）); acronyms and proper names stay (BM25, HyDE, ColBERT). A
    name made from a template in `NAME_TEMPLATES` is shown through the template; a name the catalogue lacks is an
    error in Chinese, as for `t()`.
    """
    for template, pattern in _TEMPLATE_PATTERNS:
        match = pattern.fullmatch(name)
        if match:
            values = {key: value if value.isdigit() else t_marked(value) for key, value in match.groupdict().items()}
            return t_marked(template, **values)
    return t_marked(name)


# For `t_labels(table, keys, values=TECHNIQUE_LABELS)`: the columns or index levels that hold technique names.
TECHNIQUE_LABELS = {"technique": technique_label, "compared with": technique_label}


def build_techniques(
    chunks: Sequence[Document],
    store: Chroma,
    llm: BaseChatModel | None = None,
    *,
    k: int = RANK_K,
    candidates: int = 20,
    llm_candidates: int = 10,
    hits: int = 10,
    max_block_chars: int = MAX_BLOCK_CHARS,
    colbert: bool = True,
) -> list[Technique]:
    """Every technique of notebook 02, baseline first; the ones that call the chat model only when `llm` is given.

    The cross-encoder reranks the hybrid top `candidates`; the chat model, far slower per passage,
    reranks the top `llm_candidates` (those alone: one call each, even when `k` is larger), and "hybrid →
    cross-encoder (top N)" reranks the same N so the two relevance judges can be compared on equal terms. The best `hits` are expanded with neighbours into
    blocks of at most `max_block_chars` characters.
    """
    from lessons.retrieval.cross_encoder import ColbertScorer, OnnxCrossEncoder
    from lessons.retrieval.rerank import (
        ContextualListwiseReranker,
        LanguageRoutedReranker,
        NeighbourContextReranker,
        ScoredCrossEncoderReranker,
        cross_encoder_reranker,
        default_reranker,
    )

    def hybrid(size: int):
        return hybrid_over(chunks, store, k=size, candidates=size)

    def reranked(size: int, compressor):
        return reranked_hybrid(chunks, store, k=k, candidates=size, reranker=compressor)

    def judged(compressor):  # exactly the hybrid top `llm_candidates`, reordered: one chat-model call per candidate
        return reranked_hybrid(chunks, store, k=llm_candidates, candidates=llm_candidates, reranker=compressor)

    neighbours = ChunkNeighbours(chunks)
    model = OnnxCrossEncoder()
    routed = default_reranker(top_n=k)
    routed_with_neighbours = LanguageRoutedReranker(
        routes={
            language: NeighbourContextReranker(
                model=model, top_n=k, neighbours=neighbours, max_chars=max_block_chars, with_header=True
            )
            for language in routed.routes
        },
        top_n=k,
        cross_lingual=routed.cross_lingual,  # the default's route for questions none of whose candidates share their language
    )
    techniques = [
        Technique(BASELINE, dense_retriever(store, k)),
        Technique(N_("BM25"), bm25_retriever(chunks, k)),
        Technique(N_("hybrid (RRF)"), hybrid(k)),
        Technique(DEEP_HYBRID, hybrid_over(chunks, store, k=k, candidates=candidates)),  # the list the rerankers reorder
        Technique(N_("small-to-big"), small_to_big_retriever(chunks)),
        Technique(N_("hybrid + neighbours"), ContextExpansionRetriever(
            first_stage=hybrid(k), neighbours=neighbours, hits=hits, max_block_chars=max_block_chars)),
        Technique(N_("hybrid → cross-encoder"), reranked(candidates, cross_encoder_reranker(k, model))),
        Technique(N_("hybrid → cross-encoder, by language"), reranked(candidates, routed)),
        Technique(N_("hybrid → cross-encoder with neighbours"), reranked(candidates, routed_with_neighbours)),
        Technique(N_("context expansion + cross-encoder"), ContextExpansionRetriever(
            first_stage=hybrid(candidates), neighbours=neighbours, reranker=routed, block_reranker=routed,
            hits=hits, max_block_chars=max_block_chars)),
    ]  # fmt: skip
    if colbert:
        colbert_reranker = ScoredCrossEncoderReranker(model=ColbertScorer(), top_n=k, with_header=True)
        techniques.append(Technique(N_("hybrid → ColBERT"), reranked(candidates, colbert_reranker)))
    if llm is None:
        return techniques
    return techniques + [
        Technique(CROSS_ENCODER_TOP.format(n=llm_candidates), judged(cross_encoder_reranker(k, model)),
                  sample_only=True),
        Technique(N_("hybrid → LLM rerank"), judged(llm_reranker(llm, top_n=k, max_chars=max_block_chars)),
                  uses_llm=True),
        Technique(N_("hybrid → contextual LLM rerank"), judged(ContextualListwiseReranker(llm=llm, top_n=k)),
                  uses_llm=True),
        Technique(N_("HyDE"), hyde_retriever(llm, dense_retriever(store, k)), uses_llm=True),
        Technique(N_("multi-query"), multi_query_retriever(llm, dense_retriever(store, k)), uses_llm=True),
        Technique(N_("step-back"), step_back_retriever(llm, dense_retriever(store, k)), uses_llm=True),
    ]  # fmt: skip


def relevant_chunk_counts(chunks: Sequence[Document], questions: Iterable[GoldQuestion]) -> dict[str, int]:
    """For each question, how many chunks of the index contain one of its evidence quotes (for nDCG)."""
    texts = [chunk.page_content for chunk in chunks]
    return {q.id: sum(relevance_labels(texts, q.evidence)) for q in questions}


def score_ranking(documents: Sequence[Document], question: GoldQuestion, n_relevant: int | None) -> dict[str, float]:
    """The retrieval metrics of one ranked list for one gold question (`metrics.retrieval_scores`), and its size."""
    return {
        **retrieval_scores(documents, question, n_relevant, k=HIT_K, rank_k=RANK_K),
        f"chars@{HIT_K}": float(sum(len(d.page_content) for d in documents[:HIT_K])),
    }


def score_technique(technique: Technique, question: GoldQuestion, n_relevant: int | None) -> dict[str, Any]:
    """Run one technique on one question: its metrics, time and LLM cost (an error becomes an empty list)."""
    meter = UsageMeter()
    started = time.perf_counter()
    error = None
    try:
        documents = technique.retriever.invoke(question.question, config={"callbacks": [meter]})
    except Exception as exc:  # noqa: BLE001 - one failing question must not lose a long evaluation run; it is recorded
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
    pairs = [(technique, q) for technique in techniques for q in questions]
    rows = [
        score_technique(technique, question, relevant_counts.get(question.id))
        for technique, question in tqdm(pairs, desc=t("technique × question"), disable=not progress)
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
    results: pd.DataFrame,
    metric: str,
    by: str,
    groups: Sequence[str] | None = None,
    question_ids: Iterable[str] | None = None,
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
    label = language_name if by == "language" else str  # a language as the reader names it: "English" / "英文"
    table.columns = [f"{label(group)} (n={questions[group]})" for group in table.columns]
    return table.reindex(results["technique"].drop_duplicates())


def LLM_REFERENCES(llm_candidates: int = 10) -> dict[str, str]:
    """Each chat-model technique and the technique without the chat model it should beat (notebook 02)."""
    return {
        "hybrid → LLM rerank": CROSS_ENCODER_TOP.format(n=llm_candidates),
        "hybrid → contextual LLM rerank": "hybrid → LLM rerank",
        "HyDE": BASELINE,
        "multi-query": BASELINE,
        "step-back": BASELINE,
    }


def gains_over(comparison: pd.DataFrame, references: Mapping[str, str]) -> pd.DataFrame:
    """What each technique adds over its reference, on the same questions (differences of means)."""
    present = {name: ref for name, ref in references.items() if name in comparison.index and ref in comparison.index}
    gains = pd.DataFrame(
        {name: comparison.loc[name, METRICS] - comparison.loc[ref, METRICS] for name, ref in present.items()}
    ).T
    gains.index.name = "technique"
    gains.insert(0, "compared with", list(present.values()))
    gains["LLM calls/query"] = comparison.loc[list(present), "LLM calls/query"]
    gains["ms/query"] = comparison.loc[list(present), "ms/query"]
    return gains


def misses_removed(
    rows: pd.DataFrame, technique: str, baseline: str = BASELINE, metric: str = f"recall@{HIT_K}"
) -> float | None:
    """The share of the baseline's misses (1 − recall per question, summed) that `technique` removes."""
    base = rows[rows["technique"] == baseline].set_index("question_id")[metric]
    other = rows[rows["technique"] == technique].set_index("question_id")[metric].reindex(base.index)
    missed = (1 - base).sum()
    return None if missed == 0 else float(((1 - base) - (1 - other)).sum() / missed)


def retrieval_findings(
    cheap_rows: pd.DataFrame,
    gains: pd.DataFrame,
    *,
    baseline: str = BASELINE,
    llm_sample: int,
    mrr_claim: float = 0.15,
    english_goal: float = 0.90,
    misses_goal: float = 0.50,
) -> str:
    """Notebook 02's findings as Markdown, every figure read from the run's tables (introduced in notebook 02).

    `cheap_rows`: one row per (technique, question) for the techniques without a chat model, every question;
    `gains`: `gains_over` of the chat-model techniques on the sample of `llm_sample` questions.
    """
    from lessons.core.prose import direction, num, pct, signed

    def mean(technique, metric, language=None):
        rows = cheap_rows[cheap_rows["technique"] == technique]
        if language:
            rows = rows[rows["language"] == language]
        return float(rows[metric].mean()) if len(rows) else float("nan")

    names = list(dict.fromkeys(cheap_rows["technique"]))
    n = cheap_rows["question_id"].nunique()
    lines = []
    hybrid, ce, routed = "hybrid (RRF)", "hybrid → cross-encoder", "hybrid → cross-encoder, by language"
    d_recall = mean(hybrid, "recall@5") - mean(baseline, "recall@5")
    lines.append(
        t(
            "- **Hybrid search** {verb} dense retrieval on recall@5 over all {n} questions ({hybrid} vs {dense}; "
            "MRR@10 {hybrid_mrr} vs {dense_mrr}), with no model call.",
            verb=direction(d_recall, t("beats"), t("trails"), t("matches"), 0.005),
            n=n,
            hybrid=num(mean(hybrid, "recall@5"), 3),
            dense=num(mean(baseline, "recall@5"), 3),
            hybrid_mrr=num(mean(hybrid, "MRR@10"), 3),
            dense_mrr=num(mean(baseline, "MRR@10"), 3),
        )
    )
    if ce in names:
        for language, label in ((code, language_name(code)) for code in LANGUAGES):
            base_mrr, ce_mrr = mean(hybrid, "MRR@10", language), mean(ce, "MRR@10", language)
            relative = (ce_mrr - base_mrr) / base_mrr if base_mrr else float("nan")
            lines.append(
                t(
                    "- **Cross-encoder rerank, {label} questions:** MRR@10 {before} → {after} ({relative}% relative; the design "
                    "write-ups claim +{claim} for BGE-Reranker-v2 — {met} here), recall@5 {recall_before} → {recall_after}.",
                    label=label,
                    before=num(base_mrr, 3),
                    after=num(ce_mrr, 3),
                    relative=signed(relative * 100, 1),
                    claim=pct(mrr_claim),
                    met=t("met") if relative >= mrr_claim else t("not met"),
                    recall_before=num(mean(hybrid, "recall@5", language), 3),
                    recall_after=num(mean(ce, "recall@5", language), 3),
                )
            )
            if language == "en" and DEEP_HYBRID in names:
                deep_mrr = mean(DEEP_HYBRID, "MRR@10", "en")
                lines.append(
                    t(
                        "- **Part of that gain is depth.** The rerankers reorder a deeper fusion (each retriever's top "
                        "candidates, not its top 10): in its fused order that list already gives English MRR@10 {deep} "
                        "against hybrid's {base}. Over the list it actually reorders, the cross-encoder adds {relative}% "
                        "relative on English questions.",
                        deep=num(deep_mrr, 3),
                        base=num(mean(hybrid, "MRR@10", "en"), 3),
                        relative=signed((ce_mrr - deep_mrr) / deep_mrr * 100 if deep_mrr else float("nan"), 1),
                    )
                )
        zh_drop = mean(ce, "recall@5", "zh") - mean(hybrid, "recall@5", "zh")
        if routed in names:
            lines.append(
                t(
                    "- **Training data decides where a reranker works.** On Chinese questions the English cross-encoder "
                    "{verb} {delta} recall@5 against the hybrid order; routed by language (the cross-encoder for English, the "
                    "fused order for Chinese) the pipeline keeps {english} English and {chinese} Chinese recall@5.",
                    verb=direction(zh_drop, t("adds"), t("costs"), t("changes"), 0.005),
                    delta=signed(zh_drop),
                    english=num(mean(routed, "recall@5", "en"), 3),
                    chinese=num(mean(routed, "recall@5", "zh"), 3),
                )
            )
    if ce in names and routed in names:
        lines.append(fusion_finding(cheap_rows, alone=ce, fused=routed, reference=hybrid))
    contextual = "hybrid → cross-encoder with neighbours"
    if contextual in names and routed in names:
        delta = mean(contextual, "MRR@10") - mean(routed, "MRR@10")
        lines.append(
            t(
                "- **Contextual rerank with the cross-encoder** (each candidate scored with its neighbours) {verb} "
                "the pointwise rerank: MRR@10 {contextual} vs {pointwise}.",
                verb=direction(delta, t("improves on"), t("falls behind"), t("matches"), 0.005),
                contextual=num(mean(contextual, "MRR@10"), 3),
                pointwise=num(mean(routed, "MRR@10"), 3),
            )
        )
    widened = [t for t in ("hybrid + neighbours", "context expansion + cross-encoder") if t in names]
    for technique in widened:
        ratio = mean(technique, "chars@5") / mean(baseline, "chars@5")
        more_text = t(": part of any gain is simply more text for the generator to read.") if ratio > 1.1 else t(".")
        lines.append(
            t(
                "- **{technique}**: recall@5 {recall} against the baseline's {base_recall}, with {ratio:.1f}× the "
                "baseline's characters in the top 5 ({chars:,.0f} vs {base_chars:,.0f}){more_text}",
                technique=technique_label(technique),
                recall=num(mean(technique, "recall@5"), 3),
                base_recall=num(mean(baseline, "recall@5"), 3),
                ratio=ratio,
                chars=mean(technique, "chars@5"),
                base_chars=mean(baseline, "chars@5"),
                more_text=more_text,
            )
        )
    if "hybrid → ColBERT" in names and routed in names:
        delta = mean("hybrid → ColBERT", "MRR@10", "en") - mean(ce, "MRR@10", "en")
        lines.append(
            t(
                "- **Late interaction (ColBERT)** {verb} the cross-encoder on English MRR@10 ({colbert} vs "
                "{cross_encoder}).",
                verb=direction(delta, t("beats"), t("trails"), t("matches"), 0.005),
                colbert=num(mean("hybrid → ColBERT", "MRR@10", "en"), 3),
                cross_encoder=num(mean(ce, "MRR@10", "en"), 3),
            )
        )
    for name, row in gains.iterrows():
        d_mrr, d_rec = row["MRR@10"], row["recall@5"]
        lines.append(
            t(
                "- **{name}** vs {reference} on the {n} sampled questions: recall@5 {recall}, MRR@10 {mrr} — it "
                "{verb}, at {calls:.1f} chat-model calls per question (on so few questions one question moves a "
                "mean by up to {step:.2f}).",
                name=technique_label(name),
                reference=technique_label(row["compared with"]),
                n=llm_sample,
                recall=signed(d_rec),
                mrr=signed(d_mrr),
                verb=direction(d_mrr + d_rec, t("helps"), t("hurts"), t("changes little"), 0.05),
                calls=row["LLM calls/query"],
                step=1 / max(llm_sample, 1),
            )
        )
    candidates = [t for t in names if t != baseline]
    budget = [t for t in candidates if mean(t, "chars@5") <= 1.2 * mean(baseline, "chars@5")]
    for label, pool in (
        (t("The best pipeline without a chat model by recall@5"), candidates),
        (t("At the baseline's amount of text (top-5 characters within 1.2×), the best"), budget),
    ):
        if not pool:
            continue
        best = max(pool, key=lambda t: mean(t, "recall@5"))
        english = mean(best, "recall@5", "en")
        removed = misses_removed(cheap_rows, best, baseline)
        lines.append(
            t(
                "- **Goals.** {label} is **{best}**: English recall@5 {english} (goal ≥ {english_goal}: {english_met}); it "
                "removes {removed} of the dense baseline's recall@5 misses over both languages (goal ≥ {misses_goal}: "
                "{misses_met}).",
                label=label,
                best=technique_label(best),
                english=num(english, 3),
                english_goal=num(english_goal, 2),
                english_met=t("met") if english >= english_goal else t("missed"),
                removed=pct(removed),
                misses_goal=pct(misses_goal),
                misses_met=t("met") if removed is not None and removed >= misses_goal else t("missed"),
            )
        )
    return "\n".join(lines)


def losses_to(rows: pd.DataFrame, technique: str, reference: str, metric: str = f"recall@{HIT_K}") -> int:
    """On how many questions `technique` scores below `reference` on `metric` (the questions both ran on): a reranker
    that loses to its own input shows here (introduced in notebook 02)."""
    scores = rows[rows["technique"].isin([technique, reference])].pivot_table(
        index="question_id", columns="technique", values=metric, aggfunc="first"
    )
    if technique not in scores or reference not in scores:
        return 0
    return int((scores[technique] < scores[reference]).sum())


def fusion_finding(rows: pd.DataFrame, *, alone: str, fused: str, reference: str, language: str = "en") -> str:
    """Notebook 02's finding on fusing the reranker's rank with the first stage's, `language` questions only: how often
    each order loses to plain hybrid (`reference`), and their recall@5 and MRR@10 — from the run's rows."""
    from lessons.core.prose import direction, num

    rows = rows[rows["language"] == language]

    def mean(technique: str, metric: str) -> float:
        part = rows[rows["technique"] == technique]
        return float(part[metric].mean()) if len(part) else float("nan")

    recall, mrr = f"recall@{HIT_K}", f"MRR@{RANK_K}"
    delta = mean(fused, recall) - mean(alone, recall)
    return t(
        "- **Fused with the first stage's rank, English questions:** the cross-encoder alone scores below plain hybrid "
        "on recall@5 on {alone_losses} of {n} questions, fused (the default) on {fused_losses}; recall@5 {alone_recall} "
        "alone, {fused_recall} fused (the fusion {verb} it here), MRR@10 {alone_mrr} and {fused_mrr}. The weight was "
        "chosen on two knowledge bases, not this one alone: notebook 06 shows both.",
        alone_losses=losses_to(rows, alone, reference),
        fused_losses=losses_to(rows, fused, reference),
        n=rows["question_id"].nunique(),
        alone_recall=num(mean(alone, recall), 3),
        fused_recall=num(mean(fused, recall), 3),
        verb=direction(delta, t("raises"), t("lowers"), t("keeps"), 0.0005),
        alone_mrr=num(mean(alone, mrr), 3),
        fused_mrr=num(mean(fused, mrr), 3),
    )


def graph_expansion_rows(
    model: BaseChatModel,
    chunks: Sequence[Document],
    store: Chroma,
    questions: Sequence[GoldQuestion],
    depth: int,
    *,
    k: int = 10,
    progress: Any = None,
) -> tuple[pd.DataFrame, Any]:
    """Graph expansion measured on `questions` (notebook 09: the multi-hop gold questions of one corpus) against two
    retrievers over the same first stage, the course's reranked hybrid (top `k`): the default itself, and context
    expansion of its hits (`ContextExpansionRetriever`, notebook 02: no call). The graph is built from the top `depth`
    hits of every question (`lessons.retrieval.graph_index.extraction_order`: one chat-model call per chunk, through
    the LLM cache — a chunk read before costs none); `depth=0` reads none, and graph expansion then keeps the default's
    order. One row per question: recall@5 and MRR@10 of each retriever, and how many of the graph's top 5 it brought
    in. Returns the rows and the `EntityGraph`."""
    from lessons.retrieval.graph_index import EntityGraph, GraphExpansionRetriever, extract_graph, extraction_order

    first = reranked_hybrid(chunks, store, k=k)
    hits = {q.id: first.invoke(q.question) for q in questions}
    order = extraction_order([("", ranked) for ranked in hits.values()], depth)
    graph = EntityGraph.from_extraction(extract_graph(model, [chunk for _, _, chunk in order], progress=progress))
    expansion = ContextExpansionRetriever(first_stage=first, neighbours=ChunkNeighbours(chunks), hits=k)
    graphed = GraphExpansionRetriever.over(first, graph, chunks, k=k)
    rows = []
    for q in questions:
        ranked = graphed.invoke(q.question)
        lists = {"default": hits[q.id], "context expansion": expansion.invoke(q.question), "graph expansion": ranked}
        rows.append({"id": q.id, "language": q.language,
                     **{f"{metric} · {name}": retrieval_scores(found, q)[metric]
                        for name, found in lists.items() for metric in ("recall@5", "MRR@10")},
                     "graph added to top 5": sum(1 for d in ranked[:5] if d.metadata.get("graph_entities"))})  # fmt: skip
    return pd.DataFrame(rows), graph
