"""Does the reranked pipeline keep what its first stage got right? Both corpora, every answerable gold question, per language.

No chat model. For each question the hybrid candidates (dense and BM25, each `DEPTH` deep, fused by RRF) are
scored ONCE by the packaged cross-encoder (scores persist in the cache folder's `cross_encoder_scores.sqlite`),
then ordered many ways: the cross-encoder alone over the top N, and the reciprocal rank fusion of the
cross-encoder's rank with the first stage's rank at several first-stage weights and depths N. English
questions take the cross-encoder route, Chinese ones keep the first stage (the course's per-language routes).
Plain hybrid (each retriever's top 10, fused) and dense are the references. The packaged ColBERT
(answerai-colbert-small-v1, English) is measured as a reranker fused with the first stage, and as a third
ranked list beside the first stage and the cross-encoder.

Cross-lingual questions (most of plain hybrid's top 10 in another language than the question: the packages' Chinese
questions over English READMEs) take the cross-lingual route: the multilingual USE embedder reorders the first
stage's top D, fused with it at weight W (`lessons.retrieval.rerank.EmbeddingReranker`), measured at several D and W;
every other question keeps its language's route. Row "default (the factory)" is the course's default itself,
`lessons.retrieval.document_processor.reranked_hybrid` with `default_reranker`, run end to end. Its candidates are
plain hybrid's top 10, then the fusion of each retriever's top 20; the "plain first: top 20" rows cut the fusion of
each retriever's top 30 to 20, so a few questions get other candidates (the script prints how many score alike).

The script ends with a loud FAILED block when the course's default reranked pipeline (row "default (the factory)")
scores below plain hybrid on recall@5 or MRR@10 on either corpus or language.

The first-stage weight and depth are also chosen by leave-one-corpus-out cross-validation: the (depth, weight)
best on one corpus (mean of English recall@5 and MRR@10) is reported on the other, so the choice is not read off
the numbers it is judged by. The course corpus has no cross-lingual question: the cross-lingual route is chosen
by `--cross-lingual` over the three corpora that have such questions (below).

    nice -n 10 python benchmarks/bench_rerank_fusion.py     → benchmarks/results/rerank_fusion.json
    nice -n 10 python benchmarks/bench_rerank_fusion.py --corpus heldout   → benchmarks/results/rerank_fusion_heldout.json
    nice -n 10 python benchmarks/bench_rerank_fusion.py --corpus heldout2  → benchmarks/results/rerank_fusion_heldout2.json
        the same rows on a third corpus no setting was tuned on (benchmark-only: the READMEs of twelve other
        installed packages, benchmarks/corpora/heldout_readmes/, built by data/build_packages.py --set heldout, and
        its gold questions, benchmarks/questions/heldout_readmes_gold.jsonl, written before it was measured); it
        reports how the weights chosen by leave-one-corpus-out on the saved course/packages run score there;
        heldout2 is a fourth such corpus (twelve more READMEs, benchmarks/corpora/heldout_readmes_2/, data/build_packages.py
        --set heldout2, 24 en + 39 zh questions in benchmarks/questions/heldout_readmes_2_gold.jsonl, written blind) that
        decides the cross-lingual route; a held-out run also saves each question's scores for the rows of `PER_QUESTION`
    python benchmarks/bench_rerank_fusion.py --recheck "plain first: top 20 → CE, w=0.7"
        re-checks the saved table with another pipeline as the default (no model runs): shows the FAILED block
    nice -n 10 python benchmarks/bench_rerank_fusion.py --record-candidates [course,packages,heldout,heldout2]
        → benchmarks/results/rerank_fusion_candidates.json: for every answerable gold question of the four corpora,
        the default's 20 candidates with the cross-encoder's score, the USE cosine, the course embedder's cosine and
        dense's rank of each, where the evidence is,
        dense's top 10's evidence, the question's route and the factory's own scores (cross-encoder scores and
        embeddings come from the cache folder: a re-run is cheap)
    python benchmarks/bench_rerank_fusion.py --rules   → benchmarks/results/rerank_fusion_rules.json
        replays fusion rules (`RULES`, one or two parameters each) on those candidates without running a model
        (checking first that the replayed default equals the factory run on every cell), and chooses each route's
        rule and setting by leave-one-corpus-out over all four corpora: fit on three, scored on the fourth
    python benchmarks/bench_rerank_fusion.py --cross-lingual   → benchmarks/results/rerank_fusion_cross_lingual.json
        replays other cross-lingual routes (`CROSS_ROUTES`) on the questions the default routes cross-lingually
        (packages, heldout and heldout2 Chinese): USE at other depths and weights, dense's own order (the course
        embedder's cosine), the RRF of dense's and USE's orders, the English cross-encoder; each chosen by
        leave-one-corpus-out (fit on the other two, scored on the third), by fitting on one corpus and scoring on
        each other, and the held-out questions pooled against the current route (paired bootstrap). Measured
        7 Dec 2026 (17 + 16 + 39 questions): no route beats the current one on every held-out corpus, so the
        default is unchanged

Rows "default (the factory), w=W" run the factory end to end with `default_reranker(first_stage_weight=W)` (both its
cross-encoder and its cross-lingual route fused at W), for each W of `SWEEP` but the default's own weight
(`DEFAULT_FIRST_STAGE_WEIGHT`), which is row "default (the factory)" itself: one configuration, one row. Each is
compared question by question with plain hybrid and with the shipped default: how many questions score higher or
lower, and a paired bootstrap 95 % interval of the mean difference (few questions per cell, so a mean alone says
little). Results written before this rule also hold a row "default (the factory), w=0.2", the same numbers.
"""

import json
import random
import sys
from itertools import product
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import RESULTS, question_file, save
from data.build_packages import SETS
from lessons.chunking.strategies import cached_embeddings
from lessons.core.embeddings import get_embeddings
from lessons.core.search_text import search_text
from lessons.evaluation.metrics import quotes_found, relevance, relevance_labels, retrieval_scores
from lessons.ingest.corpus import load_gold
from lessons.retrieval.cross_encoder import ColbertScorer, OnnxCrossEncoder
from lessons.retrieval.document_processor import (
    CANDIDATES,
    RERANK_CANDIDATES,
    hybrid_over,
    plain_first,
    reranked_hybrid,
    reranked_hybrid_over,
)
from lessons.retrieval.index import build_index, chunk_knowledge_base, load_knowledge_base
from lessons.retrieval.rerank import (
    DEFAULT_FIRST_STAGE_WEIGHT,
    RELEVANCE_SCORE,
    EmbeddingReranker,
    cross_encoder_languages,
    cross_encoder_reranker,
    default_reranker,
    is_cross_lingual,
)
from lessons.retrieval.retrievers import RRF_C, dense_retriever, reciprocal_rank_fusion
from lessons.text.language import detect_language
from lessons.transforms.qa_transform import chunk_id_of

