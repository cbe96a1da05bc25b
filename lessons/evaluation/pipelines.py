"""Evaluate whole RAG pipelines on one test set: retrieval metrics, LLM-judged answers, and cost.

Introduced in notebook 06 (evaluation). The pieces:

- A **pipeline** is a function `question -> PipelineResult` (answer, abstained, the chunks it
  retrieved, the chunks it answered from). `PIPELINES` names the pipelines of the earlier notebooks;
  `build_pipelines(names, resources)` makes them. The registry is `lessons.agents.pipelines` (one stage down, so
  the service serves its gated pipeline without this harness); its names are importable from here too.
- **Retrieval metrics** are deterministic (no LLM): hit@k, recall@k, MRR and nDCG from
  `lessons.evaluation.metrics`, where a chunk is relevant when it is one of the item's evidence chunks or
  contains one of its evidence quotes.
- **Answer metrics** come from the course's judges (`lessons.evaluation.judges`, the same ones notebooks 05 and
  07 use): 0/1 *factual consistency* (the answer's main claim is stated in the context it was written from) and
  0/1 *completeness* (the answer states the reference answer's key fact), each a typed verdict that copies both
  sides, then decides. A judge that fails is recorded as a failure with its cause — the row stays, its score is
  `None` and its status says why — and the table counts them. Out-of-KB questions are scored by whether the
  pipeline abstained; no judge.
- **Cost** per question: wall-clock seconds, LLM calls and tokens (answers served from the LLM cache
  are counted with the tokens they cost when first asked), and what those tokens cost on DeepSeek at
  list price. Everything except the seconds is the same on a re-run with the same inputs.
- **Two corpora, thresholds that travel**: `retrieval_rows` measures the pipelines whose ranking needs
  no chat model on every gold question (`retrieval_goals`: English recall@5, the dense baseline's misses
  removed); `best_scores` + `threshold_transfer` calibrate a cut-off (the gate's P(yes), a cross-encoder
  score, a similarity) on one corpus and measure it on the other, both ways; `findings_markdown` writes
  notebook 06's findings from those tables. The gate's thresholds come from ONE call, `gate_thresholds()`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from lessons.agents import pipelines as _registry
from lessons.core.i18n import N_, language_name, t, t_labels, t_marked
from lessons.core.plot_fonts import chinese_plots
from lessons.core.reports import mean_present
from lessons.evaluation.harness import measure
from lessons.evaluation.judges import Judgement, answer_completeness, judge_faithfulness
from lessons.evaluation.metrics import relevance, retrieval_scores
from lessons.evaluation.testset import TestItem
from lessons.transforms.qa_transform import chunk_id_of

# The pipeline registry lives one stage down, in `lessons.agents.pipelines` (the service serves it without this
# harness); notebooks 06 and 07 import its names from here.
K = _registry.K
RANK_K = _registry.RANK_K
PipelineResult = _registry.PipelineResult
Pipeline = _registry.Pipeline
Resources = _registry.Resources
PipelineSpec = _registry.PipelineSpec
PIPELINES = _registry.PIPELINES
UnknownPipeline = _registry.UnknownPipeline
check_pipeline_names = _registry.check_pipeline_names
build_pipelines = _registry.build_pipelines
build_dense = _registry.build_dense
build_hybrid = _registry.build_hybrid
build_hybrid_rerank = _registry.build_hybrid_rerank
build_qa_hybrid = _registry.build_qa_hybrid
build_grading_loop_pipeline = _registry.build_grading_loop_pipeline
build_three_agents = _registry.build_three_agents
build_routed_rerank = _registry.build_routed_rerank
build_graph_rerank = _registry.build_graph_rerank
build_raptor_rerank = _registry.build_raptor_rerank
answer_from = _registry.answer_from
gate_thresholds = _registry.gate_thresholds
gate_grader = _registry.gate_grader
gate_retrieval = _registry.gate_retrieval

# --- the gate's thresholds in reports, and calibrated on the documents evaluated ---------------------


def _describe(threshold: Any) -> str:
    cross_encoder, p_yes = (
        (threshold.cross_encoder, threshold.p_yes) if hasattr(threshold, "p_yes") else (0.0, threshold)
    )
    return f"cross-encoder ≥ {cross_encoder:.2f}, P(yes) ≥ {p_yes:.2f}" if cross_encoder else f"P(yes) ≥ {p_yes:.2f}"


def threshold_note(documents: str, at_home: bool = False) -> str:
    """One plain sentence for a report: which thresholds the gate used on `documents`, and from where.

    `at_home`: `documents` is the corpus the thresholds were calibrated on (the course corpus)."""
    thresholds, source = _registry.gate_thresholds()
    values = "; ".join(f"{language} {_describe(value)}" for language, value in sorted(thresholds.items()))
    source = t_marked(source)  # marked with N_() where it is defined (DEFAULT_GATE_SOURCE)
    if at_home:
        return t("gate thresholds ({values}) are from {source}: calibrated on these documents' gold questions, so its "
                 "abstention on them is in-sample", values=values, source=source)  # fmt: skip
    return t("gate thresholds ({values}) are from {source}, NOT calibrated on {documents}: measure them on questions "
             "from these documents before trusting its abstentions ([gate] calibrate = N in the evaluation config does "
             "it)", values=values, source=source, documents=documents)  # fmt: skip


@dataclass(frozen=True)
class GateCalibration:
    """The gate's P(yes) thresholds calibrated on questions from the documents being evaluated (the evaluation
    command's `[gate] calibrate`): `thresholds` is ready for `Resources.gate_thresholds`; `calibrated` holds the
    languages calibrated here (the others keep `gate_thresholds()` and the note says so); `scores` is each
    calibration question's best P(yes) (`best_scores`)."""

    thresholds: dict[str, Any]
    calibrated: dict[str, float]
    scores: pd.DataFrame
    in_sample: bool  # calibrated on the very questions that are evaluated (no others were available)

    def facts(self, documents: str) -> dict[str, Any]:
        """What the thresholds were calibrated on, as JSON (`save_gate` stores it beside them): the documents, per
        language the questions (answerable, out-of-KB) or that the language kept the course's thresholds."""
        languages = {}
        for language in sorted(self.thresholds):
            part = self.scores[self.scores["language"] == language]
            languages[language] = (
                {"answerable": int(part["answerable"].sum()), "out_of_kb": int((~part["answerable"]).sum())}
                if language in self.calibrated
                else "not calibrated: the course corpus's thresholds (no out-of-KB question in this language)"
            )
        return {"documents": documents, "in_sample": self.in_sample, "languages": languages}

    def note(self, documents: str) -> str:
        """One plain sentence for the report: which thresholds, calibrated on what, and what they refuse there."""
        source = t_marked(_registry.gate_thresholds()[1])
        parts = []
        for language, threshold in sorted(self.thresholds.items()):
            part = self.scores[self.scores["language"] == language]
            inside, outside = part[part["answerable"]], part[~part["answerable"]]
            if language in self.calibrated:
                refused = float((outside["score"] < self.calibrated[language]).mean())
                kept = float((inside["score"] >= self.calibrated[language]).mean()) if len(inside) else float("nan")
                counts = {"language": language, "threshold": _describe(threshold), "n": len(part),
                          "answerable": len(inside), "out_of_kb": len(outside), "kept": kept, "refused": refused}  # fmt: skip
                parts.append(
                    t("{language} {threshold} calibrated on {n} of the evaluated questions themselves (in-sample: the "
                      "abstention measured on them is optimistic — leave questions outside [sample] to calibrate on "
                      "others) ({answerable} answerable, {out_of_kb} out-of-KB; answers {kept:.0%} of those "
                      "answerable in round one, refuses {refused:.0%} of those out-of-KB)", **counts)
                    if self.in_sample
                    else t("{language} {threshold} calibrated on {n} of these documents' questions that are not "
                           "evaluated here ({answerable} answerable, {out_of_kb} out-of-KB; answers {kept:.0%} of "
                           "those answerable in round one, refuses {refused:.0%} of those out-of-KB)", **counts)
                )  # fmt: skip
            else:
                parts.append(t("{language} {threshold} from {source}, NOT calibrated on {documents} (no {language} "
                               "out-of-KB question to calibrate on: add near misses in {language})", language=language,
                               threshold=_describe(threshold), source=source, documents=documents))  # fmt: skip
        return t("gate thresholds: {parts}", parts="; ".join(parts))


