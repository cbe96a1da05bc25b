"""Query routing (lessons.retrieval.routing): the embedding router against the chat model's structured decision.

Questions and the route each should take:
- every gold question of both corpora (`load_gold`, out-of-KB ones included: they ask about the corpus's subject)
  → "course" or "packages";
- the held-out near misses (benchmarks/questions/near_miss*_<corpus>.jsonl) → their corpus; the few whose note
  calls them "plainly off" (明显…) ask about the corpus's subject too (a Tidewell allowance the handbook does not list),
  so their route is their corpus, and they are reported apart as well;
- data/eval/off_corpus.jsonl (30 questions about neither corpus, en and zh) → "neither".

The questions of each (set, corpus, language) cell are split by position: even positions calibrate the embedding
router's "neither" threshold (half A), odd ones measure it (half B); the swap is reported too. The chat-model router
(`--llm N`, at most N questions of half B, balanced by language and kind) is one forced structured call per question
through the local server; the LLM cache makes a re-run free. Accuracy per language, calls, seconds.
Writes benchmarks/results/routing.json.

    python benchmarks/bench_routing.py [--k 1 3 5] [--llm 60] [--reuse-embedding]
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, save
from lessons.ingest.corpus import GOLD_DIR

QUESTIONS = Path(__file__).parent / "questions"
CORPORA = ("course", "packages")


def questions() -> list[dict]:
    from lessons.ingest.corpus import load_gold

    rows = []
    for corpus in CORPORA:
        for q in load_gold(corpus=corpus):
            kind = "gold-out-of-kb" if q.type == "out_of_kb" else "gold"
            rows.append({"id": q.id, "question": q.question, "language": q.language, "kind": kind, "route": corpus})
        for path in sorted(QUESTIONS.glob(f"near_miss*_{corpus}.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                q = json.loads(line)
                plainly_off = q["note"].lower().startswith("plainly off") or q["note"].startswith("明显")
                kind = "near-miss-plainly-off" if plainly_off else "near-miss"
                rows.append({**{k: q[k] for k in ("id", "question", "language")}, "kind": kind, "route": corpus})
    for line in (GOLD_DIR / "off_corpus.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        rows.append({**{k: q[k] for k in ("id", "question", "language")}, "kind": "off-corpus", "route": q["route"]})
    cells: dict[tuple, int] = {}
    for row in rows:
        cell = (row["kind"].startswith("near-miss"), row["kind"] == "off-corpus", row["route"], row["language"])
        position = cells[cell] = cells.get(cell, -1) + 1
        row["half"] = "A" if position % 2 == 0 else "B"
    return rows


class MemoEmbeddings:
    """The embedder with its query vectors remembered, so that every k re-uses one embedding per question."""

    def __init__(self, embeddings):
        self.inner, self.name, self.memo, self.seconds = embeddings, embeddings.name, {}, 0.0

    def embed_query(self, text):
        if text not in self.memo:
            start = time.perf_counter()
            self.memo[text] = self.inner.embed_query(text)
            self.seconds += time.perf_counter() - start
        return self.memo[text]


def accuracy(rows: list[dict], key: str) -> dict:
    from lessons.retrieval.routing import balanced_accuracy

    result = {}
    for name, cell in (
        ("all", rows),
        ("en", [r for r in rows if r["language"] == "en"]),
        ("zh", [r for r in rows if r["language"] == "zh"]),
    ):
        if cell:
            right = sum(r[key] == r["route"] for r in cell)
            result[name] = {
                "n": len(cell),
                "right": right,
                "accuracy": round(right / len(cell), 3),
                "balanced": round(balanced_accuracy([r["route"] for r in cell], [r[key] for r in cell]), 3),
            }
    by_kind = {}
    for kind in sorted({r["kind"] for r in rows}):
        cell = [r for r in rows if r["kind"] == kind]
        by_kind[kind] = {
            "n": len(cell),
            "right": sum(r[key] == r["route"] for r in cell),
            "to_neither": sum(r[key] == "neither" for r in cell),
        }
    result["by_kind"] = by_kind
    return result


def embedding_router(rows: list[dict], ks: list[int]) -> dict:
    from lessons.core.embeddings import get_embeddings
    from lessons.ingest.corpus import corpus_folder
    from lessons.retrieval.index import chunk_knowledge_base
    from lessons.retrieval.routing import EmbeddingRouter, calibrate_neither_threshold, decide

    start = time.perf_counter()
    chunks = {corpus: chunk_knowledge_base(folder=corpus_folder(corpus)) for corpus in CORPORA}
    embeddings = MemoEmbeddings(get_embeddings())
    base = EmbeddingRouter.from_chunks(chunks, get_embeddings(), threshold=0.5)
    build_seconds = time.perf_counter() - start
    result = {
        "embedder": embeddings.name,
        "chunks": {c: len(v) for c, v in chunks.items()},
        "build_seconds": round(build_seconds, 1),
        "by_k": {},
    }
    for k in ks:
        router = EmbeddingRouter(base.vectors, embeddings, threshold=0.5, k=k)
        scores = [router.scores(r["question"]) for r in rows]
        result["query_ms"] = round(1000 * embeddings.seconds / len(rows), 1)
        per_k = {"splits": {}}
        for fit, test in (("A", "B"), ("B", "A")):
            fitted = [(s, r["route"]) for s, r in zip(scores, rows, strict=True) if r["half"] == fit]
            threshold = calibrate_neither_threshold(fitted)
            measured = []
            for s, r in zip(scores, rows, strict=True):
                if r["half"] == test:
                    measured.append({**r, "embedding": decide(s, threshold), "scores": s})
            per_k["splits"][f"calibrated on {fit}, measured on {test}"] = {
                "threshold": round(threshold, 4),
                "measured": accuracy(measured, "embedding"),
            }
        result["by_k"][k] = per_k
        for r, s in zip(rows, scores, strict=True):
            r.setdefault("scores_by_k", {})[k] = {c: round(v, 4) for c, v in s.items()}
    return result


def llm_sample(rows: list[dict], n: int) -> list[dict]:
    """At most n questions of half B, half per language; within a language, gold, near misses and off-corpus
    questions take turns (in file order), so each kind is represented."""
    sample = []
    for language in ("en", "zh"):
        groups = {}
        for r in rows:
            if r["half"] == "B" and r["language"] == language:
                group = "off-corpus" if r["kind"] == "off-corpus" else f"{r['route']}-{r['kind'].startswith('near')}"
                groups.setdefault(group, []).append(r)
        order = sorted(groups)
        picked, depth = [], 0
        while len(picked) < n // 2 and any(depth < len(g) for g in groups.values()):
            for group in order:
                if depth < len(groups[group]) and len(picked) < n // 2:
                    picked.append(groups[group][depth])
            depth += 1
        sample += picked
    return sample


def llm_router(sample: list[dict]) -> dict:
    from tqdm import tqdm

    from lessons.core.models import active_model_info, get_chat_model
    from lessons.core.structured import StructuredOutputError
    from lessons.core.usage import metered
    from lessons.retrieval.routing import LLMRouter

    router = LLMRouter(get_chat_model(max_tokens=64))
    start = time.perf_counter()
    with metered() as meter:
        for row in tqdm(sample, desc="chat-model router"):
            asked = time.perf_counter()
            try:
                row["llm"] = router.route(row["question"]).route
            except StructuredOutputError as error:  # counted as a wrong route, and the error is kept
                row["llm"], row["llm_error"] = "error", str(error)[:200]
            row["llm_seconds"] = round(time.perf_counter() - asked, 2)
    totals = meter.totals
    return {
        "model": str(active_model_info()),
        "questions": len(sample),
        "seconds": round(time.perf_counter() - start, 1),
        "calls": totals.calls,
        "cached_calls": totals.cached_calls,
        "input_tokens": totals.input_tokens,
        "output_tokens": totals.output_tokens,
        "accuracy": accuracy(sample, "llm"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", nargs="+", type=int, default=[1, 3, 5], help="nearest chunks per knowledge base")
    parser.add_argument("--llm", type=int, default=0, help="route at most this many questions with the chat model")
    parser.add_argument(
        "--reuse-embedding", action="store_true", help="take the embedding router's results from the last run"
    )
    args = parser.parse_args()
    rows = questions()
    print(
        f"{len(rows)} questions: "
        + ", ".join(f"{k} {sum(r['kind'] == k for r in rows)}" for k in sorted({r["kind"] for r in rows}))
    )
    if args.reuse_embedding:
        last = json.loads((RESULTS / "routing.json").read_text())
        scores = {r["id"]: r["scores_by_k"] for r in last["rows"]}
        for row in rows:
            row["scores_by_k"] = {int(k): v for k, v in scores[row["id"]].items()}
        results = {"questions": len(rows), "embedding": last["embedding"]}
        results["embedding"]["by_k"] = {int(k): v for k, v in last["embedding"]["by_k"].items()}
    else:
        results = {"questions": len(rows), "embedding": embedding_router(rows, args.k)}
    for k, numbers in results["embedding"]["by_k"].items():
        for split, split_numbers in numbers["splits"].items():
            measured = split_numbers["measured"]
            print(
                f"embedding k={k} {split}: threshold {split_numbers['threshold']}; "
                + ", ".join(f"{c} {measured[c]['right']}/{measured[c]['n']}" for c in ("all", "en", "zh"))
            )
    if args.llm:
        from lessons.retrieval.routing import decide

        sample = llm_sample(rows, args.llm)
        results["llm"] = llm_router(sample)
        k = 3 if 3 in args.k else args.k[0]
        threshold = results["embedding"]["by_k"][k]["splits"]["calibrated on A, measured on B"]["threshold"]
        for row in sample:
            row["embedding"] = decide(row["scores_by_k"][k], threshold)
        results["llm"]["embedding_on_the_same_questions"] = {
            "k": k,
            "threshold": threshold,
            "accuracy": accuracy(sample, "embedding"),
        }
        for name in ("llm", "embedding"):
            numbers = accuracy(sample, name)
            print(
                f"{name} on the {len(sample)} sampled: "
                + ", ".join(f"{c} {numbers[c]['right']}/{numbers[c]['n']}" for c in ("all", "en", "zh"))
            )
        print(f"chat model: {results['llm']['calls']} calls, {results['llm']['seconds']} s")
    results["rows"] = rows
    save("routing", results)


if __name__ == "__main__":
    main()