DEPTHS = (10, 20, 30)
WEIGHTS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7)
K = 10
METRICS = ["recall@5", "MRR@10"]
BASE = f"plain first: top {RERANK_CANDIDATES} → CE, w={DEFAULT_FIRST_STAGE_WEIGHT}"  # the same-language recipe
CROSS_DEPTHS, CROSS_WEIGHTS = (CANDIDATES, RERANK_CANDIDATES), (0.0, DEFAULT_FIRST_STAGE_WEIGHT, 0.3)
DEFAULT = "default (the factory)"
SWEEP = (0.0, 0.1, 0.2, 0.3)  # the factory's first-stage weights run end to end
CORPORA = ("course", "packages")
HELDOUT = "heldout"
# benchmark-only corpora: name → (folder, gold questions), each written by data/build_packages.py --set NAME (its SETS)
HELDOUT_CORPORA = {name: (folder, gold) for name, (_, folder, gold) in SETS.items() if name != "packages"}
# rows whose question-by-question scores a held-out run saves (so cells of several runs can be pooled)
PER_QUESTION = ("dense", "hybrid (plain)", f"plain first: top {RERANK_CANDIDATES} → CE, w={DEFAULT_FIRST_STAGE_WEIGHT}",
                DEFAULT)  # fmt: skip
BOOTSTRAP = 2000


def factory_name(weight: float) -> str:
    """The row of the factory run at first-stage weight `weight`: at the default's own weight, the default's row."""
    return DEFAULT if weight == DEFAULT_FIRST_STAGE_WEIGHT else f"{DEFAULT}, w={weight}"


def factory_rows() -> dict[str, float]:
    """The factory's rows run end to end, by name, with their first-stage weights: the default and each weight of
    `SWEEP` (the default's weight once, as the default's row)."""
    return {DEFAULT: DEFAULT_FIRST_STAGE_WEIGHT, **{factory_name(weight): weight for weight in SWEEP}}


def comparisons_to_make() -> list[tuple[str, str]]:
    """(row, reference) pairs compared question by question: each factory row against plain hybrid and against the
    default (the default not against itself)."""
    return [
        (name, reference) for name in factory_rows() for reference in ("hybrid (plain)", DEFAULT) if reference != name
    ]


def corpus_to_measure(corpus: str) -> tuple[list, object, list]:
    """(chunks, store, answerable gold questions) of a course corpus or of the benchmark-only held-out one, whose
    every evidence quote must be in exactly one chunk (else the question names its quote and the fix)."""
    if corpus not in HELDOUT_CORPORA:
        chunks, store = load_knowledge_base(corpus)
        return chunks, store, [q for q in load_gold(corpus=corpus) if q.answerable]
    folder, gold = HELDOUT_CORPORA[corpus]
    chunks = chunk_knowledge_base(folder=folder)
    questions = question_file(gold)
    texts = [chunk.page_content for chunk in chunks]
    for question in questions:
        for quote in question.evidence:
            if sum(relevance_labels(texts, [quote])) != 1:
                raise ValueError(
                    f"{gold.name}, {question.id}: {quote!r} is not in exactly one chunk of {folder} "
                    f"— rebuild the corpus (data/build_packages.py --set {corpus}) or quote one chunk's words"
                )
    return chunks, build_index(chunks, name=f"bench-{folder.name.replace('_', '-')}"), questions


def cross_lingual_name(depth: int, weight: float) -> str:
    return f"{BASE}; cross-lingual → USE top {depth}, w={weight}"


def fused(first: list, scores: dict[str, float], weight: float, depth: int) -> list:
    """The first stage's top `depth` reordered: RRF of the first stage's rank (`weight`) and the cross-encoder's."""
    top = first[:depth]
    by_model = sorted(top, key=lambda d: scores[d.page_content], reverse=True)
    if weight == 0:
        return by_model[:K]
    return reciprocal_rank_fusion([top, by_model], [weight, 1 - weight], id_key=None)[:K]


def pipelines(question, chunks, store, model, colbert, use, defaults) -> dict[str, list]:
    out = same_language_pipelines(question, chunks, store, model, colbert)
    candidates = plain_first(out["hybrid (plain)"], hybrid_over(chunks, store, k=RERANK_CANDIDATES,
                                                                candidates=RERANK_CANDIDATES).invoke(question.question))  # fmt: skip
    crossed = is_cross_lingual(question.question, candidates[:CANDIDATES])
    for depth in CROSS_DEPTHS:
        for weight in CROSS_WEIGHTS:
            route = EmbeddingReranker(embeddings=use, depth=depth, first_stage_weight=weight, top_n=K)
            chosen = (
                route.compress_documents(candidates[:RERANK_CANDIDATES], question.question) if crossed else out[BASE]
            )
            out[cross_lingual_name(depth, weight)] = list(chosen)
    for name, retriever in defaults.items():
        out[name] = retriever.invoke(question.question)
    return out


def read_by_cross_encoder(model, documents) -> list[str]:
    """What the factory's cross-encoder reads of each chunk (`ScoredCrossEncoderReranker.texts_to_score`: its context
    header, its tables as rows), so the recipe rows score what the default scores."""
    return cross_encoder_reranker(model=model).texts_to_score(documents)


def same_language_pipelines(question, chunks, store, model, colbert) -> dict[str, list]:
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
            raw = model.score([(question.question, text) for text in read_by_cross_encoder(model, top)])
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
    raw = model.score([(question.question, text) for text in read_by_cross_encoder(model, top)])
    by_model = [d for _, d in sorted(zip(raw, top), key=lambda pair: pair[0], reverse=True)]
    out["plain first: top 20 → ColBERT, w=0.2"] = reciprocal_rank_fusion([top, by_colbert], [0.2, 0.8], id_key=None)[:K]
    out["plain first: top 20 → CE + ColBERT + first stage"] = reciprocal_rank_fusion(
        [top, by_model, by_colbert], [0.2, 0.5, 0.3], id_key=None
    )[:K]
    return out