def calibrate_gate_on(
    items: Sequence[TestItem], r: Resources, *, in_sample: bool = False, min_abstention: float = 0.95
) -> GateCalibration:
    """Calibrate the grading loop's gate on `items` (questions from the documents of `r`, some out-of-KB):
    each item's best P(yes) over the chunks the loop grades in round one (`gate_retrieval`: one chat-model
    call per chunk), then per language the lowest threshold that still refuses `min_abstention` of its
    out-of-KB items (`calibrate_cut_offs`, as notebook 06's section 8). P(yes) only, as the course's own
    gate (`lessons.agents.grading.DEFAULT_GATE`, calibrated by benchmarks/bench_gate.py)."""
    from lessons.agents.grading import GateThresholds

    if not any(not item.answerable for item in items):
        raise ValueError(
            "calibrating the gate needs out-of-KB questions (near misses: questions about these documents that "
            "they do not answer) — abstention cannot be measured without them"
        )
    scores = best_scores(gate_grader(r.llm).p_yes, gate_retrieval(r), items, progress=r.progress,
                         desc=t("gate calibration"))  # fmt: skip
    chosen = {language: value for language, value in calibrate_cut_offs(scores, min_abstention).items()
              if value is not None}  # fmt: skip
    defaults, _ = _registry.gate_thresholds()
    thresholds = {**defaults, **{language: GateThresholds(0.0, value) for language, value in chosen.items()}}
    return GateCalibration(thresholds, chosen, scores, in_sample)


def build_measured(names: Sequence[str], resources: Resources) -> tuple[dict[str, Pipeline], pd.DataFrame]:
    """`build_pipelines`, each pipeline's build measured (`measure`): the pipelines, and one row per pipeline with
    the seconds, chat-model calls and tokens it cost before the first question — the entity graph and the summary
    tree are built with the chat model (`PipelineSpec.built_with_model`), the others with none."""
    pipelines, rows = {}, []
    for name in check_pipeline_names(names):
        measured = measure(lambda name=name: PIPELINES[name].build(resources))
        pipelines[name] = measured.value
        rows.append({"pipeline": name, **measured.cost()})
    return pipelines, pd.DataFrame(rows).set_index("pipeline")


CACHE_LOOKUPS = (N_("asked again (itself left out)"), N_("paraphrase"), N_("near"))  # the kinds of lookup
CACHE_COUNTS = ["lookups", "paraphrases", "answers served", "right", "wrong", "hit rate", "wrong share"]


def cache_lookups(
    cache: Any,
    lookups: Sequence[Mapping[str, Any]],
    same: Mapping[str, set[str]],
    guards: Sequence[bool | None] = (None,),
    progress: bool = False,
) -> pd.DataFrame:
    """Each lookup asked of a semantic cache (`lessons.retrieval.semantic_cache.SemanticCache`, filled): one row per
    lookup and guard setting (`guards`: None is the cache's own, False and True ask without and with it), the
    lookup's own fields (`{"question", "of", "kind"}` and any others, such as its id; `"leave_out": True` asks a
    stored question as if it were new) and what the cache did: its nearest stored question's id and similarity,
    whether it serves that answer (similarity at least the cache's threshold) and whether the answer is right (the
    kind is not "near" and the stored question quotes the same evidence as `of`: `same`, from
    `answer_equivalents`). The one place a cache's lookups are decided: `cache_counts` counts these rows."""
    from tqdm.auto import tqdm

    rows = []
    for lookup in tqdm(lookups, desc=t("lookups"), disable=not progress, leave=False):
        for guard in guards:
            hit = cache.nearest(lookup["question"], guard=guard, leave_out=bool(lookup.get("leave_out", False)))
            found = hit.metadata.get("id") if hit else None
            rows.append({**lookup, "guard": cache.guard if guard is None else guard, "nearest": found,
                         "similarity": hit.similarity if hit else -1.0,
                         "served": hit is not None and hit.similarity >= cache.threshold,
                         "correct": lookup["kind"] != "near" and found in same.get(lookup["of"], ())})  # fmt: skip
    empty = ["question", "of", "kind", "guard", "nearest", "similarity", "served", "correct"]  # no lookup
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=empty)


