"""The semantic cache (lessons.retrieval.semantic_cache): its threshold calibrated on one half of the paraphrase
pairs, measured on the other half, per embedder, per language and per corpus.

The cache of each knowledge base holds every gold question of that corpus (`load_gold`, both languages) with its
gold answer, keyed by the corpus's real version (`knowledge_base_version` of its chunks). The lookups are
data/eval/paraphrases.jsonl: for a gold question (`of`), a paraphrase (a hit is wanted, and right when the
stored question it finds is `of` or a gold question with the same evidence quote) and a "near" question that shares
its words but asks something else (another quarter, office, release, package, default: any hit is a wrong answer).
Each lookup is made twice: by similarity alone ("plain") and with the cache's guard (only stored questions that name
the same numbers and versions compete: `specifics`).

The pairs of each (corpus, language) cell are split by their position: odd pairs calibrate (half A), even pairs are
measured (half B); the swap (calibrate on B, measure on A) is reported too. A threshold is the one that serves the
most right answers with at most 1 % of the answers served wrong (`calibrate_threshold`). Embeddings only, no
chat-model call. Writes benchmarks/results/semantic_cache.json.

The module's default (`DEFAULT_THRESHOLDS`) is the threshold calibrated on every pair (`all_pairs_threshold`); the
halves say how such a threshold does on pairs it was not calibrated on. `--analyse-only` re-analyses the stored rows.

`--heldout` measures instead the lookups of data/eval/cache_heldout.jsonl (never used to fit a threshold,
but development data for the guard's contrast words since they were chosen by reading them: see data/README.md), or
`--heldout PATH` those of another file in its format (data/eval/cache_fresh.jsonl, written after the guard) at the module's `DEFAULT_THRESHOLDS`, not recalibrated: per cell and overall, the paraphrase hit rate
(right answers served) and the wrong-answer rate — near questions served, as a share of the near questions, and
wrong answers as a share of the answers served — each with its 95 % Wilson interval, and whether the ≤ 1 % goal is
shown (upper bound ≤ 1 %), missed (point estimate > 1 %) or not decidable. Plain lookups have no shipped threshold:
they are measured at the guard's, to show what the guard adds. Lookups with a `category` are counted per category too. Writes
benchmarks/results/semantic_cache_heldout.json (for PATH: semantic_cache_<its name without "cache_">.json).

`--develop` asks every development lookup (paraphrases.jsonl, cache_heldout.jsonl, cache_fresh.jsonl, and each gold
question with itself left out) and gives the curve, the strict threshold and the bounded one (the module's default:
`bounded_threshold`) with each cell at it. Writes benchmarks/results/semantic_cache_development.json.

    python benchmarks/bench_semantic_cache.py [--embedders e5 use] [--analyse-only] [--heldout [PATH]] [--develop]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, save
from lessons.ingest.corpus import GOLD_DIR

PAIRS = GOLD_DIR / "paraphrases.jsonl"
HELDOUT = GOLD_DIR / "cache_heldout.jsonl"
FRESH = GOLD_DIR / "cache_fresh.jsonl"  # a test set measured twice (a59f4ee, 162a6e5), now development data
MAX_WRONG_RATE = 0.01


def load_pairs() -> list[dict]:
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:  # the pair's position in its cell decides its half; a pair's two questions share it
        cell = [r for r in rows if (r["corpus"], r["language"], r["kind"]) == (row["corpus"], row["language"], "near")]
        position = next(i for i, r in enumerate(cell) if r["of"] == row["of"])
        row["half"] = "A" if position % 2 == 0 else "B"
    return rows


def probe_rows(embedder: str, pairs: list[dict]) -> list[dict]:
    from lessons.core.embeddings import get_embeddings
    from lessons.evaluation import cache_lookups
    from lessons.ingest.corpus import corpus_folder, load_gold
    from lessons.retrieval.index import chunk_knowledge_base
    from lessons.retrieval.semantic_cache import SemanticCache, answer_equivalents, knowledge_base_version

    embeddings = get_embeddings(embedder)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for corpus in ("course", "packages"):
            gold = load_gold(corpus=corpus)
            same = answer_equivalents(gold)
            version = knowledge_base_version(chunk_knowledge_base(folder=corpus_folder(corpus)))
            cache = SemanticCache(Path(folder) / f"{corpus}.sqlite", embeddings, version, threshold=1.0)
            start = time.perf_counter()
            for question in gold:
                cache.store(question.question, question.answer, {"id": question.id})
            store_seconds = time.perf_counter() - start
            mine = [p for p in pairs if p["corpus"] == corpus]
            fields = ("id", "of", "corpus", "language", "kind", "half")
            # a stored gold question is asked with itself left out; decided by the course's one harness
            asked = [{**{key: pair[key] for key in fields}, "question": pair["question"],
                      "leave_out": pair["kind"] == "stored"} for pair in mine]  # fmt: skip
            start = time.perf_counter()
            found = cache_lookups(cache, asked, same, guards=(False, True))
            for row in found.to_dict("records"):
                nearest = row["nearest"] if isinstance(row["nearest"], str) else None  # pandas reads None as NaN
                rows.append({**{key: row[key] for key in fields}, "guard": row["guard"], "nearest": nearest,
                             "similarity": round(row["similarity"], 5), "correct": bool(row["correct"])})  # fmt: skip
            lookup_ms = 1000 * (time.perf_counter() - start) / max(2 * len(mine), 1)
            print(f"{embedder} {corpus}: {len(gold)} stored in {store_seconds:.1f} s, {lookup_ms:.0f} ms per lookup")
            for row in rows[-2 * len(mine) :]:
                row["lookup_ms"] = round(lookup_ms, 1)
    return rows


def rates(rows: list[dict], threshold: float) -> dict:
    from lessons.retrieval.semantic_cache import CacheProbe, cache_rates

    result = cache_rates(
        [CacheProbe(r["similarity"], r["correct"], r["kind"] == "paraphrase") for r in rows], threshold
    )
    near_hits = sum(1 for r in rows if r["kind"] == "near" and r["similarity"] >= threshold)
    return {
        "lookups": result.lookups,
        "paraphrases": result.expected,
        "served": result.hits,
        "right": result.right_hits,
        "wrong": result.wrong_hits,
        "near_served": near_hits,
        "hit_rate": round(result.hit_rate, 3),
        "wrong_rate": round(result.wrong_rate, 3),
    }


def breakdown(rows: list[dict], threshold: float) -> dict:
    cells = {"all": rows}
    for language in ("en", "zh"):
        cells[language] = [r for r in rows if r["language"] == language]
    for corpus in ("course", "packages"):
        for language in ("en", "zh"):
            cells[f"{corpus}-{language}"] = [r for r in rows if (r["corpus"], r["language"]) == (corpus, language)]
    return {name: rates(cell, threshold) for name, cell in cells.items() if cell}


def calibrate(rows: list[dict]) -> float:
    from lessons.retrieval.semantic_cache import CacheProbe, calibrate_threshold

    probes = [CacheProbe(r["similarity"], r["correct"], r["kind"] == "paraphrase") for r in rows]
    return calibrate_threshold(probes, MAX_WRONG_RATE)


def distribution(rows: list[dict]) -> dict:
    def summary(values):
        values = [v for v in values if v > -1.0]  # -1: the guard left no stored question to compare with
        if not values:
            return {"n": 0}
        return {"n": len(values), "min": min(values), "median": statistics.median(values), "max": max(values)}

    right = [r["similarity"] for r in rows if r["correct"]]
    wrong_para = [r["similarity"] for r in rows if r["kind"] == "paraphrase" and not r["correct"]]
    near = [r["similarity"] for r in rows if r["kind"] == "near"]
    result = {"paraphrase_right_nearest": summary(right), "near": summary(near)}
    if wrong_para:
        result["paraphrase_wrong_nearest"] = summary(wrong_para)
    return result


def analyse(embedder: str, rows: list[dict], guard: bool) -> dict:
    from lessons.core.embeddings import EMBEDDERS
    from lessons.retrieval.semantic_cache import DEFAULT_THRESHOLDS

    shipped = calibrate(rows)  # on every pair: what the module ships, in-sample by construction
    result = {"distribution": distribution(rows), "all_pairs_threshold": round(shipped, 4), "splits": {}}
    for fit, test in (("A", "B"), ("B", "A")):
        threshold = calibrate([r for r in rows if r["half"] == fit])
        result["splits"][f"calibrated on {fit}, measured on {test}"] = {
            "threshold": round(threshold, 4),
            "calibration": breakdown([r for r in rows if r["half"] == fit], threshold),
            "measured": breakdown([r for r in rows if r["half"] == test], threshold),
        }
    name = EMBEDDERS[embedder].name
    default = DEFAULT_THRESHOLDS.get((name, guard))
    if default is not None:
        result["module_default"] = {"threshold": default, "all_pairs": breakdown(rows, default)}
    result["embedder_name"] = name
    return result


LOOKUP_KEYS = ("id", "of", "corpus", "language", "kind", "question")


def load_heldout(path: Path = HELDOUT) -> list[dict]:
    """The lookups of a held-out file (data/eval/cache_heldout.jsonl's format), each marked as never calibrated on."""
    if not path.is_file():
        raise SystemExit(f"{path}: no such lookups file — give a JSONL file in the format of {HELDOUT.name}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            missing = [key for key in LOOKUP_KEYS if key not in row]
            if missing or row["kind"] not in ("paraphrase", "near"):
                raise SystemExit(
                    f"{path.name}, line {number}: a lookup needs {', '.join(LOOKUP_KEYS)} and a kind of paraphrase "
                    f"or near (missing: {', '.join(missing) or 'none'}; kind {row.get('kind')!r}) — fix that line"
                )
            rows.append({**row, "half": "held-out"})  # never calibrated on
    return rows


def results_name(path: Path) -> str:
    """The results file's name for a lookups file: semantic_cache_heldout for cache_heldout.jsonl, so that file keeps
    its name, semantic_cache_fresh for cache_fresh.jsonl."""
    return "semantic_cache_" + path.stem.removeprefix("cache_")


def by_category(lookups: list[dict], rows: list[dict], threshold: float) -> dict:
    """Per `category` of the near lookups: how many there are and how many were served (similarity ≥ `threshold`)."""
    category = {lookup["id"]: lookup.get("category") or "none" for lookup in lookups}
    counts: dict[str, dict] = {}
    for row in rows:
        if row["kind"] == "near":
            cell = counts.setdefault(category[row["id"]], {"near": 0, "served": 0})
            cell["near"] += 1
            cell["served"] += row["similarity"] >= threshold
    return dict(sorted(counts.items()))


def goal(wrong: int, n: int) -> dict:
    """A wrong-answer rate with its 95 % Wilson interval, and what it says about the ≤ 1 % goal."""
    from lessons.agents.grading import wilson_interval

    low, high = wilson_interval(wrong, n)
    rate = wrong / n if n else 0.0
    if n and high <= MAX_WRONG_RATE:
        verdict = "shown"
    elif n and rate > MAX_WRONG_RATE:
        verdict = "missed"
    else:
        verdict = "not decidable"
    return {"wrong": wrong, "n": n, "rate": round(rate, 4), "ci95": [round(low, 4), round(high, 4)], "goal": verdict}


def heldout_cells(rows: list[dict], threshold: float) -> dict:
    """`breakdown` at `threshold`, each cell with the intervals of its hit rate and of its two wrong-answer rates."""
    from lessons.agents.grading import wilson_interval

    cells = breakdown(rows, threshold)
    for cell in cells.values():
        low, high = wilson_interval(cell["right"], cell["paraphrases"])
        cell["hit_rate_ci95"] = [round(low, 3), round(high, 3)]
        cell["near_served_of_near"] = goal(cell["near_served"], cell["lookups"] - cell["paraphrases"])
        cell["wrong_of_served"] = goal(cell["wrong"], cell["served"])
    return cells


def heldout(embedders: list[str], path: Path = HELDOUT, results_file: str | None = None) -> None:
    """Measure the held-out lookups of `path` at the module's shipped threshold (see the module docstring)."""
    import os

    from lessons.core.embeddings import EMBEDDERS
    from lessons.retrieval.semantic_cache import DEFAULT_THRESHOLDS

    lookups = load_heldout(path)
    root = Path(__file__).resolve().parents[1]
    shown = path.resolve().relative_to(root) if path.resolve().is_relative_to(root) else path
    results = {"lookups": str(shown), "max_wrong_rate": MAX_WRONG_RATE}
    results["embedders"] = {}
    for embedder in embedders:
        threshold = DEFAULT_THRESHOLDS.get((EMBEDDERS[embedder].name, True))
        if threshold is None:
            print(f"{embedder}: no shipped threshold, nothing to measure")
            continue
        start = time.perf_counter()
        rows = probe_rows(embedder, lookups)
        seconds = time.perf_counter() - start
        entry = {"embedder_name": EMBEDDERS[embedder].name, "threshold": threshold, "rows": rows}
        entry["seconds"], entry["load_average"] = round(seconds, 1), [round(x, 2) for x in os.getloadavg()]
        for guard in (False, True):
            mode = "guard" if guard else "plain (at the guard's threshold)"
            mine = [r for r in rows if r["guard"] == guard]
            cells = heldout_cells(mine, threshold)
            served = sorted(r["id"] for r in mine if r["kind"] == "near" and r["similarity"] >= threshold)
            entry["guard" if guard else "plain"] = {"cells": cells, "near_served": served}
            if any("category" in lookup for lookup in lookups):
                categories = by_category(lookups, mine, threshold)
                entry["guard" if guard else "plain"]["near_by_category"] = categories
                print(f"{embedder} {mode} near served by category: {json.dumps(categories)}")
            for name, cell in cells.items():
                near, wrong = cell["near_served_of_near"], cell["wrong_of_served"]
                print(
                    f"{embedder} {mode} {name}: hit rate {cell['right']}/{cell['paraphrases']} "
                    f"({cell['hit_rate']:.0%}, 95 % {cell['hit_rate_ci95'][0]:.0%}–{cell['hit_rate_ci95'][1]:.0%}); "
                    f"near served {near['wrong']}/{near['n']} ({near['rate']:.1%}, 95 % up to {near['ci95'][1]:.1%}: "
                    f"{near['goal']}); wrong of served {wrong['wrong']}/{wrong['n']} (up to {wrong['ci95'][1]:.1%}: "
                    f"{wrong['goal']})"
                )
            print(f"{embedder} {mode} near questions served: {', '.join(served) or 'none'}")
        results["embedders"][embedder] = entry
    save(results_file or results_name(path), results)


def stored_lookups() -> list[dict]:
    """Every gold question as a lookup of kind "stored": asked of its own corpus's cache with itself left out, any
    answer served is wrong unless its stored question quotes the same evidence."""
    from lessons.ingest.corpus import load_gold

    return [
        {"id": q.id, "of": q.id, "corpus": corpus, "language": q.language, "kind": "stored", "question": q.question,
         "half": "development"}
        for corpus in ("course", "packages")
        for q in load_gold(corpus=corpus)
    ]  # fmt: skip


def strict_threshold(rows: list[dict]) -> float:
    """The lowest threshold that serves no wrong answer on `rows` (`calibrate_threshold` with no wrong answer
    allowed), rounded up to three decimals."""
    import math

    from lessons.retrieval.semantic_cache import CacheProbe, calibrate_threshold

    probes = [CacheProbe(r["similarity"], r["correct"], r["kind"] == "paraphrase") for r in rows]
    return math.ceil(calibrate_threshold(probes, 0.0) * 1000) / 1000


def bounded_threshold(rows: list[dict], grid: float = 0.001) -> float:
    """The lowest threshold on a grid of `grid` steps from 0.95 at which, and at every step above it, the 95 % Wilson
    upper bound of the lookups other than paraphrases served a wrong answer is at most `MAX_WRONG_RATE`: the goal
    stated as a bound, read on the development rows (1.0 when no step meets it)."""
    steps = [round(0.95 + grid * i, 6) for i in range(round(0.05 / grid) + 1)]
    bounded = [point["near_upper_95"] <= MAX_WRONG_RATE for point in curve(rows, steps)]
    for i, step in enumerate(steps):
        if all(bounded[i:]):
            return step
    return 1.0


def develop_cells(rows: list[dict], threshold: float) -> dict:
    """Per (corpus, language) cell at `threshold`: paraphrases served right and the other lookups served a wrong
    answer, with its 95 % Wilson upper bound (`curve` of the cell)."""
    cells = {"all": rows}
    cells |= {f"{c}-{lang}": [r for r in rows if (r["corpus"], r["language"]) == (c, lang)]
              for c in ("course", "packages") for lang in ("en", "zh")}  # fmt: skip
    return {name: curve(cell, [threshold])[0] for name, cell in cells.items() if cell}


def curve(rows: list[dict], thresholds: list[float]) -> list[dict]:
    """Per threshold: paraphrases served their answer, and the other lookups (near, stored) served a wrong one, with
    the 95 % Wilson upper bound of that share."""
    from lessons.agents.grading import wilson_interval

    paraphrases = [r for r in rows if r["kind"] == "paraphrase"]
    others = [r for r in rows if r["kind"] != "paraphrase"]
    points = []
    for threshold in thresholds:
        right = sum(r["correct"] and r["similarity"] >= threshold for r in paraphrases)
        wrong = sum(not r["correct"] and r["similarity"] >= threshold for r in others)
        points.append(
            {"threshold": threshold, "paraphrases": len(paraphrases), "paraphrases_right": right,
             "near": len(others), "near_served_wrong": wrong,
             "near_upper_95": round(wilson_interval(wrong, len(others))[1], 4)}
        )  # fmt: skip
    return points


def develop(embedders: list[str]) -> None:
    """The development curve (`--develop`): the lookups of paraphrases.jsonl, cache_heldout.jsonl and
    cache_fresh.jsonl and every gold question asked with itself left out, guard on and off; the strict threshold
    (`strict_threshold`: no wrong answer), the bounded one (`bounded_threshold`: the shipped rule) and, at the
    bounded one, each cell (`develop_cells`). Writes benchmarks/results/semantic_cache_development.json."""
    import os

    lookups = [*load_pairs(), *load_heldout(HELDOUT), *load_heldout(FRESH), *stored_lookups()]
    results = {
        "lookups": [str(p.relative_to(GOLD_DIR.parents[1])) for p in (PAIRS, HELDOUT, FRESH)] + ["gold, left out"]
    }
    results["embedders"] = {}
    for embedder in embedders:
        start = time.perf_counter()
        rows = probe_rows(embedder, lookups)
        entry = {"seconds": round(time.perf_counter() - start, 1), "load_average": list(os.getloadavg()), "rows": rows}
        for guard in (True, False):
            mine = [r for r in rows if r["guard"] == guard]
            strict, bounded = strict_threshold(mine), bounded_threshold(mine)
            points = curve(mine, sorted({0.95, 0.9624, 0.97, 0.975, 0.98, 0.985, 0.99, strict, bounded}))
            cells = develop_cells(mine, bounded)
            mode = "guard" if guard else "plain"
            entry[mode] = {"strict_threshold": strict, "bounded_threshold": bounded, "curve": points, "cells": cells}
            for point in points:
                marks = [
                    name for name, value in (("strict", strict), ("bounded", bounded)) if point["threshold"] == value
                ]
                print(
                    f"{embedder} {mode} {point['threshold']:.4f}: paraphrases right "
                    f"{point['paraphrases_right']}/{point['paraphrases']}, near served "
                    f"{point['near_served_wrong']}/{point['near']} (95 % up to {point['near_upper_95']:.2%})"
                    + "".join(f" <- {mark}" for mark in marks)
                )
            for name, cell in cells.items():
                print(
                    f"{embedder} {mode} at {bounded} {name}: paraphrases right {cell['paraphrases_right']}/"
                    f"{cell['paraphrases']}, near served {cell['near_served_wrong']}/{cell['near']} "
                    f"(95 % up to {cell['near_upper_95']:.2%})"
                )
        results["embedders"][embedder] = entry
    save("semantic_cache_development", results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", nargs="+", default=["e5", "use"], choices=["e5", "use"])
    parser.add_argument("--analyse-only", action="store_true", help="re-analyse the rows of the last results")
    parser.add_argument(
        "--heldout",
        nargs="?",
        const=HELDOUT,
        type=Path,
        metavar="PATH",
        help=f"measure held-out lookups at the shipped threshold (default {HELDOUT.name}, or the file PATH)",
    )
    parser.add_argument("--develop", action="store_true", help="the development curve and the strict threshold")
    parser.add_argument("--name", help="the results file's name for --heldout (default from the lookups file's)")
    args = parser.parse_args()
    if args.develop:
        develop(args.embedders)
        return
    if args.heldout:
        heldout(args.embedders, args.heldout, args.name)
        return
    pairs = load_pairs()
    stored = json.loads((RESULTS / "semantic_cache.json").read_text()) if args.analyse_only else None
    results = {"pairs": str(PAIRS.relative_to(PAIRS.parents[2])), "max_wrong_rate": MAX_WRONG_RATE, "embedders": {}}
    for embedder in args.embedders:
        rows = stored["embedders"][embedder]["rows"] if stored else probe_rows(embedder, pairs)
        results["embedders"][embedder] = {"rows": rows}
        for guard in (False, True):
            mode = "guard" if guard else "plain"
            analysis = analyse(embedder, [r for r in rows if r["guard"] == guard], guard)
            results["embedders"][embedder][mode] = analysis
            for split, numbers in analysis["splits"].items():
                measured = numbers["measured"]
                print(
                    f"{embedder} {mode} {split}: threshold {numbers['threshold']}; measured hit rate "
                    + ", ".join(f"{c} {measured[c]['hit_rate']:.0%}" for c in ("all", "en", "zh") if c in measured)
                    + "; wrong "
                    + ", ".join(
                        f"{c} {measured[c]['wrong']}/{measured[c]['served']}"
                        for c in ("all", "en", "zh")
                        if c in measured
                    )
                )
            print(f"{embedder} {mode} similarities: {json.dumps(analysis['distribution'])}")
            print(f"{embedder} {mode} threshold calibrated on every pair: {analysis['all_pairs_threshold']}")
    save("semantic_cache", results)


if __name__ == "__main__":
    main()