def default_failures(table: dict[str, dict[str, float]], default: str) -> list[str]:
    """Every (corpus, language, metric) where `default` scores below plain hybrid in the saved `table`
    ("corpus | language | pipeline" → metric → value)."""
    failures = []
    for key, row in table.items():
        corpus, language, name = key.split(" | ")
        if name != default:
            continue
        plain = table[f"{corpus} | {language} | hybrid (plain)"]
        failures += [f"{corpus}/{language} {metric}: default {row[metric]} < plain hybrid {plain[metric]}"
                     for metric in METRICS if row[metric] < plain[metric]]  # fmt: skip
    return failures


def report_failures(failures: list[str], default: str) -> None:
    if failures:
        print("\n" + "!" * 72 + f"\nFAILED: the default reranked pipeline ({default}) scores below plain hybrid:")
        print("\n".join(f"  - {line}" for line in failures) + "\n" + "!" * 72)
    else:
        print(f"\nOK: default ({default}) >= plain hybrid on recall@5 and MRR@10, both corpora, both languages")


def cross_validated(table: dict[str, dict[str, float]]) -> dict[str, dict]:
    """Leave one corpus out: the (depth, weight) of "plain first: top D → CE, w=W" with the best mean English
    recall@5 and MRR@10 on the other corpus, and what it scores on the held-out one."""
    names = sorted({k.split(" | ")[2] for k in table if k.split(" | ")[2].startswith("plain first: top ")
                    and " → CE, w=" in k and "cross-lingual" not in k})  # fmt: skip

    def merit(corpus: str, name: str) -> float:
        row = table[f"{corpus} | en | {name}"]
        return sum(row[m] for m in METRICS) / len(METRICS)

    out = {}
    for held_out in ("course", "packages"):
        tuned_on = "packages" if held_out == "course" else "course"
        chosen = max(names, key=lambda name: (merit(tuned_on, name), -names.index(name)))
        out[held_out] = {"chosen on " + tuned_on: chosen,
                         **{lang: table[f"{held_out} | {lang} | {chosen}"] for lang in ("en", "zh")},
                         "plain hybrid": {lang: table[f"{held_out} | {lang} | hybrid (plain)"] for lang in ("en", "zh")}}  # fmt: skip
    return out


def recheck(default: str) -> list[str]:
    """The FAILED check again over the saved results, with `default` in place of the course's default."""
    import json

    saved = json.loads((Path(__file__).resolve().parent / "results" / "rerank_fusion.json").read_text())
    if not any(key.endswith(f" | {default}") for key in saved["table"]):
        raise SystemExit(f"no pipeline {default!r} in benchmarks/results/rerank_fusion.json: run the benchmark first")
    failures = default_failures(saved["table"], default)
    report_failures(failures, default)
    return failures


def paired(frame: pd.DataFrame, corpus: str, language: str, name: str, reference: str) -> dict:
    """`name` against `reference`, question by question in one cell: how many score higher / lower per metric, and a
    paired bootstrap 95 % interval (fixed seed) of the mean difference."""
    cell = frame[(frame.corpus == corpus) & (frame.language == language)]
    ours, theirs = (cell[cell.pipeline == n].set_index("id")[METRICS] for n in (name, reference))
    difference = ours - theirs.loc[ours.index]
    generator = random.Random(0)
    return {"questions": len(difference),
            **{metric: mean_difference(difference[metric].tolist(), generator) for metric in METRICS}}  # fmt: skip


def mean_difference(values: list[float], generator: random.Random) -> dict:
    """Paired differences (ours - theirs, one per question): how many are above and below 0, their mean, and a
    bootstrap 95 % interval of the mean (`BOOTSTRAP` resamples drawn with `generator`)."""
    n = len(values)
    means = sorted(sum(values[generator.randrange(n)] for _ in range(n)) / n for _ in range(BOOTSTRAP))
    return {"higher": int(sum(v > 0 for v in values)), "lower": int(sum(v < 0 for v in values)),
            "mean difference": round(sum(values) / n, 3),
            "95% interval": [round(means[int(0.025 * BOOTSTRAP)], 3), round(means[int(0.975 * BOOTSTRAP) - 1], 3)]}  # fmt: skip


def loco_choices_on(table: dict[str, dict[str, float]], corpus: str) -> dict:
    """What the (depth, weight) each leave-one-corpus-out choice of the saved course/packages run picked scores on
    `corpus`."""
    saved = RESULTS / "rerank_fusion.json"
    if not saved.is_file():
        return {}
    out = {}
    for held_out, row in json.loads(saved.read_text(encoding="utf-8"))["cross_validated"].items():
        chosen = next(value for key, value in row.items() if key.startswith("chosen on "))
        out[f"{chosen} (chosen with {held_out} held out)"] = {
            language: table.get(f"{corpus} | {language} | {chosen}") for language in ("en", "zh")
        }
    return out