def cache_counts(found: pd.DataFrame) -> dict[str, Any]:
    """Rows of `cache_lookups` counted (`CACHE_COUNTS`): lookups, paraphrases among them, answers served, right and
    wrong, the hit rate (right answers per paraphrase) and the wrong share (wrong answers per answer served)."""
    served = found[found["served"]]
    right = int(served["correct"].sum())
    paraphrases = int((found["kind"] == "paraphrase").sum())
    counts = [len(found), paraphrases, len(served), right, len(served) - right,
              right / max(paraphrases, 1), (len(served) - right) / max(len(served), 1)]  # fmt: skip
    return dict(zip(CACHE_COUNTS, counts, strict=True))


def cache_rows(
    items: Sequence[TestItem],
    cache: Any,
    lookups: Sequence[Mapping[str, Any]] = (),
) -> pd.DataFrame:
    """A semantic cache in front of a pipeline, measured by the answers it serves, not by what it retrieves.

    Every answerable item is stored in `cache` (`lessons.retrieval.semantic_cache.SemanticCache`, empty, its
    calibrated threshold) with its reference answer, standing in for the pipeline's answer: what is measured is
    WHOSE answer is served. Then each item is asked again as if it were new (itself left out: any answer served is
    another question's — wrong unless the two quote the same evidence, `answer_equivalents`), and each of `lookups`
    (`{"question", "of", "kind"}` as in `data/eval/cache_fresh.jsonl`: a paraphrase of the stored question `of`, or a
    near question that asks something else) whose `of` was stored. One row per kind (`CACHE_LOOKUPS`): lookups,
    answers served, right, wrong — each answer served is one answer step (a chat-model call) saved. The lookups are
    decided by `cache_lookups` and counted by `cache_counts`, as notebook 09 does."""
    from lessons.retrieval.semantic_cache import answer_equivalents

    stored = [item for item in items if item.answerable]
    cache.store_many((item.question, item.reference, {"id": item.id}) for item in stored)
    same = answer_equivalents(stored)
    asked = [{"kind": CACHE_LOOKUPS[0], "question": item.question, "of": item.id, "leave_out": True}
             for item in stored]  # fmt: skip
    asked += [{"kind": row["kind"], "question": row["question"], "of": row["of"]} for row in lookups
              if row["of"] in same]  # fmt: skip
    found = cache_lookups(cache, asked, same)
    columns = ["lookups", "answers served", "right", "wrong"]
    counted = {
        kind: cache_counts(found[found["kind"] == kind]) for kind in CACHE_LOOKUPS if (found["kind"] == kind).any()
    }
    rows = [{"lookup": kind, **{column: counts[column] for column in columns}} for kind, counts in counted.items()]
    return pd.DataFrame(rows, columns=["lookup", *columns])


# --- retrieval metrics (the bundle of one ranked list: lessons.evaluation.metrics.retrieval_scores) ---


def relevant_counts(chunks: Sequence[Document], items: Sequence[TestItem]) -> dict[str, int]:
    """How many chunks of the index are relevant to each item (the ideal ranking of nDCG)."""
    return {item.id: sum(relevance(chunks, item)) for item in items if item.answerable}


def judge_answer(judge: BaseChatModel, item: TestItem, result: PipelineResult) -> tuple[Judgement, Judgement]:
    """(factual consistency, completeness) of one answer, by the course's judges (`lessons.evaluation.judges`).
    Abstentions make no claim: they are not judged for consistency, and score 0 for completeness on an
    answerable question (`answer_completeness`)."""
    if result.abstained:
        faithful = Judgement(None, "abstained", "no answer, nothing to check")
    elif result.context:
        faithful = judge_faithfulness(judge, item.question, result.answer, result.context)
    else:
        faithful = Judgement(0, "judged", "answered without any context")
    if not item.answerable:
        return faithful, Judgement(None, "not_applicable", "out-of-KB question")
    return faithful, answer_completeness(judge, item.question, item.reference, result.answer, result.abstained)


# --- running an evaluation ---------------------------------------------------------------------------


def evaluate_item(
    name: str, pipeline: Pipeline, item: TestItem, judge: BaseChatModel, n_relevant: int | None,
    k: int = K, rank_k: int = RANK_K,
) -> dict[str, Any]:  # fmt: skip
    """One row: the pipeline's answer, retrieval metrics, the two judgements, time, calls, tokens, cost."""
    row: dict[str, Any] = {"pipeline": name, "question_id": item.id, "language": item.language, "type": item.type,
                           "origin": item.origin, "answerable": item.answerable}  # fmt: skip
    # one failing question must not lose the run (its error is recorded); a crashed local server stops it
    measured = measure(lambda: pipeline(item.question), catch=True)
    error, seconds, meter = measured.error, measured.seconds, measured.meter
    result = measured.value if error is None else PipelineResult("", False, [], [])
    row.update({"answer": result.answer, "abstained": result.abstained if error is None else None,
                "retrieved_ids": [chunk_id_of(d) for d in result.retrieved],
                "context_ids": [chunk_id_of(d) for d in result.context], "error": error})  # fmt: skip
    scores = (
        retrieval_scores(result.retrieved, item, n_relevant, k, rank_k) if item.answerable and error is None else {}
    )
    for metric in (f"hit@{k}", f"recall@{k}", f"MRR@{rank_k}", f"nDCG@{rank_k}"):
        row[metric] = scores.get(metric)
    if error is not None:
        faithful = complete = Judgement(None, "pipeline_error", cause=error)
    else:
        faithful, complete = judge_answer(judge, item, result)
    for prefix, judgement in (("faithful", faithful), ("complete", complete)):
        row.update({prefix: judgement.score, f"{prefix}_status": judgement.status,
                    f"{prefix}_reason": judgement.reason, f"{prefix}_cause": judgement.cause})  # fmt: skip
    row["correct_abstention"] = None if item.answerable or error is not None else int(result.abstained)
    row.update({
        "seconds": seconds,
        **meter.counts(),
        "deepseek_usd": meter.totals.list_price_usd,
    })  # fmt: skip
    return row


