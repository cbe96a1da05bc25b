"""The grading loop's gate on every gold question: how far its two signals can take notebook 04's goals.

For each gold question of a corpus: the hybrid top 20, reranked by language (notebook 04's retrieval), the top
`--k` chunks; the cross-encoder's score and the chat model's P(yes) (asked in the question's language) for each,
and whether it holds the evidence. Then, per language and for the top 3 and the top `--k`:

- the separation (AUC) of each signal's best score, answerable against out-of-KB;
- the share of answerable questions whose evidence is in the top K (the ceiling of a first-round stop);
- the best gate **on these very questions** (`calibrate_gate`, ≥ 95 % abstention): an upper bound of the
  first-round stop, optimistic because it is chosen on the questions it is scored on;
- a gate calibrated on half the questions and scored on the other half, over 40 seeded halvings;
- the operating point of `DEFAULT_GATE` and of the gate this run calibrates on every question (K = 3), which
  `lessons.agents.grading.DEFAULT_GATE` copies (a test keeps the two equal).

P(yes) costs one chat-model call per chunk (≈ 600 calls for the course gold set at `--k 5`, about an hour cold on
2 cores; the LLM cache makes a re-run take seconds). Writes benchmarks/results/gate[-<corpus>].json.

    python benchmarks/bench_gate.py [--corpus course|packages] [--k 5]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import save

MIN_ABSTENTION = 0.95


def signals(corpus: str, k: int) -> list[dict]:
    from tqdm import tqdm

    from lessons.core import get_chat_model
    from lessons.evaluation.metrics import relevance
    from lessons.evaluation.pipelines import Resources, gate_grader, gate_retrieval
    from lessons.ingest import load_gold
    from lessons.retrieval.index import load_knowledge_base

    chunks, store = load_knowledge_base(corpus)
    llm = get_chat_model()
    search = gate_retrieval(Resources(chunks=chunks, store=store, llm=llm, k=k))  # the grading loop's, k chunks kept
    scores = gate_grader(llm)  # its two signals; their scores do not depend on the thresholds
    rows = []
    for question in tqdm(load_gold(corpus=corpus), desc=f"{corpus} gold questions"):
        documents = search(question.question)
        rows.append(
            {
                "id": question.id,
                "language": question.language,
                "answerable": question.answerable,
                "cross_encoder": scores.cross_encoder_scores(question.question, documents),
                "p_yes": scores.p_yes(question.question, documents),
                "evidence": [bool(x) for x in relevance(documents, question)] if question.answerable else [],
            }
        )
    return rows


def analyse(rows: list[dict], ks: tuple[int, ...]) -> dict:
    from lessons.agents.grading import (
        DEFAULT_GATE,
        calibrate_gate,
        gate_operating_point,
        separation_auc,
        split_half_transfer,
    )

    def pairs(row, k, p_only=False):
        return [(1.0 if p_only else ce, p) for ce, p in zip(row["cross_encoder"][:k], row["p_yes"][:k])]

    report, calibrated = {}, {}
    for language in ("en", "zh"):
        inside = [r for r in rows if r["language"] == language and r["answerable"]]
        outside = [r for r in rows if r["language"] == language and not r["answerable"]]
        if len(inside) < 2 or len(outside) < 2:
            continue
        per_k = {}
        for k in ks:
            entry = {
                "in_kb": len(inside),
                "out_of_kb": len(outside),
                "evidence_in_top_k": sum(any(r["evidence"][:k]) for r in inside) / len(inside),
                "auc_cross_encoder": separation_auc(
                    [max(r["cross_encoder"][:k]) for r in inside], [max(r["cross_encoder"][:k]) for r in outside]
                ),
                "auc_p_yes": separation_auc(
                    [max(r["p_yes"][:k]) for r in inside], [max(r["p_yes"][:k]) for r in outside]
                ),
            }
            for name, p_only in (("both_signals", False), ("p_yes_only", True)):
                in_kb, out_of_kb = [pairs(r, k, p_only) for r in inside], [pairs(r, k, p_only) for r in outside]
                gate = calibrate_gate(in_kb, out_of_kb, MIN_ABSTENTION)
                entry[name] = {
                    "in_sample_gate": {"cross_encoder": 0.0 if p_only else gate.cross_encoder, "p_yes": gate.p_yes},
                    "in_sample": gate_operating_point(in_kb, out_of_kb, gate),
                    "split_half": split_half_transfer(in_kb, out_of_kb, min_abstention=MIN_ABSTENTION),
                }
                if k == 3 and not p_only:
                    calibrated[language] = gate
            per_k[f"top_{k}"] = entry
        three_in, three_out = [pairs(r, 3) for r in inside], [pairs(r, 3) for r in outside]
        per_k["DEFAULT_GATE"] = {
            "gate": vars(DEFAULT_GATE[language]),
            **gate_operating_point(three_in, three_out, DEFAULT_GATE[language]),
        }
        report[language] = per_k
    return {
        "by_language": report,
        "calibrated_gate_top_3": {language: vars(gate) for language, gate in calibrated.items()},
    }


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="course", choices=("course", "packages"))
    parser.add_argument("--k", type=int, default=5, help="chunks read per question (the top 3 is analysed too)")
    args = parser.parse_args()
    rows = signals(args.corpus, args.k)
    results = {
        "corpus": args.corpus,
        "min_abstention": MIN_ABSTENTION,
        **analyse(rows, tuple(sorted({3, args.k}))),
        "questions": rows,
    }
    save("gate" if args.corpus == "course" else f"gate-{args.corpus}", results)
    for language, entry in results["by_language"].items():
        for key, value in entry.items():
            if key.startswith("top_"):
                bound, half = value["both_signals"]["in_sample"], value["both_signals"]["split_half"]
                print(
                    f"{language} {key}: evidence {value['evidence_in_top_k']:.2f}, AUC cross-encoder "
                    f"{value['auc_cross_encoder']:.2f} / P(yes) {value['auc_p_yes']:.2f}; best gate on these questions: "
                    f"first round {bound['first_round']:.2f}, abstention {bound['abstention']:.2f}; half-split: "
                    f"{half['first_round']:.2f} / {half['abstention']:.2f} ({half['splits_holding_abstention']:.0%} hold)"
                )
    return results


if __name__ == "__main__":
    main()