def main(corpora: tuple[str, ...] = CORPORA):
    model, colbert, use = OnnxCrossEncoder(), ColbertScorer(), cached_embeddings(get_embeddings("use"))
    rows = []
    for corpus in corpora:
        chunks, store, questions = corpus_to_measure(corpus)
        defaults = {
            name: reranked_hybrid(chunks, store, k=K)  # the course's default itself, as the course builds it
            if name == DEFAULT
            else reranked_hybrid(chunks, store, k=K, reranker=default_reranker(top_n=K, first_stage_weight=weight))
            for name, weight in factory_rows().items()
        }
        for question in questions:
            for name, documents in pipelines(question, chunks, store, model, colbert, use, defaults).items():
                rows.append({"corpus": corpus, "language": question.language, "pipeline": name, "id": question.id,
                             **retrieval_scores(documents, question, None, k=5, rank_k=K)})  # fmt: skip
    frame = pd.DataFrame(rows)
    table = frame.groupby(["corpus", "language", "pipeline"], sort=False)[METRICS].mean().round(3)
    pd.set_option("display.width", 200, "display.max_rows", 500)
    print(table.unstack(["corpus", "language"]).to_string())
    default = DEFAULT
    recipe = cross_lingual_name(CANDIDATES, DEFAULT_FIRST_STAGE_WEIGHT)
    same = frame[frame.pipeline == DEFAULT][METRICS].values == frame[frame.pipeline == recipe][METRICS].values
    print(f"\nthe factory's default scores as {recipe!r} on {same.all(axis=1).sum()} of {len(same)} questions")
    saved_table = {" | ".join(map(str, key)): row for key, row in table.to_dict("index").items()}
    failures = default_failures(saved_table, default)
    validated = cross_validated(saved_table) if set(CORPORA) <= set(corpora) else {}
    print("\nleave-one-corpus-out choice of depth and weight:")
    for held_out, row in validated.items():
        print(f"  {held_out}: {row}")
    counts = frame[frame.pipeline == DEFAULT].groupby(["corpus", "language"]).size()
    comparisons = {}
    for (corpus, language), n in counts.items():
        print(f"\n{corpus}/{language}, {n} questions: the factory at each first-stage weight, question by question")
        for name, reference in comparisons_to_make():
            key = f"{corpus} | {language} | {name} vs {reference}"
            comparisons[key] = paired(frame, corpus, language, name, reference)
            print(f"  {key}: {comparisons[key]}")
    held_out_choices = {corpus: loco_choices_on(saved_table, corpus) for corpus in corpora if corpus not in CORPORA}
    for corpus, choices in held_out_choices.items():
        print(f"\nthe saved run's leave-one-corpus-out choices, scored on {corpus}:")
        for name, scores in choices.items():
            print(f"  {name}: {scores}")
    misses = {}
    for corpus, part in frame.groupby("corpus"):
        means = part.groupby("pipeline")["recall@5"].mean()
        dense_miss = 1 - means["dense"]
        misses[corpus] = {name: round((value - means["dense"]) / dense_miss, 3) for name, value in means.items()}
    report_failures(failures, default)
    result = {
        "default": default,
        "failures": failures,
        "table": saved_table,
        "share_of_dense_recall_misses_removed": misses,
        "cross_validated": validated,
        "default_recipe": recipe,
        "questions": {f"{corpus} | {language}": int(n) for (corpus, language), n in counts.items()},
        "factory_by_weight_question_by_question": comparisons,
        "saved_leave_one_corpus_out_choices_scored_here": held_out_choices,
    }
    if set(corpora) & set(HELDOUT_CORPORA):
        result["per_question"] = frame[frame.pipeline.isin(PER_QUESTION)].round(4).to_dict("records")
    save("rerank_fusion" if tuple(corpora) == CORPORA else "rerank_fusion_" + "_".join(corpora), result)
    return result


# ---- stored candidates: every question's candidates with their scores, to replay fusion rules offline ----
CANDIDATE_FILE = "rerank_fusion_candidates"
ALL_CORPORA = (*CORPORA, *HELDOUT_CORPORA)


def route_of(question: str, candidates: list) -> str:
    """The default's route for `question` over its `candidates`: "cross-lingual" (the USE embedder), "cross-encoder"
    (a language the packaged cross-encoder reads) or "first stage" (the order kept), as `LanguageRoutedReranker`."""
    language = detect_language(question)
    if is_cross_lingual(question, candidates[:CANDIDATES], language=language):
        return "cross-lingual"
    return "cross-encoder" if language in cross_encoder_languages(OnnxCrossEncoder()) else "first stage"


def evidence_held(documents: list, question) -> tuple[list[bool], list[list[int]]]:
    """Each document's relevance (`relevance`) and the evidence items it holds (quote indexes, or chunk-id indexes
    for a question without quotes): what recall@5 and MRR@10 are computed from."""
    if question.evidence:
        held = [sorted(quotes_found([d.page_content], question.evidence)) for d in documents]
    else:
        ids = list(question.evidence_chunk_ids)
        held = [[ids.index(chunk_id_of(d))] if chunk_id_of(d) in ids else [] for d in documents]
    return relevance(documents, question), held


def cosines(embeddings, documents: list, text: str) -> list[float]:
    """Each document's cosine similarity to `text` as `EmbeddingReranker` computes it with `embeddings`."""
    route = EmbeddingReranker(embeddings=embeddings, depth=len(documents), first_stage_weight=0.0, top_n=len(documents))
    similarity = {d.page_content: d.metadata["score"] for d in route.compress_documents(documents, text)}
    return [float(similarity[d.page_content]) for d in documents]


def candidate_record(corpus: str, question, chunks, store, model, use, factory, dense_embeddings=None) -> dict:
    """One question's default candidates (plain hybrid's top 10 first, then the deeper fusion's, `RERANK_CANDIDATES`
    in all) with what each route scores them (the cross-encoder reading what the factory's reads; the USE cosine;
    with `dense_embeddings`, the course embedder's cosine — what dense ranks by — and each candidate's rank in dense's
    order of every chunk), their evidence, dense's top 10's evidence, and the factory's own scores (to check a replay
    against)."""
    text = question.question
    candidates = list(reranked_hybrid_over(chunks, store, K, RERANK_CANDIDATES).invoke(text))
    by_model = cross_encoder_reranker(top_n=len(candidates), model=model).compress_documents(candidates, text)
    ce = {d.page_content: d.metadata[RELEVANCE_SCORE] for d in by_model}
    dense_side = {}
    if dense_embeddings is not None:
        ranking = [d.page_content for d in dense_retriever(store, len(chunks)).invoke(text)]
        rank = {content: n for n, content in enumerate(ranking, start=1)}
        dense_side = {"dense_cosine": cosines(dense_embeddings, candidates, text),
                      "dense_rank": [rank.get(d.page_content, len(ranking) + 1) for d in candidates]}  # fmt: skip
    relevant, held = evidence_held(candidates, question)
    dense_relevant, dense_held = evidence_held(list(dense_retriever(store, K).invoke(text)), question)
    return {"corpus": corpus, "language": question.language, "id": question.id, "route": route_of(text, candidates),
            "evidence": len(question.evidence) or len(question.evidence_chunk_ids),
            "ce": [float(ce[d.page_content]) for d in candidates],
            "use": cosines(use, candidates, text), **dense_side,
            "relevant": relevant, "held": held, "dense": {"relevant": dense_relevant, "held": dense_held},
            "factory": retrieval_scores(factory.invoke(text), question, None, k=5, rank_k=K)}  # fmt: skip


def record_candidates(corpora: tuple[str, ...] = ALL_CORPORA) -> list[dict]:
    """`candidate_record` of every answerable gold question of `corpora`; saved as CANDIDATE_FILE."""
    model, use, dense = OnnxCrossEncoder(), cached_embeddings(get_embeddings("use")), cached_embeddings()
    records = []
    for corpus in corpora:
        chunks, store, questions = corpus_to_measure(corpus)
        factory = reranked_hybrid(chunks, store, k=K)
        records += [candidate_record(corpus, q, chunks, store, model, use, factory, dense) for q in questions]
        print(f"{corpus}: {len(questions)} questions recorded", flush=True)
    save(CANDIDATE_FILE, {"candidates": RERANK_CANDIDATES, "records": records})
    return records