def evaluate(
    pipelines: Mapping[str, Pipeline],
    items: Sequence[TestItem],
    judge: BaseChatModel,
    chunks: Sequence[Document],
    *,
    k: int = K,
    rank_k: int = RANK_K,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per (pipeline, question), pipelines in the given order, questions in test-set order.

    The cost columns count the pipeline's own calls, not the judge's: what the pipeline costs in use.
    """
    from tqdm.auto import tqdm

    counts = relevant_counts(chunks, items)
    pairs = [(name, item) for name in pipelines for item in items]
    rows = [
        evaluate_item(name, pipelines[name], item, judge, counts.get(item.id), k, rank_k)
        for name, item in tqdm(pairs, desc=t("pipeline × question"), disable=not progress)
    ]
    return pd.DataFrame(rows)


_mean = mean_present  # the mean of a column's present values (`lessons.core.reports`)


def compare(rows: pd.DataFrame, k: int = K, rank_k: int = RANK_K, timing: bool = True) -> pd.DataFrame:
    """One row per pipeline. Retrieval metrics and completeness over answerable questions; factual
    consistency over answers that were judged; abstention over out-of-KB questions; judge failures
    and pipeline errors counted; cost per question. `timing=False` leaves out the seconds (the only
    column that changes on a re-run)."""
    table = []
    for name, group in rows.groupby("pipeline", sort=False):
        in_kb, out_kb = group[group["answerable"]], group[~group["answerable"]]
        answered = in_kb[in_kb["abstained"].eq(False)]  # not True, not None (a pipeline error)
        row: dict[str, Any] = {"pipeline": name, "questions": len(group)}
        for metric in (f"hit@{k}", f"recall@{k}", f"MRR@{rank_k}", f"nDCG@{rank_k}"):
            row[metric] = _mean(in_kb[metric])
        row.update({
            "answered (in-KB)": len(answered) / len(in_kb) if len(in_kb) else None,
            "factual consistency": _mean(group["faithful"]),
            "judged answers": int((group["faithful_status"] == "judged").sum()),
            "completeness": _mean(in_kb["complete"]),
            "abstained (out-of-KB)": _mean(out_kb["correct_abstention"]) if len(out_kb) else None,
            "judge failures": int(((group["faithful_status"] == "judge_failed") | (group["complete_status"] == "judge_failed")).sum()),
            "pipeline errors": int(group["error"].notna().sum()),
            "LLM calls/question": group["llm_calls"].mean(),
            "tokens/question": group["tokens"].mean(),
            "DeepSeek $/question": group["deepseek_usd"].mean(),
        })  # fmt: skip
        if timing:
            row["s/question"] = group["seconds"].mean()
        table.append(row)
    return pd.DataFrame(table).set_index("pipeline")


def judge_failures(rows: pd.DataFrame) -> pd.DataFrame:
    """Every judge failure: pipeline, question, which judge, and the cause."""
    failures = []
    for _, r in rows.iterrows():
        for prefix, judge_name in (("faithful", "factual consistency"), ("complete", "completeness")):
            if r[f"{prefix}_status"] == "judge_failed":
                failures.append({"pipeline": r["pipeline"], "question_id": r["question_id"], "judge": judge_name,
                                 "cause": r[f"{prefix}_cause"]})  # fmt: skip
    return pd.DataFrame(failures, columns=["pipeline", "question_id", "judge", "cause"])


# --- saving ------------------------------------------------------------------------------------------


def json_ready(value: Any) -> Any:
    """Results as JSON can hold them (`results_json`, the nightly job's rows): NaN becomes null (explicit), numpy scalars become Python numbers."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return json_ready(value.item())
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def results_json(rows: pd.DataFrame, table: pd.DataFrame, items: Sequence[TestItem], meta: Mapping[str, Any]) -> dict:
    """Everything a report needs, JSON-ready: settings, test set, per-question rows, the table."""
    return json_ready({
        "meta": dict(meta),
        "test_set": [i.test_set_line() for i in items],
        "table": [{"pipeline": name, **values} for name, values in table.to_dict(orient="index").items()],
        "rows": rows.to_dict(orient="records"),
    })  # fmt: skip


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 0.01 and value else f"{value:.2f}"
    return str(value)


def markdown_table(table: pd.DataFrame) -> str:
    """A pipe table of `compare`'s output, pipelines as rows (`DataFrame.to_markdown`, cells shown as `_fmt` does).

    Introduced in notebook 06 (evaluation)."""
    counts = {"questions", "judged answers", "judge failures", "pipeline errors"}
    shown = table.astype(object).apply(
        lambda column: column.map(
            lambda v: str(int(v)) if column.name in counts and v is not None and not pd.isna(v) else _fmt(v)
        )
    )
    shown = t_labels(shown.rename_axis("pipeline"), [
        "pipeline", "questions", "answered (in-KB)", "factual consistency", "judged answers", "completeness",
        "abstained (out-of-KB)", "judge failures", "pipeline errors", "LLM calls/question", "tokens/question",
        "DeepSeek $/question", "s/question",
    ])  # fmt: skip
    return shown.to_markdown(tablefmt="pipe", disable_numparse=True)


# The report's settings (`meta`), by the English key results.json keeps: the label report.md shows (through t()).
REPORT_LABELS = {
    "model": N_("model"), "vector store": N_("vector store"), "documents": N_("documents"), "corpus": N_("corpus"),
    "chunks": N_("chunks"), "questions": N_("question source"), "pipelines": N_("pipelines"),
    "files skipped": N_("files skipped"), "reranker": N_("reranker"), "gate thresholds": N_("gate thresholds"),
    "build cost": N_("build cost"), "semantic cache": N_("semantic cache"),
}  # fmt: skip


def report_markdown(rows: pd.DataFrame, table: pd.DataFrame, items: Sequence[TestItem], meta: Mapping[str, Any]) -> str:
    """The human-readable report: settings, the comparison table, judge failures, pipeline errors."""
    from lessons.evaluation.testset import describe

    lines = [t("# RAG evaluation report"), ""]
    labels = {key: t_marked(REPORT_LABELS[key]) if key in REPORT_LABELS else key for key in meta}
    lines += [f"- **{labels[key]}**: {value}" for key, value in meta.items()]
    test_set = t_labels(pd.DataFrame([{key: _fmt(value) for key, value in describe(items).items()}]), [
        "questions", "English", "Chinese", "out-of-KB", "needs 2+ chunks", "question chars (mean)",
        "reference chars (mean)", "evidence chunks per question",
    ])  # fmt: skip
    lines += ["", t("## Test set"), "", test_set.to_markdown(index=False, tablefmt="pipe", disable_numparse=True), ""]
    lines += [t("## Pipelines compared"), "", markdown_table(table), "",
              t("Retrieval metrics and completeness: answerable questions. Factual consistency: answers that were "
                "judged (abstentions make no claim). Abstained: out-of-KB questions. Cost columns count the pipeline's "
                "own calls (not the judge's); DeepSeek $ is the list price of those tokens."), ""]  # fmt: skip
    failures = judge_failures(rows)
    lines += [t("## Judge failures"), ""]
    lines += [f"- {r.pipeline} · {r.question_id} · {r.judge}: {r.cause}" for r in failures.itertuples()] or [t("None.")]
    errors = rows[rows["error"].notna()]
    lines += ["", t("## Pipeline errors"), ""]
    lines += [f"- {r.pipeline} · {r.question_id}: {r.error}" for r in errors.itertuples()] or [t("None.")]
    return "\n".join(lines) + "\n"


def save_report(
    out_dir: str | Path, rows: pd.DataFrame, table: pd.DataFrame, items: Sequence[TestItem], meta: Mapping[str, Any]
) -> tuple[Path, Path]:
    """Write `results.json` and `report.md` into `out_dir`; returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "results.json", out / "report.md"
    json_path.write_text(
        json.dumps(results_json(rows, table, items, meta), ensure_ascii=False, indent=1), encoding="utf-8"
    )
    md_path.write_text(report_markdown(rows, table, items, meta), encoding="utf-8")
    return json_path, md_path


def plot_comparison(table: pd.DataFrame, k: int = K, rank_k: int = RANK_K):
    """Three panels: retrieval metrics, answer metrics, and cost per question (LLM calls, seconds)."""
    import matplotlib.pyplot as plt

    chinese_plots()
    fig, axes = plt.subplots(1, 3, figsize=(16, 5), gridspec_kw={"width_ratios": [1.2, 1.2, 1]})
    retrieval = [f"hit@{k}", f"recall@{k}", f"MRR@{rank_k}", f"nDCG@{rank_k}"]
    answers = [
        c for c in ("answered (in-KB)", "factual consistency", "completeness", "abstained (out-of-KB)") if c in table
    ]
    table[retrieval].astype(float).plot.barh(ax=axes[0], xlim=(0, 1.05), title=t("Retrieval (answerable questions)"))
    table[answers].astype(float).plot.barh(ax=axes[1], xlim=(0, 1.05), title=t("Answers (LLM judge)"))
    cost = table[["LLM calls/question"] + (["s/question"] if "s/question" in table else [])].astype(float)
    cost.plot.barh(ax=axes[2], title=t("Cost per question"))
    for ax in axes:
        ax.invert_yaxis()
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    for ax in axes[1:]:
        ax.set_ylabel("")
    fig.tight_layout()
    return fig


# --- retrieval on every question, two corpora, thresholds that travel ---------------------------------

GOAL_K = 5  # the depth of the course's retrieval goals (recall@5)


def retrieval_only_names(names: Sequence[str]) -> list[str]:
    """The pipelines among `names` whose ranking needs no chat model per question (their retrieval is measured on every
    question); the graph and the summary tree (`PipelineSpec.built_with_model`) cost chat-model calls once, to build."""
    return [name for name in check_pipeline_names(names) if PIPELINES[name].retrieval is not None]


def retrieval_rows(
    names: Sequence[str], resources: Resources, items: Sequence[TestItem], *, k: int = GOAL_K,
    corpus: str = "", progress: bool = True,
) -> pd.DataFrame:  # fmt: skip
    """One row per (pipeline, answerable item): hit@k, recall@k, MRR, nDCG and milliseconds, for every
    pipeline in `names` whose ranking needs no chat model — free to run on a whole gold set.

    Introduced in notebook 06 (evaluation)."""
    from tqdm.auto import tqdm

    answerable = [i for i in items if i.answerable]
    counts = relevant_counts(resources.chunks, answerable)
    rows = []
    for name in retrieval_only_names(names):
        retrieve = PIPELINES[name].retrieval(resources)
        for item in tqdm(answerable, desc=f"{corpus} {name}".strip(), disable=not progress, leave=False):
            started = time.perf_counter()
            ranked = retrieve(item.question)
            ms = 1000 * (time.perf_counter() - started)
            rows.append({"corpus": corpus, "pipeline": name, "question_id": item.id, "language": item.language,
                         "type": item.type, **retrieval_scores(ranked, item, counts[item.id], k, resources.rank_k),
                         "ms": ms})  # fmt: skip
    return pd.DataFrame(rows)


def retrieval_goals(
    rows: pd.DataFrame, baseline: str = "dense", k: int = GOAL_K, english_goal: float = 0.90, misses_goal: float = 0.50
) -> pd.DataFrame:
    """Per corpus and pipeline: English recall@k, and the share of the baseline's recall@k misses it removes
    (a miss is the missing share of a question's evidence, summed over both languages), with the goals met or not."""
    recall = f"recall@{k}"
    out = []
    for corpus, group in rows.groupby("corpus", sort=False):
        base = group[group["pipeline"] == baseline]
        base_misses = float((1 - base[recall]).sum())
        for name, part in group.groupby("pipeline", sort=False):
            english = part[part["language"] == "en"][recall]
            misses = float((1 - part[recall]).sum())
            removed = (base_misses - misses) / base_misses if base_misses else None
            en = float(english.mean()) if len(english) else None
            out.append({"corpus": corpus, "pipeline": name, "questions": len(part), f"English {recall}": en,
                        f"{recall}": float(part[recall].mean()), "misses": misses,
                        f"{baseline}'s misses removed": removed,
                        "English goal met": en is not None and en >= english_goal,
                        "misses goal met": removed is not None and removed >= misses_goal})  # fmt: skip
    return pd.DataFrame(out)


def transfer_table(
    rows: pd.DataFrame, default: str = "hybrid+rerank", reference: str = "hybrid", k: int = GOAL_K, rank_k: int = RANK_K
) -> pd.DataFrame:
    """Does the default reranked pipeline hold on every knowledge base, in every language? Per corpus and language
    (rows of `retrieval_rows`): `reference` and `default` on recall@k and MRR@rank_k, the difference, and whether the
    default scores at least as well on both. Introduced in notebook 06 (evaluation)."""
    metrics = [f"recall@{k}", f"MRR@{rank_k}"]
    missing = {default, reference} - set(rows["pipeline"])
    if missing:
        raise ValueError(
            f"transfer_table: no rows for pipeline(s) {sorted(missing)} — measure them with retrieval_rows"
        )
    means = rows[rows["pipeline"].isin([default, reference])].pivot_table(
        index=["corpus", "language"], columns="pipeline", values=metrics, sort=False
    )
    columns = {("questions", ""): rows[rows["pipeline"] == default].groupby(["corpus", "language"], sort=False).size()}
    for metric in metrics:
        columns[(metric, reference)] = means[(metric, reference)]
        columns[(metric, default)] = means[(metric, default)]
        columns[(metric, "Δ")] = means[(metric, default)] - means[(metric, reference)]
    columns[(f"{default} ≥ {reference}", "")] = pd.Series(
        [all(means.loc[key, (m, default)] >= means.loc[key, (m, reference)] for m in metrics) for key in means.index],
        index=means.index,
    )
    return pd.DataFrame(columns)


def technique_lines(retrieval: pd.DataFrame, reference: str = "hybrid+rerank", k: int = GOAL_K) -> list[str]:
    """Findings lines for notebook 09's techniques among `retrieval`'s pipelines (`retrieval_rows`), each against the
    pipeline it is built around (`reference`), per corpus on the same questions: recall@k and MRR, and how many
    questions it raised or lowered — where a technique does not help shows as none raised.

    Introduced in notebook 06 (evaluation)."""
    recall, mrr = f"recall@{k}", f"MRR@{RANK_K}"
    names = [name for name in dict.fromkeys(retrieval["pipeline"]) if PIPELINES[name].notebook == "09"]
    lines = []
    for corpus, group in retrieval.groupby("corpus", sort=False):
        base = group[group["pipeline"] == reference].set_index("question_id")
        for name in names:
            part = group[group["pipeline"] == name].set_index("question_id")
            if base.empty or part.empty:
                continue
            delta = (part[recall] - base[recall].reindex(part.index)).dropna()
            lines.append(t(
                "- **{name} on {corpus}** ({n} questions): {recall} {value:.3f} against {reference}'s {base:.3f}, "
                "MRR {value_mrr:.3f} against {base_mrr:.3f}; raised on {raised}, lowered on {lowered}.",
                name=name, corpus=corpus, n=len(part), recall=recall, value=part[recall].mean(), reference=reference,
                base=base[recall].mean(), value_mrr=part[mrr].mean(), base_mrr=base[mrr].mean(),
                raised=int((delta > 0).sum()), lowered=int((delta < 0).sum())))  # fmt: skip
    return lines


def gate_sample(sample: Sequence[TestItem], pool: Sequence[TestItem], n: int, seed: int = 0) -> list[TestItem]:
    """The `n` questions a calibrated decision is measured on (notebook 06): the judged `sample` first (its
    chat-model calls are cached), then a seeded draw from the rest of `pool`, balanced between languages,
    with a third of it out-of-KB — a threshold's abstention cannot be measured on answerable questions only,
    and the pool's own order (the gold file's) starts with English answerable questions."""
    from lessons.ingest.questions import balanced_sample

    chosen = list(sample[:n])
    more = n - len(chosen)
    if more > 0:
        rest = [item for item in pool if item not in chosen]
        chosen += balanced_sample(rest, more - more // 3, seed, n_out_of_kb=more // 3)
    return chosen


def best_scores(
    score: Callable[[str, list[Document]], list[float]],
    retrieve: Callable[[str], list[Document]],
    items: Sequence[TestItem],
    *,
    progress: bool = True,
    desc: str = "",
) -> pd.DataFrame:
    """Each item's best score among the documents `retrieve` finds for it (answered when it reaches a
    threshold): the input of every calibrated decision. `score(question, documents)` is the gate's P(yes),
    a cross-encoder, or anything else that scores documents."""
    from tqdm.auto import tqdm

    rows = []
    for item in tqdm(items, desc=desc or t("best scores"), disable=not progress, leave=False):
        documents = list(retrieve(item.question))
        values = score(item.question, documents) if documents else []
        rows.append({"question_id": item.id, "language": item.language, "answerable": item.answerable,
                     "score": max(values) if len(values) else 0.0})  # fmt: skip
    return pd.DataFrame(rows)


def calibrate_cut_offs(
    frame: pd.DataFrame, min_abstention: float = 0.95, per_language: bool = True
) -> dict[str, float | None]:
    """Per language (or for "all"), the lowest cut-off on `frame`'s scores (`best_scores`) that still refuses
    `min_abstention` of its out-of-KB questions (`lessons.agents.grading.choose_threshold`); None for a
    language without out-of-KB questions — a threshold there would be a guess."""
    from lessons.agents.grading import choose_threshold

    groups = frame.groupby("language") if per_language else [("all", frame)]
    chosen = {}
    for language, part in groups:
        inside, outside = part[part["answerable"]]["score"], part[~part["answerable"]]["score"]
        chosen[language] = choose_threshold(list(inside), list(outside), min_abstention) if len(outside) else None
    return chosen


def threshold_transfer(
    scores: Mapping[str, pd.DataFrame], min_abstention: float = 0.95, per_language: bool = True
) -> pd.DataFrame:
    """Calibrate a cut-off on each corpus (`lessons.agents.grading.choose_threshold`, per language when asked) and
    measure it on every corpus, the home one included: how many answerable questions it keeps and how many
    out-of-KB ones it refuses. A threshold that travels keeps both shares when it leaves home."""

    def apply(frame: pd.DataFrame, chosen: Mapping[str, float | None]) -> pd.Series:
        keys = frame["language"] if per_language else pd.Series("all", index=frame.index)
        return pd.Series([None if chosen.get(key) is None else score >= chosen[key]
                          for key, score in zip(keys, frame["score"])], index=frame.index)  # fmt: skip

    rows = []
    for home, home_frame in scores.items():
        chosen = calibrate_cut_offs(home_frame, min_abstention, per_language)
        for away, frame in scores.items():
            answered = apply(frame, chosen)
            known = answered.notna()
            inside, outside = known & frame["answerable"], known & ~frame["answerable"]
            rows.append({
                "calibrated on": home, "measured on": away,
                "thresholds": ", ".join(f"{key} {value:.3f}" if value is not None else f"{key} –" for key, value in sorted(chosen.items())),
                "answerable kept": float(answered[inside].astype(bool).mean()) if inside.any() else None,
                "out-of-KB refused": float((~answered[outside].astype(bool)).mean()) if outside.any() else None,
                "questions": int(known.sum()),
            })  # fmt: skip
    return pd.DataFrame(rows)


def plot_corpora(retrieval: pd.DataFrame, answers: Mapping[str, pd.DataFrame], k: int = GOAL_K):
    """One figure, the corpora side by side for every pipeline: recall@k on every answerable gold question
    (no LLM), completeness and out-of-KB abstention on the judged sample, and LLM calls per question."""
    import matplotlib.pyplot as plt

    chinese_plots()
    panels = [("recall", t("recall@{k} (every gold question)", k=k)), ("complete", t("completeness (judged sample)")),
              ("abstain", t("abstained on out-of-KB (sample)")), ("calls", t("LLM calls / question"))]  # fmt: skip
    data = {"recall": retrieval.pivot_table(index="pipeline", columns="corpus", values=f"recall@{k}", sort=False)}
    for key, column in (
        ("complete", "completeness"),
        ("abstain", "abstained (out-of-KB)"),
        ("calls", "LLM calls/question"),
    ):
        data[key] = pd.DataFrame({corpus: table[column] for corpus, table in answers.items()}).astype(float)
    fig, axes = plt.subplots(1, len(panels), figsize=(18, 4.8))
    for ax, (key, title) in zip(axes, panels):
        frame = data[key]
        frame.plot.barh(ax=ax, title=title, xlim=(0, 1.05) if key != "calls" else None, legend=False)
        ax.invert_yaxis()
        ax.set_ylabel("")
    axes[0].legend(title=t("corpus"), fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def _share_text(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.2f}"


def _ranks(values: pd.Series) -> pd.Series:
    return values.rank(ascending=False, method="min").astype(int)


def _leaders(values: pd.Series, best: float) -> str:
    """Every pipeline that reaches `best` (a tie names them all, not the first one)."""
    return ", ".join(name for name, value in values.items() if value == best)


def _completeness_ranks(answers: Mapping[str, pd.DataFrame]) -> list[str]:
    """Findings line: do the judged pipelines keep their completeness order from one corpus to the other?"""
    if len(answers) != 2:
        return []
    a, b = answers
    complete = pd.DataFrame({corpus: answers[corpus]["completeness"].astype(float) for corpus in (a, b)}).dropna()
    if len(complete) < 2:
        return []
    ranks = complete.apply(_ranks)
    moved = [name for name in ranks.index if ranks.loc[name, a] != ranks.loc[name, b]]
    if not moved:
        return [t("- **Completeness on the judged sample**: the same order on both corpora ({order}).",
                  order=" ≥ ".join(complete[a].sort_values(ascending=False, kind="stable").index))]  # fmt: skip
    moves = "; ".join(
        t(
            "{name} {rank_a} on {a} ({value_a:.2f}) → {rank_b} on {b} ({value_b:.2f})",
            name=name,
            rank_a=ranks.loc[name, a],
            a=a,
            value_a=complete.loc[name, a],
            rank_b=ranks.loc[name, b],
            b=b,
            value_b=complete.loc[name, b],
        )
        for name in moved
    )
    return [t("- **Completeness ranks change on the judged sample** (small: read them with the retrieval ranks above): "
              "{moves}.", moves=moves)]  # fmt: skip


def _transfer_lines(
    retrieval: pd.DataFrame, k: int, default: str = "hybrid+rerank", reference: str = "hybrid"
) -> list[str]:
    """Findings line: is the reranked default at least as good as plain hybrid in every corpus and language?"""
    if not {default, reference} <= set(retrieval["pipeline"]):
        return []
    table = transfer_table(retrieval, default, reference, k=k)
    held = table[(f"{default} ≥ {reference}", "")]
    below = "; ".join(
        t(
            "{corpus} {language}: recall@{k} {recall:+.3f}, MRR {mrr:+.3f}",
            corpus=corpus,
            language=language,
            k=k,
            recall=table.loc[(corpus, language), (f"recall@{k}", "Δ")],
            mrr=table.loc[(corpus, language), (f"MRR@{RANK_K}", "Δ")],
        )
        for corpus, language in table.index[~held.to_numpy()]
    )
    return [
        t(
            "- **{default} against plain {reference}**: at least as good on recall@{k} and MRR in {held} of {cells} "
            "corpus × language groups{below}.",
            default=default,
            reference=reference,
            k=k,
            held=int(held.sum()),
            cells=len(table),
            below=t(" — below in {groups}", groups=below) if below else "",
        )
    ]


def findings_markdown(
    retrieval: pd.DataFrame,
    goals: pd.DataFrame,
    answers: Mapping[str, pd.DataFrame],
    transfer: Mapping[str, pd.DataFrame],
    k: int = GOAL_K,
    baseline: str = "dense",
) -> str:
    """The notebook's findings as Markdown, every figure and every direction taken from the run's tables:
    the goals (met or missed), which pipelines change rank between the corpora and in which language the
    change comes from, the answer sample, and how far each calibrated cut-off travels.

    Introduced in notebook 06 (evaluation)."""
    recall = f"recall@{k}"
    corpora = list(dict.fromkeys(retrieval["corpus"]))
    lines = []
    for corpus in corpora:
        part = goals[goals["corpus"] == corpus].set_index("pipeline")
        best = part[f"English {recall}"].astype(float).idxmax()
        row = part.loc[best]
        removed = row[f"{baseline}'s misses removed"]
        lines.append(t(
            "- **Goals on {corpus}** ({n} answerable gold questions, no model calls): the best English {recall} is "
            "{best}'s {value:.2f} — goal 0.90 {english_met}; it removes {removed} of {baseline}'s {recall} misses over both "
            "languages — goal 50% {misses_met}.", corpus=corpus, n=int(row["questions"]), recall=recall, best=best,
            value=row[f"English {recall}"], english_met=t("met") if row["English goal met"] else t("missed"),
            removed=f"{removed:.0%}" if removed is not None and not pd.isna(removed) else t("none"), baseline=baseline,
            misses_met=t("met") if row["misses goal met"] else t("missed")))  # fmt: skip
    lines += _transfer_lines(retrieval, k)
    if len(corpora) == 2:
        means = retrieval.pivot_table(index="pipeline", columns="corpus", values=recall, sort=False)
        ranks = means.apply(_ranks)
        by_language = retrieval.pivot_table(index="pipeline", columns=["corpus", "language"], values=recall, sort=False)
        a, b = corpora
        moved = [name for name in ranks.index if ranks.loc[name, a] != ranks.loc[name, b]]
        if not moved:
            lines.append(
                t(
                    "- **Rank by {recall}**: the same order on both corpora ({order}).",
                    recall=recall,
                    order=" > ".join(means[a].sort_values(ascending=False).index),
                )
            )
        for name in moved:
            deltas = {
                lang: by_language.loc[name, (b, lang)] - by_language.loc[name, (a, lang)]
                for lang in ("en", "zh")
                if (a, lang) in by_language.columns and (b, lang) in by_language.columns
            }
            lead = max(deltas, key=lambda lang: abs(deltas[lang])) if deltas else None
            why = (
                t(
                    "; the move comes mostly from {language} questions ({recall} {before:.2f} on {a} → {after:.2f} on {b})",
                    language=language_name(lead),
                    recall=recall,
                    before=by_language.loc[name, (a, lead)],
                    a=a,
                    after=by_language.loc[name, (b, lead)],
                    b=b,
                )
                if lead
                else ""
            )
            lines.append(t("- **{name} changes rank**: {rank_a} on {a} ({mean_a:.2f}), {rank_b} on {b} ({mean_b:.2f}){why}.",
                           name=name, rank_a=ranks.loc[name, a], a=a, mean_a=means.loc[name, a], rank_b=ranks.loc[name, b],
                           b=b, mean_b=means.loc[name, b], why=why))  # fmt: skip
        shares = (
            retrieval.drop_duplicates(["corpus", "question_id"])
            .groupby("corpus")["language"]
            .apply(lambda s: (s == "zh").mean())
        )
        lines.append(t("- Chinese questions are {share_a:.0%} of {a}'s answerable gold set and {share_b:.0%} of {b}'s: a "
                       "technique that helps one language more moves with that share.", share_a=shares[a], a=a,
                       share_b=shares[b], b=b))  # fmt: skip
    for corpus, table in answers.items():
        complete = table["completeness"].astype(float)
        abstain = table["abstained (out-of-KB)"].astype(float)
        calls = table["LLM calls/question"].astype(float)
        lines.append(
            t(
                "- **Answers on {corpus}** ({n} questions, read directions, not decimals): most complete {complete} "
                "({complete_value:.2f}), ",
                corpus=corpus,
                n=int(table["questions"].max()),
                complete=_leaders(complete, complete.max()),
                complete_value=complete.max(),
            )
            + (
                t(
                    "best abstention {abstain} ({abstain_value:.2f}), ",
                    abstain=_leaders(abstain, abstain.max()),
                    abstain_value=abstain.max(),
                )
                if abstain.notna().any()
                else ""
            )
            + t(
                "cheapest {cheapest} ({cheapest_calls:.1f} calls/question), dearest {dearest} ({dearest_calls:.1f}).",
                cheapest=_leaders(calls, calls.min()),
                cheapest_calls=calls.min(),
                dearest=_leaders(calls, calls.max()),
                dearest_calls=calls.max(),
            )
        )
    lines += _completeness_ranks(answers)
    for what, frame in transfer.items():
        for _, row in frame[frame["calibrated on"] != frame["measured on"]].iterrows():
            home = frame[
                (frame["calibrated on"] == row["calibrated on"]) & (frame["measured on"] == row["calibrated on"])
            ].iloc[0]
            lines.append(t("- **{what}, calibrated on {home}** ({thresholds}): at home it keeps {kept} of answerable questions "
                           "and refuses {refused} of out-of-KB ones; on {away} {away_kept} and {away_refused}.", what=what,
                           home=row["calibrated on"], thresholds=row["thresholds"], kept=_share_text(home["answerable kept"]),
                           refused=_share_text(home["out-of-KB refused"]), away=row["measured on"],
                           away_kept=_share_text(row["answerable kept"]),
                           away_refused=_share_text(row["out-of-KB refused"])))  # fmt: skip
    return "\n".join(lines)