# ---- fusion rules replayed offline on the stored candidates (no model runs) ----
REPLAY_TOP = 5  # recall@5
ROUTE_SCORES = {"cross-encoder": "ce", "cross-lingual": "use"}  # the reranked routes and the score each reorders by
ROUTE_DEPTHS = {"cross-encoder": RERANK_CANDIDATES, "cross-lingual": CANDIDATES}  # how deep each reads (the default)
WEIGHT_GRID = (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7)


def fused_order(head: list[int], lists: list[tuple[list[float] | None, float]], c: int = RRF_C) -> list[int]:
    """`head` (candidate indexes, first stage's order) by the weighted RRF of several orders: each (scores, weight)
    ranks `head` by `scores` (None: the first stage's own order); ties keep the first stage's order. One list at full
    weight is that list's order; `rrf_order` is the two-list case."""
    fused = dict.fromkeys(head, 0.0)
    for scores, weight in lists:
        if weight <= 0:
            continue
        ranked = head if scores is None else sorted(head, key=lambda i: scores[i], reverse=True)
        for rank, i in enumerate(ranked, start=1):
            fused[i] += weight / (c + rank)
    return sorted(head, key=lambda i: fused[i], reverse=True)


def rrf_order(head: list[int], scores: list[float], weight: float, c: int = RRF_C) -> list[int]:
    """`head` (candidate indexes, first stage's order) by the RRF of that order (`weight`) and the scores' order,
    as `ScoredCrossEncoderReranker` fuses them (ties keep the first stage's order); weight 0: the scores' order.
    `fused_order`'s two-list case."""
    return fused_order(head, [(None, weight), (scores, 1 - weight)], c)


def kept_in_top(order: list[int], keep: list[int], place: int) -> list[int]:
    """`order` with the n-th of `keep` (the first stage's first few) raised to rank `place` + n at worst."""
    out = list(order)
    for n, i in enumerate(keep):
        limit = min(place - 1 + n, len(out) - 1)
        if out.index(i) > limit:
            out.remove(i)
            out.insert(limit, i)
    return out


def margin_order(head: list[int], scores: list[float], weight: float, margin: float) -> list[int]:
    """The fused order only when the model's best beats the first stage's first by `margin` standard deviations of
    the head's scores; else the first stage's order."""
    values = [scores[i] for i in head]
    mean = sum(values) / len(values)
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
    if (max(values) - scores[head[0]]) / spread > margin:
        return rrf_order(head, scores, weight)
    return list(head)


# rule → (what it does, its parameter grid, the order it gives: (head, scores, *parameters) → order); "d" is the
# depth the route reads (the rest follow in the first stage's order)
RULES = {
    "rrf": ("RRF of the first stage's rank (weight w) and the model's (the default's family)", {"w": WEIGHT_GRID},
            lambda head, s, w: rrf_order(head, s, w)),
    "rrf-c": ("RRF at weight w with constant c instead of 60", {"w": (0.1, 0.2, 0.3, 0.5), "c": (1, 5, 10, 20)},
              lambda head, s, w, c: rrf_order(head, s, w, c)),
    "depth": ("RRF at weight w, the model reading the first stage's top d only", {"w": (0.0, 0.1, 0.2, 0.3, 0.5),
              "d": (5, 10, 15, 20)}, lambda head, s, w, d: rrf_order(head, s, w)),
    "keep-top": ("RRF at weight w, then the first stage's top m kept in the top 5", {"w": (0.0, 0.1, 0.2, 0.3, 0.5),
                 "m": (1, 2)}, lambda head, s, w, m: kept_in_top(rrf_order(head, s, w), head[:m], REPLAY_TOP - m + 1)),
    "keep-first-at": ("RRF at weight w, the first stage's #1 at rank p or better", {"w": (0.0, 0.1, 0.2, 0.3, 0.5),
                      "p": (1, 2, 3)}, lambda head, s, w, p: kept_in_top(rrf_order(head, s, w), head[:1], p)),
    "margin": ("the RRF at weight w only when the model's best beats the first stage's #1 by t standard deviations",
               {"w": (0.0, 0.2, 0.3), "t": (0.0, 0.5, 1.0, 1.5, 2.0)},
               lambda head, s, w, t: margin_order(head, s, w, t)),
    "confident": ("the RRF at weight w only when the model's best score is at least t, else the first stage",
                  {"w": (0.0, 0.2, 0.3), "t": (0.3, 0.5, 0.7, 0.8, 0.9)},
                  lambda head, s, w, t: rrf_order(head, s, w) if max(s[i] for i in head) >= t else list(head)),
}  # fmt: skip


def replayed(record: dict, rule: str, parameters: dict) -> list[int]:
    """The top K candidate indexes `rule` gives one stored question on its route: the first stage's order on the
    "first stage" route; else the route's scores reorder its depth's head (the rest follow)."""
    first = list(range(len(record["relevant"])))
    if record["route"] not in ROUTE_SCORES:
        return first[:K]
    depth = parameters.get("d", ROUTE_DEPTHS[record["route"]])
    head, rest = first[:depth], first[depth:]
    order = RULES[rule][2](head, record[ROUTE_SCORES[record["route"]]], *parameters.values())
    return [*order, *rest][:K]


def replay_scores(relevant: list[bool], held: list[list[int]], evidence: int, order: list[int]) -> dict[str, float]:
    """recall@5 (the share of the evidence held by the first five) and MRR@10 of candidates in `order`."""
    found = {item for i in order[:REPLAY_TOP] for item in held[i]}
    first = next((rank for rank, i in enumerate(order[:K], start=1) if relevant[i]), None)
    return {"recall@5": len(found) / evidence if evidence else 0.0, "MRR@10": 1 / first if first else 0.0}


def settings_of(rule: str) -> list[dict]:
    grid = RULES[rule][1]
    return [dict(zip(grid, values)) for values in product(*grid.values())]


def setting_name(rule: str, parameters: dict) -> str:
    return f"{rule} " + ", ".join(f"{key}={value}" for key, value in parameters.items())


def mean_by_cell(records: list[dict], scores_of) -> dict[tuple[str, str], dict[str, float]]:
    """(corpus, language) → the mean of `scores_of(record)` (recall@5 and MRR@10) over its questions."""
    rows: dict[tuple[str, str], list] = {}
    for record in records:
        rows.setdefault((record["corpus"], record["language"]), []).append(scores_of(record))
    return {cell: {m: sum(s[m] for s in part) / len(part) for m in METRICS} for cell, part in rows.items()}


def cells_of(records: list[dict], order_of) -> dict[tuple[str, str], dict[str, float]]:
    """(corpus, language) → mean recall@5 and MRR@10 of the candidate orders `order_of(record)` gives."""
    return mean_by_cell(records, lambda r: replay_scores(r["relevant"], r["held"], r["evidence"], order_of(r)))


def merit(cells: dict, plain: dict) -> tuple[int, float]:
    """How a setting is chosen: fewest (cell, metric) below plain hybrid, then the best mean of both metrics."""
    below = sum(cells[cell][m] < plain[cell][m] - 1e-9 for cell in cells for m in METRICS)
    return -below, sum(cells[cell][m] for cell in cells for m in METRICS) / (len(cells) * len(METRICS))


def explore_rules(records: list[dict]) -> dict:
    """Every rule's settings replayed on each reranked route (the cross-encoder's, the cross-lingual one), and per
    route each rule's setting chosen by leave-one-corpus-out (fit on the route's cells of three corpora, scored on
    the fourth's) next to its in-sample score; "any rule": the best setting of all rules, chosen the same way."""
    corpora = list(dict.fromkeys(r["corpus"] for r in records))
    plain = cells_of(records, lambda r: list(range(K)))
    dense = mean_by_cell(records, lambda r: replay_scores(r["dense"]["relevant"], r["dense"]["held"], r["evidence"],
                                                          list(range(K))))  # fmt: skip
    table = {route: {} for route in ROUTE_SCORES}
    for route in ROUTE_SCORES:
        on_route = [r for r in records if r["route"] == route]
        for rule in RULES:
            for parameters in settings_of(rule):
                table[route][setting_name(rule, parameters)] = cells_of(
                    on_route, lambda r, rule=rule, p=parameters: replayed(r, rule, p)
                )
    choices = {}
    for held_out in corpora:
        choices[held_out] = {}
        for route, settings in table.items():
            cells = next(iter(settings.values()))
            fit, out = [c for c in cells if c[0] != held_out], [c for c in cells if c[0] == held_out]
            if not out:
                continue
            picks = {}
            for rule in [*RULES, "any rule"]:
                names = [n for n in settings if rule == "any rule" or n.split(" ")[0] == rule]
                chosen = max(names, key=lambda n: merit({c: settings[n][c] for c in fit}, plain))
                picks[rule] = {"chosen": chosen, "in sample": {c: settings[chosen][c] for c in fit},
                               "held out": {c: settings[chosen][c] for c in out}}  # fmt: skip
            choices[held_out][route] = picks
    return {"plain": plain, "dense": dense, "factory": mean_by_cell(records, lambda r: r["factory"]),
            "default": setting_name("rrf", {"w": DEFAULT_FIRST_STAGE_WEIGHT}), "table": table,
            "leave_one_corpus_out": choices, "settings_tried": sum(len(s) for s in table.values())}  # fmt: skip


def dense_misses_removed(records: list[dict], cells: dict, dense: dict) -> dict[str, float | None]:
    """Per corpus: the share of dense's recall@5 misses a pipeline's `cells` remove (its questions pooled)."""
    out = {}
    for corpus in dict.fromkeys(r["corpus"] for r in records):
        sizes = {c: sum((r["corpus"], r["language"]) == c for r in records) for c in cells if c[0] == corpus}
        total = sum(sizes.values())
        ours = sum(n * cells[c]["recall@5"] for c, n in sizes.items()) / total
        theirs = sum(n * dense[c]["recall@5"] for c, n in sizes.items()) / total
        out[corpus] = round((ours - theirs) / (1 - theirs), 3) if theirs < 1 else None
    return out


def keyed(cells: dict) -> dict[str, dict[str, float]]:
    return {
        f"{corpus}/{language}": {m: round(v, 3) for m, v in row.items()} for (corpus, language), row in cells.items()
    }


def pipeline_cells(out: dict, by_route: dict[str, str]) -> dict:
    """Every cell of the pipeline that takes setting `by_route[route]` on each reranked route (the first stage on
    the others)."""
    cells = dict(out["plain"])
    for route, name in by_route.items():
        cells.update(out["table"][route][name])
    return cells


def rules_report() -> dict:
    """`explore_rules` on the saved candidates (run `--record-candidates` first); prints and saves it."""
    path = RESULTS / f"{CANDIDATE_FILE}.json"
    if not path.is_file():
        raise SystemExit(f"no {path}: run `python benchmarks/bench_rerank_fusion.py --record-candidates` first")
    records = json.loads(path.read_text(encoding="utf-8"))["records"]
    out = explore_rules(records)
    default = pipeline_cells(out, dict.fromkeys(ROUTE_SCORES, out["default"]))
    mismatched = [c for c in out["factory"] if any(abs(default[c][m] - out["factory"][c][m]) > 1e-9 for m in METRICS)]
    print(f"replayed default ({out['default']}) = the factory run, every cell: {not mismatched} {mismatched}")
    print(f"{out['settings_tried']} settings of {len(RULES)} rules tried (per route)")
    print("plain hybrid:", keyed(out["plain"]), "\ndefault:", keyed(default))
    held_out_pipeline = {}
    for held_out, routes in out["leave_one_corpus_out"].items():
        print(f"\n{held_out} held out: route, rule → the setting chosen on the other corpora → its held-out cells")
        for route, picks in routes.items():
            for rule, pick in picks.items():
                inside = [v for row in pick["in sample"].values() for v in row.values()]
                print(f"  {route:13} {rule:13} {pick['chosen']:22} {keyed(pick['held out'])}"
                      f"  (in-sample mean {sum(inside) / len(inside):.3f})")  # fmt: skip
            held_out_pipeline.update(picks["any rule"]["held out"])
    held_out_pipeline.update({c: out["plain"][c] for c in out["plain"] if c not in held_out_pipeline})
    below = [f"{c[0]}/{c[1]} {m}" for c in held_out_pipeline for m in METRICS
             if held_out_pipeline[c][m] < out["plain"][c][m] - 1e-9]  # fmt: skip
    print("\nthe pipeline chosen by leave-one-corpus-out (any rule, per route), each cell held out:")
    print(keyed(held_out_pipeline), "\nbelow plain hybrid:", below or "none")
    dense_removed = {name: dense_misses_removed(records, cells, out["dense"])
                     for name, cells in (("default", default), ("chosen, held out", held_out_pipeline))}  # fmt: skip
    print("share of dense's recall@5 misses removed:", dense_removed)
    result = {"default": out["default"], "settings_tried": out["settings_tried"], "factory_replayed": not mismatched,
              "rules": {r: RULES[r][0] for r in RULES}, "plain hybrid": keyed(out["plain"]),
              "dense": keyed(out["dense"]), "default cells": keyed(default),
              "table": {route: {n: keyed(c) for n, c in settings.items()} for route, settings in out["table"].items()},
              "leave_one_corpus_out": {held_out: {route: {rule: {**pick, "in sample": keyed(pick["in sample"]),
                                                                 "held out": keyed(pick["held out"])}
                                                          for rule, pick in picks.items()}
                                                  for route, picks in routes.items()}
                                       for held_out, routes in out["leave_one_corpus_out"].items()},
              "chosen pipeline, held out": keyed(held_out_pipeline), "chosen pipeline below plain hybrid": below,
              "share_of_dense_recall_misses_removed": dense_removed}  # fmt: skip
    save("rerank_fusion_rules", result)
    return result


# ---- the cross-lingual route replayed: which order should a question none of whose candidates is in its language
# take? (no model runs; needs candidates recorded with the course embedder's cosine, `--record-candidates`) ----
CROSS_FILE = "rerank_fusion_cross_lingual"
CROSS_WEIGHTS_GRID = (0.0, 0.1, 0.2, 0.3, 0.5)
CROSS_DEPTHS_GRID = (5, 10, 20)


def crossed(scores: str):
    """A route that reorders the first stage's top d by `scores` (a record's key), fused with the first stage at w."""
    return lambda r, w, d: rrf_order(list(range(d)), r[scores], w)


# route → (what it reads, its parameter grid, the candidate order it gives: (record, *parameters) → order); the rest of
# the candidates follow in the first stage's order. "dense alone" is no reranker: dense's own top 10 (the hybrid
# first stage replaced, which a reranker of the candidates cannot do; for reference)
CROSS_ROUTES = {
    "use": ("the multilingual USE embedder's cosine (the current route's family)",
            {"w": CROSS_WEIGHTS_GRID, "d": CROSS_DEPTHS_GRID}, crossed("use")),
    "dense": ("the course embedder's cosine: dense's own order of the candidates",
              {"w": CROSS_WEIGHTS_GRID, "d": CROSS_DEPTHS_GRID}, crossed("dense_cosine")),
    "dense+use": ("RRF of dense's order (share a of the rest) and USE's, fused with the first stage at w",
                  {"w": (0.0, 0.1, 0.2, 0.3), "a": (0.25, 0.5, 0.75), "d": CROSS_DEPTHS_GRID},
                  lambda r, w, a, d: fused_order(list(range(d)), [(None, w), (r["dense_cosine"], (1 - w) * a),
                                                                  (r["use"], (1 - w) * (1 - a))])),
    "cross-encoder": ("the packaged English cross-encoder on the Chinese question and the English passage",
                      {"w": CROSS_WEIGHTS_GRID, "d": CROSS_DEPTHS_GRID}, crossed("ce")),
}  # fmt: skip
CURRENT_CROSS = ("use", {"w": DEFAULT_FIRST_STAGE_WEIGHT, "d": CANDIDATES})  # what `default_reranker` does today


def cross_order(record: dict, route: str, parameters: dict) -> list[int]:
    """The top K candidate indexes `route` at `parameters` gives one stored question."""
    first = list(range(len(record["relevant"])))
    head = CROSS_ROUTES[route][2](record, *parameters.values())
    return [*head, *(i for i in first if i not in head)][:K]


def cross_settings() -> list[tuple[str, dict]]:
    return [(route, dict(zip(spec[1], values))) for route, spec in CROSS_ROUTES.items()
            for values in product(*spec[1].values())]  # fmt: skip


def per_question(records: list[dict], order_of) -> list[dict[str, float]]:
    return [replay_scores(r["relevant"], r["held"], r["evidence"], order_of(r)) for r in records]


def mean_of(scores: list[dict[str, float]]) -> dict[str, float]:
    return {m: sum(s[m] for s in scores) / len(scores) for m in METRICS}


def cross_merit(scores_by_corpus: dict[str, list[dict]], reference: dict[str, list[dict]]) -> tuple:
    """How a cross-lingual setting is chosen on the fitting corpora: fewest (corpus, metric) below `reference` (the
    current route), then the best mean of both metrics over the corpora (each corpus weighs the same)."""
    below = sum(mean_of(scores_by_corpus[c])[m] < mean_of(reference[c])[m] - 1e-9 for c in scores_by_corpus
                for m in METRICS)  # fmt: skip
    means = [mean_of(scores_by_corpus[c])[m] for c in scores_by_corpus for m in METRICS]
    return -below, sum(means) / len(means)


def against(ours: list[dict], theirs: list[dict]) -> dict[str, dict[str, int]]:
    """Question by question: how many score higher and lower than `theirs`, per metric."""
    return {m: {"higher": sum(a[m] > b[m] + 1e-9 for a, b in zip(ours, theirs)),
                "lower": sum(a[m] < b[m] - 1e-9 for a, b in zip(ours, theirs))} for m in METRICS}  # fmt: skip


def rounded(scores: dict[str, float]) -> dict[str, float]:
    return {m: round(v, 3) for m, v in scores.items()}


def cross_lingual_report() -> dict:
    """Every cross-lingual route of `CROSS_ROUTES` replayed on the stored candidates of the questions the default
    routes cross-lingually, chosen by leave-one-corpus-out (fit on the other corpora with such questions, scored on
    the held-out one) and by fitting on one corpus and scoring on each other; each against the current route and
    plain hybrid, per cell and question by question. Prints and saves `CROSS_FILE`."""
    path = RESULTS / f"{CANDIDATE_FILE}.json"
    records = [r for r in json.loads(path.read_text(encoding="utf-8"))["records"] if r["route"] == "cross-lingual"]
    if not records or "dense_cosine" not in records[0]:
        raise SystemExit(f"{path} has no dense cosines: run `python benchmarks/bench_rerank_fusion.py "
                         "--record-candidates` first")  # fmt: skip
    corpora = list(dict.fromkeys(r["corpus"] for r in records))
    by_corpus = {c: [r for r in records if r["corpus"] == c] for c in corpora}
    sizes = {c: len(part) for c, part in by_corpus.items()}
    plain = {c: per_question(part, lambda r: list(range(K))) for c, part in by_corpus.items()}
    dense = {c: [replay_scores(r["dense"]["relevant"], r["dense"]["held"], r["evidence"], list(range(K))) for r in part]
             for c, part in by_corpus.items()}  # fmt: skip
    factory = {c: [r["factory"] for r in part] for c, part in by_corpus.items()}
    settings = cross_settings()
    scores = {(route, setting_name(route, p)): {c: per_question(part, lambda r, a=route, p=p: cross_order(r, a, p))
                                                for c, part in by_corpus.items()}
              for route, p in settings}  # fmt: skip
    current = scores[(CURRENT_CROSS[0], setting_name(*CURRENT_CROSS))]
    mismatched = [c for c in corpora if any(abs(mean_of(current[c])[m] - mean_of(factory[c])[m]) > 1e-9
                                            for m in METRICS)]  # fmt: skip
    print(f"cross-lingual questions: {sizes}; replayed current route ({setting_name(*CURRENT_CROSS)}) = the factory "
          f"run, every corpus: {not mismatched} {mismatched}")  # fmt: skip
    for name, cells in (("plain hybrid", plain), ("dense alone (top 10)", dense), ("current route", current)):
        print(f"  {name:22} " + "  ".join(f"{c} {rounded(mean_of(cells[c]))}" for c in corpora))

    def choose(fit: list[str], family: str | None) -> str:
        names = [key for key in scores if family in (None, key[0])]
        return max(names, key=lambda key: cross_merit({c: scores[key][c] for c in fit}, {c: current[c] for c in fit}))

    def held_out_row(key, corpus: str, fit: list[str]) -> dict:
        ours = scores[key][corpus]
        return {"chosen": key[1], "fit on": fit, "questions": sizes[corpus], "held out": rounded(mean_of(ours)),
                "in sample": {c: rounded(mean_of(scores[key][c])) for c in fit},
                "current route": rounded(mean_of(current[corpus])), "plain hybrid": rounded(mean_of(plain[corpus])),
                "vs current route": against(ours, current[corpus]), "vs plain hybrid": against(ours, plain[corpus])}  # fmt: skip

    families = [*CROSS_ROUTES, None]
    loco, pooled = {}, {}
    for corpus in corpora:
        fit = [c for c in corpora if c != corpus]
        loco[corpus] = {}
        for family in families:
            key = choose(fit, family)
            loco[corpus][family or "any route"] = held_out_row(key, corpus, fit)
            pooled.setdefault(family or "any route", []).extend(zip(scores[key][corpus], current[corpus]))
    # every corpus scored by the setting chosen without it, its questions pooled, against the current route
    pooled = {family: {m: mean_difference([ours[m] - theirs[m] for ours, theirs in pairs], random.Random(0))
                       for m in METRICS} for family, pairs in pooled.items()}  # fmt: skip
    pairwise = {}
    for fitted in corpora:
        for family in families:
            key = choose([fitted], family)
            for corpus in corpora:
                if corpus != fitted:
                    pairwise[f"fit on {fitted} → {corpus} | {family or 'any route'}"] = held_out_row(
                        key, corpus, [fitted]
                    )
    for title, table in (("leave one corpus out (fit on the others)", {f"{c} held out | {f}": row for c, rows in
                                                                        loco.items() for f, row in rows.items()}),
                         ("fit on one corpus, scored on another", pairwise)):  # fmt: skip
        print(
            f"\n{title}: chosen setting → held-out recall@5 / MRR@10 (current route; plain hybrid), "
            "questions higher/lower than the current route"
        )
        for label, row in table.items():
            versus = row["vs current route"]
            print(f"  {label:52} {row['chosen']:24} {row['held out']} (current {row['current route']}; plain "
                  f"{row['plain hybrid']}) r@5 +{versus['recall@5']['higher']}/-{versus['recall@5']['lower']} "
                  f"MRR +{versus['MRR@10']['higher']}/-{versus['MRR@10']['lower']}")  # fmt: skip
    print(f"\nleave one corpus out, the {sum(sizes.values())} questions pooled, each scored by the setting chosen "
          "without its corpus, minus the current route:")  # fmt: skip
    for family, row in pooled.items():
        print(f"  {family:14} {row}")
    wins = {}
    for family in pooled:
        rows = [loco[c][family] for c in corpora]
        wins[family] = all(row["held out"][m] >= row["current route"][m] for row in rows for m in METRICS) and any(
            row["held out"][m] > row["current route"][m] for row in rows for m in METRICS
        )
    print("beats the current route held out (no held-out corpus lower on either metric, one higher):", wins)
    result = {"questions": sizes, "current route": setting_name(*CURRENT_CROSS), "factory_replayed": not mismatched,
              "routes": {route: spec[0] for route, spec in CROSS_ROUTES.items()}, "settings_tried": len(settings),
              "plain hybrid": {c: rounded(mean_of(plain[c])) for c in corpora},
              "dense alone": {c: rounded(mean_of(dense[c])) for c in corpora},
              "table": {key[1]: {c: rounded(mean_of(cells[c])) for c in corpora} for key, cells in scores.items()},
              "leave_one_corpus_out": loco, "leave_one_corpus_out_pooled_vs_current": pooled, "fit_on_one": pairwise,
              "beats the current route held out": wins}  # fmt: skip
    save(CROSS_FILE, result)
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--record-candidates"]:
        record_candidates(tuple(sys.argv[2].split(",")) if len(sys.argv) == 3 else ALL_CORPORA)
        sys.exit(0)
    if sys.argv[1:2] == ["--rules"]:
        rules_report()
        sys.exit(0)
    if sys.argv[1:2] == ["--cross-lingual"]:
        cross_lingual_report()
        sys.exit(0)
    if sys.argv[1:2] == ["--recheck"] and len(sys.argv) == 3:
        sys.exit(1 if recheck(sys.argv[2]) else 0)
    if sys.argv[1:2] == ["--corpus"] and len(sys.argv) == 3:
        chosen = tuple(sys.argv[2].split(","))
        unknown = set(chosen) - {*CORPORA, *HELDOUT_CORPORA}
        if unknown:
            raise SystemExit(
                f"--corpus {sys.argv[2]}: unknown {sorted(unknown)} — use {', '.join([*CORPORA, *HELDOUT_CORPORA])}"
            )
        main(chosen)
    else:
        main()
