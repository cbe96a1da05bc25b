"""The answerability check (lessons.agents.answerability) on gold questions of both corpora, per language.

For each sampled gold question: the grading loop's round-one retrieval (the hybrid top 20, reranked, the top 3 —
`pipelines.gate_retrieval`), the relevance signals the loop already reads (the chat model's P(yes) per chunk and
the cross-encoder's score), and the check's one extra call: the judge's quote, verified in code (near-verbatim in
a chunk, the question's specifics in or around it). Then, per corpus and language:

- each signal's separation (AUC): best P(yes), best cross-encoder score, the code check (0/1), the code check
  times P(yes);
- operating points (abstention on out-of-KB, answered in round one) of P(yes) alone (today's gate), the code check
  alone, and the code check with a P(yes) threshold — that threshold chosen on held-out questions (40 seeded
  halvings: fitted on one half, scored on the other) and in-sample (an upper bound);
- with P(yes) read: the shipped gate's operating point (`DEFAULT_GATE`, fixed, not fitted here) alone and followed by
  the code check, as /v1/ask and notebook 04 run round one (`shipped_gate`);
- a transfer table: the threshold fitted on one corpus, scored on the other, per language;
- the extra calls and tokens per question.

The sample is seeded and balanced: `--answerable` answerable and `--out-of-kb` out-of-KB questions per language
and corpus (all of them with `--all`). Rows are saved after every question (a stopped run keeps what it measured;
the LLM cache makes a re-run cheap). Writes benchmarks/results/answerability.json.

Held-out questions: `--seed 1 --exclude-dev` draws a sample disjoint from the dev rows (answerability-rows.json, the
questions the check's rules were written on) and writes answerability-heldout-seed1.json (rows: …-rows.json).
The code check is re-run at analysis time with the corpus's subject (`common_names`) as the code computes it now.

Replay: `--replay NAME ...` re-runs the code check as it stands over those results' stored rows (quotes and chunks
are stored; no model call), prints answerable answered and out-of-KB refused per corpus and language, and records
each replay in NAME-replay-COMMIT.json (the commit of the code that ran, "-dirty" when lessons/ or this script differ
from it): the counts and every row's reason.

The relevance gate in front of the check, its P(yes) threshold swept (no model call; thresholds chosen on the
course's answerable gold questions of gate.json, never on the rows scored; rows without P(yes) take bench_gate's):

    python benchmarks/bench_answerability.py --gate-sweep answerability answerability-focus \
        answerability-heldout-seed1 answerability-heldout-seed1-now answerability-fresh9-pyes
        → benchmarks/results/answerability-gate-sweep.json

(answerability-heldout-seed1's rows have no `asks_for`: measured before the judge was asked for it, so the code
check there is weaker than today's; answerability-focus holds the dev questions with it, and the same held-out sample
was measured again with today's judge and P(yes), 7 Dec 2026, on an AVX2-only CPU, empty cache:

    python benchmarks/bench_answerability.py --seed 1 --exclude-dev --answerable 10 --out-of-kb 8 \
        --name answerability-heldout-seed1-now)

Answerable questions never tuned on: `--answerable-set` takes them from benchmarks/questions/answerable_<corpus>.jsonl
(written after the check's rules):

    python benchmarks/bench_answerability.py --answerable-set --near-misses 2 --all --no-p-yes \
        --name answerability-fresh

Questions never tuned on: `--near-misses` takes the out-of-KB questions from benchmarks/questions/near_miss_<corpus>.jsonl
(40 near misses written by someone who had not read the check, before the rule they measure) and `--exclude-rows NAME`
keeps the answerable ones of earlier samples out:

    python benchmarks/bench_answerability.py --seed 2 --exclude-dev --exclude-rows answerability-heldout-seed1 \
        --near-misses --answerable 10 --out-of-kb 10 --no-p-yes --name answerability-nearmiss-seed2

Set 3 (answerable_3_<corpus>.jsonl and near_miss_3_<corpus>.jsonl, written by two people who had not read the check):

    python benchmarks/bench_answerability.py --answerable-set 3 --near-misses 3 --all --no-p-yes \
        --name answerability-fresh3

Set 4 (answerable_4_<corpus>.jsonl and near_miss_4_<corpus>.jsonl, likewise):

    python benchmarks/bench_answerability.py --answerable-set 4 --near-misses 4 --all --no-p-yes \
        --name answerability-fresh4

Set 5 (answerable_5_<corpus>.jsonl and near_miss_5_<corpus>.jsonl, likewise; measured once, 6 Dec 2026, with
framing off, the default chosen after set 4: framing on and off answer and refuse the same questions on set 5):

    python benchmarks/bench_answerability.py --answerable-set 5 --near-misses 5 --all --no-p-yes \
        --name answerability-fresh5

`--asks-for-enum` asks the judge for `asks_for` as one of the question's own spans (the check's
`asks_for_from_question` option: an enum in the schema). Each row records how it was made (`asks_for_enum`), and so do
the results (`settings`); rows of the other setting are never mixed into one results file. The option changes only the
judge's call, so `--replay` re-runs the same code check on such rows (and reports their setting):

    python benchmarks/bench_answerability.py --answerable-set 8 --near-misses 8 --all --no-p-yes --asks-for-enum \
        --name answerability-fresh8-enum

Set 9 (answerable_9_<corpus>.jsonl and near_miss_9_<corpus>.jsonl, written blind like set 8, committed before it was
run). The course's check (the enum off):

    python benchmarks/bench_answerability.py --answerable-set 9 --near-misses 9 --all --no-p-yes \
        --name answerability-fresh9

(31 of its 80 questions were measured first with the enum option on, 7 Dec 2026: answerability-fresh9-enum*.json;
all 80 with the command above the same day: answerability-fresh9.json. The same command without `--no-p-yes` and
`--name answerability-fresh9-pyes` adds the chat model's P(yes) and the shipped gate's operating point.)

Set 10 (answerable_10_<corpus>.jsonl and near_miss_10_<corpus>.jsonl, written blind, committed before it was run; its
brief asked for role/title near misses, the kind the sibling-role rule `contrasted_focus` was written for — 13 of its 40
near misses are of that kind), measured 7 Dec 2026 with the check of 4b5fc2c (answerability-fresh10.json, and
answerability-fresh10-replay-70e2c47.json); the rule's fix after it (e29c81f) is no longer blind there:

    python benchmarks/bench_answerability.py --answerable-set 10 --near-misses 10 --all --no-p-yes \
        --name answerability-fresh10

The same set with P(yes) read (the shipped gate's operating point; 7 Dec 2026, 240 more calls, rows of 80 questions
measured with the check of 2847a07 for the first 23 and 4c5976c after; the analysis re-runs the code check):

    python benchmarks/bench_answerability.py --answerable-set 10 --near-misses 10 --all \
        --name answerability-fresh10-pyes

Set 11 (answerable_11_<corpus>.jsonl and near_miss_11_<corpus>.jsonl, written blind by h34s11 and committed before it
was run; 11 of its 40 near misses ask for a person or role, in both languages), measured 7 Dec 2026 with the check of
4c5976c — the role rules of 113cb45 (a role verb, the noun before 是谁, a Chinese sibling role) written on set 10 before
set 11 existed (answerability-fresh11.json); the fix after it (1f761d8: "led by" answers "who leads") is not blind
there (answerability-fresh11-replay-1f761d8.json):

    python benchmarks/bench_answerability.py --answerable-set 11 --near-misses 11 --all --no-p-yes \
        --name answerability-fresh11

Set 12 (written blind by h34s12, 5e225f2; 12 of its 40 near misses ask for a person or role, 5 for a month), measured
8 Dec 2026 with the check of 0b64597 — every rule written on set 11 (1f761d8, a28c9d7, 1a1b72d, 0b64597) is blind
there (answerability-fresh12.json):

    python benchmarks/bench_answerability.py --answerable-set 12 --near-misses 12 --all --no-p-yes \
        --name answerability-fresh12

An "extractive" variant (what is asked read from the question itself, and the cross-encoder's best sentences checked
as quotes when the judge's evidence failed) was measured on sets 3 and 4, answered fewer and refused fewer than the
check on set 4 (30 and 18 of 40, against 33 and 21), and was removed; the results files written before keep its rows.

    python benchmarks/bench_answerability.py [--answerable 8] [--out-of-kb 5] [--all] [--analyse-only]
        [--seed N --exclude-dev] [--exclude-rows NAME ...] [--near-misses [SET]] [--answerable-set [SET]] [--name NAME]
        [--asks-for-enum]
    python benchmarks/bench_answerability.py --replay NAME ...
"""

import argparse
import itertools
import json
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, machine, question_file, save

MIN_ABSTENTION = 0.95
QUESTIONS = Path(__file__).resolve().parent / "questions"
K = 3
NAME = "answerability"


def sample(
    questions,
    answerable: int,
    out_of_kb: int,
    seed: int = 0,
    everything: bool = False,
    exclude: frozenset = frozenset(),
) -> list:
    """A seeded draw per language: `answerable` answerable and `out_of_kb` out-of-KB questions (all with `everything`),
    interleaved so that a stopped run has measured every cell alike. Ids in `exclude` (the dev rows) are never drawn."""
    cells = []
    for language in ("en", "zh"):
        for want, n in ((True, answerable), (False, out_of_kb)):
            pool = [q for q in questions if q.language == language and q.answerable == want and q.id not in exclude]
            cells.append(
                pool if everything else random.Random(f"{seed}-{language}-{want}").sample(pool, min(n, len(pool)))
            )
    return [q for group in itertools.zip_longest(*cells) for q in group if q is not None]


class Corpus:
    """One knowledge base as the benchmark reads it: the loop's round-one retrieval, its signals, the check."""

    def __init__(self, corpus: str, llm, asks_for_enum: bool = False):
        from lessons.agents.answerability import AnswerabilityCheck, common_names
        from lessons.evaluation.pipelines import Resources, gate_grader, gate_retrieval
        from lessons.retrieval.index import load_knowledge_base

        chunks, store = load_knowledge_base(corpus)
        self.search = gate_retrieval(Resources(chunks=chunks, store=store, llm=llm, k=K))
        self.subject = common_names(chunks)
        self.signals = gate_grader(llm, subject=sorted(self.subject))  # the loop's P(yes) and cross-encoder
        self.check = AnswerabilityCheck(llm, subject=self.subject, asks_for_from_question=asks_for_enum)


def same_setting(rows: dict, path: Path, asks_for_enum: bool) -> None:
    """Raise when `rows` (read from `path`) were measured with the other `--asks-for-enum` setting: one results file
    holds rows of one setting (rows written before the option existed were made without it)."""
    other = [key for key, row in rows.items() if row.get("asks_for_enum", False) != asks_for_enum]
    if other:
        made = "without" if asks_for_enum else "with"
        raise ValueError(
            f"{path}: {len(other)} rows (e.g. {other[0]}) were measured {made} --asks-for-enum: "
            f"give this run another --name, or run it {made} --asks-for-enum"
        )


def measure(questions: list, rows: dict, path: Path, p_yes: bool = True, asks_for_enum: bool = False) -> None:
    """Measure (corpus, question) pairs in order, saving after each; pairs already in `rows` are skipped. Without
    `p_yes` the chat model's P(yes) is not read (one call per question instead of four: the code check needs none).
    With `asks_for_enum` the judge's `asks_for` is one of the question's spans (the check's `asks_for_from_question`)."""
    from tqdm import tqdm

    from lessons.core import get_chat_model
    from lessons.core.search_text import CONTEXT_HEADER
    from lessons.core.usage import metered
    from lessons.evaluation.metrics import relevance

    same_setting(rows, path, asks_for_enum)
    llm = get_chat_model()
    corpora = {name: Corpus(name, llm, asks_for_enum) for name in dict.fromkeys(corpus for corpus, _ in questions)}
    for corpus, question in tqdm(questions, desc="answerability"):
        key = f"{corpus}:{question.id}"
        if key in rows:
            continue
        c = corpora[corpus]
        documents = c.search(question.question)
        relevance_p = c.signals.p_yes(question.question, documents) if p_yes else []
        cross = c.signals.cross_encoder_scores(question.question, documents)
        start = time.perf_counter()
        with metered() as meter:
            evidence = c.check.evidence(question.question, documents)
        seconds = time.perf_counter() - start
        rows[key] = {
            "corpus": corpus,
            "id": question.id,
            "language": question.language,
            "answerable": question.answerable,
            "question": question.question,
            "p_yes": relevance_p,
            "cross_encoder": cross,
            "evidence_in_top_k": any(relevance(documents, question)) if question.answerable else False,
            "asks_for": evidence.asks_for,
            "asks_for_enum": asks_for_enum,
            "quote": evidence.quote,
            "answer": evidence.answer,
            "documents": [
                {
                    "text": d.page_content,
                    "context_header": d.metadata.get(CONTEXT_HEADER),
                    "source": d.metadata.get("source"),
                }
                for d in documents
            ],
            "subject": sorted(c.subject),
            "calls": meter.totals.all_calls,
            "cached_calls": meter.totals.cached_calls,
            "tokens": meter.totals.pipeline_tokens,
            "seconds": round(seconds, 2),
        }
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1))


VARIANTS = {  # the code check's settings compared at analysis time (the judge's quotes do not change)
    "check": {},
    "names_near_quote": {"names_near_quote": True},
    "any_coverage": {"min_coverage": 0.0},
    "answer": {"check_answer": True},  # the judge's short answer must be new to the question and stated
    "framing": {"framing": True},  # words the judge took from the question count as copied (the default before)
    "no_focus": {"focus_share": 0.0},  # the words naming what is asked are not looked for around the quote
    "focus_any": {"focus_share": 0.01},  # one of them suffices
    "focus_all": {"focus_share": 1.0},  # every one of them
    "terms_floor": {"min_terms": 0.15},  # and 15 % of the question's content words around the quote
}


def verify(row: dict, subject=None) -> dict:
    """The code check on a measured row, in every variant (re-run at analysis time: quotes and chunks are stored).
    `subject`: the corpus's `common_names` as the code computes them now (default: those stored with the row)."""
    from langchain_core.documents import Document

    from lessons.agents.answerability import Evidence, verify_evidence

    documents = [
        Document(d["text"], metadata={"context_header": d["context_header"], "source": d["source"]})
        for d in row["documents"]
    ]
    evidence = Evidence(asks_for=row.get("asks_for", ""), quote=row["quote"], answer=row["answer"])
    checked = {}
    for name, options in VARIANTS.items():
        names = row["subject"] if subject is None else subject
        reason, match, specifics, missing, terms = verify_evidence(
            row["question"], evidence, documents, names, **options
        )
        checked[name] = {
            "reason": reason,
            "quote_coverage": match.coverage if match else 0.0,
            "missing": [s.text for s in missing],
            "term_coverage": terms,
        }
    return {**row, **checked["check"], "specifics": [s.text for s in specifics], "variants": checked}


def _pairs(row: dict, signal: str) -> list[tuple[float, float]]:
    """A question as the gate calibration reads it: (first signal, second signal) pairs, a question answered when one
    pair reaches both thresholds; none when the code check failed (never answered)."""
    if signal == "p_yes":  # today's gate: P(yes) alone
        return [(1.0, p) for p in row["p_yes"]]
    best_p, best_ce = max(row["p_yes"], default=0.0), max(row["cross_encoder"])
    if signal == "coverage+p_yes":  # the quote's verbatim share as a threshold of its own, specifics required
        v = row["variants"]["any_coverage"]
        return (
            [(v["quote_coverage"], best_p)]
            if v["reason"] in ("answerable", "quote not in the documents")
            and v["quote_coverage"] > 0
            and not v["missing"]
            else []
        )
    prefix = signal.split("+", 1)[0]
    variant = row["variants"][PREFIXES.get(prefix, "check")]
    if variant["reason"] != "answerable":
        return []
    second = signal.split("+", 1)[1] if "+" in signal else ""
    return {
        "": [(1.0, 1.0)],
        "p_yes": [(1.0, best_p)],
        "cross_encoder": [(best_ce, 1.0)],
        "terms+p_yes": [(variant["term_coverage"] or 0.0, best_p)],
    }[second]


PREFIXES = {
    "check(names near)": "names_near_quote",
    "check(answer)": "answer",
    "check(framing)": "framing",
    "check(no focus)": "no_focus",
    "check(focus any)": "focus_any",
    "check(focus all)": "focus_all",
    "check(terms floor)": "terms_floor",
}
SIGNALS = (
    "p_yes",
    "check(framing)",
    "check(no focus)",
    "check(focus any)",
    "check",
    "check(focus all)",
    "check(terms floor)",
    "check+p_yes",
    "check(names near)",
    "check(names near)+p_yes",
    "coverage+p_yes",
    "check+cross_encoder",
    "check+terms+p_yes",
    "check(answer)",
    "check(answer)+p_yes",
)


def analyse(rows: list[dict]) -> dict:
    from lessons.agents.grading import (
        DEFAULT_GATE,
        calibrate_gate,
        gate_operating_point,
        separation_auc,
        split_half_transfer,
        wilson_interval,
    )

    def cell(corpus, language):
        group = [r for r in rows if r["corpus"] == corpus and r["language"] == language]
        return [r for r in group if r["answerable"]], [r for r in group if not r["answerable"]]

    def auc(inside, outside, score):
        return separation_auc([score(r) for r in inside], [score(r) for r in outside])

    report, fitted = {}, {}
    for corpus in sorted({r["corpus"] for r in rows}):
        for language in ("en", "zh"):
            inside, outside = cell(corpus, language)
            if not inside or not outside:
                continue
            read_p = all(r["p_yes"] for r in inside + outside)  # measured with --no-p-yes: no P(yes) signals
            entry = {
                "answerable": len(inside),
                "out_of_kb": len(outside),
                "evidence_in_top_3": sum(r["evidence_in_top_k"] for r in inside) / len(inside),
                "auc": {
                    "p_yes": auc(inside, outside, lambda r: max(r["p_yes"])) if read_p else None,
                    "cross_encoder": auc(inside, outside, lambda r: max(r["cross_encoder"])),
                    "check": auc(inside, outside, ok),
                    "check(names near)": auc(inside, outside, lambda r: ok(r, "names_near_quote")),
                    "check(answer)": auc(inside, outside, lambda r: ok(r, "answer")),
                    "check(framing)": auc(inside, outside, lambda r: ok(r, "framing")),
                    "check(no focus)": auc(inside, outside, lambda r: ok(r, "no_focus")),
                    "check*p_yes": auc(inside, outside, lambda r: ok(r) * max(r["p_yes"])) if read_p else None,
                    "quote_coverage": auc(inside, outside, lambda r: r["quote_coverage"]),
                    "term_coverage": auc(inside, outside, lambda r: r["term_coverage"] or 0.0),
                },
                "reasons_out_of_kb": _count(r["reason"] for r in outside),
                "reasons_answerable": _count(r["reason"] for r in inside),
                "reasons_out_of_kb(answer)": _count(r["variants"]["answer"]["reason"] for r in outside),
                "reasons_answerable(answer)": _count(r["variants"]["answer"]["reason"] for r in inside),
                "extra_calls_per_question": _mean([r["calls"] for r in inside + outside]),
                "extra_tokens_per_question": _mean([r["tokens"] for r in inside + outside]),
                "seconds_per_call": _mean([r["seconds"] for r in inside + outside]),
            }
            if read_p:  # what the service and notebook 04 run: the shipped gate, then the check on what it admits
                entry["shipped_gate"] = shipped_gate(inside, outside, DEFAULT_GATE[language])
            for signal in [s for s in SIGNALS if read_p or "p_yes" not in s]:
                in_kb, out_kb = [_pairs(r, signal) for r in inside], [_pairs(r, signal) for r in outside]
                gate = calibrate_gate(in_kb, out_kb, MIN_ABSTENTION)
                point = gate_operating_point(in_kb, out_kb, gate)
                answered, refused, counts = _counts(in_kb, out_kb, gate)
                result = {
                    "in_sample_gate": vars(gate),
                    "in_sample": point,
                    "in_sample_counts": counts,
                    "answered_interval": wilson_interval(answered, len(in_kb)),
                    "refused_interval": wilson_interval(refused, len(out_kb)),
                }
                if "+" not in signal and signal != "p_yes":  # the code check's own operating point, no threshold
                    open_gate = type(gate)(0.0, 0.0)
                    result["no_threshold"] = gate_operating_point(in_kb, out_kb, open_gate)
                if len(in_kb) >= 2 and len(out_kb) >= 2:
                    result["held_out"] = split_half_transfer(in_kb, out_kb, min_abstention=MIN_ABSTENTION)
                entry[signal] = result
                fitted[(corpus, language, signal)] = gate
            report[f"{corpus}/{language}"] = entry
    transfer = []
    for (corpus, language, signal), gate in fitted.items():
        for other in sorted({r["corpus"] for r in rows} - {corpus}):
            inside, outside = cell(other, language)
            if inside and outside and ("p_yes" not in signal or all(r["p_yes"] for r in inside + outside)):
                point = gate_operating_point(
                    [_pairs(r, signal) for r in inside], [_pairs(r, signal) for r in outside], gate
                )
                transfer.append(
                    {
                        "fitted_on": corpus,
                        "scored_on": other,
                        "language": language,
                        "signal": signal,
                        "gate": vars(gate),
                        **point,
                    }
                )
    return {"by_cell": report, "transfer": transfer}


def _counts(in_kb: list, out_kb: list, gate) -> tuple[int, int, str]:
    """How many in-KB questions `gate` answers and out-of-KB ones it refuses, and the two as the reports write them."""
    answered = sum(gate.admits(q) for q in in_kb)
    refused = sum(not gate.admits(q) for q in out_kb)
    return answered, refused, f"answered {answered}/{len(in_kb)}, refused {refused}/{len(out_kb)}"


def shipped_gate(inside: list[dict], outside: list[dict], gate) -> dict:
    """The operating point of a fixed gate (`DEFAULT_GATE`, not fitted here) on one cell: the relevance gate alone
    (one chunk's P(yes) reaches the threshold) and the gate then the code check (round one of the grading loop as
    `default_gate` runs it), with the ids of the answerable questions each refuses."""
    from lessons.agents.grading import gate_operating_point

    result = {"gate": vars(gate)}
    for name, signal in (("gate_alone", "p_yes"), ("gate_then_check", "check+p_yes")):
        in_kb, out_kb = [_pairs(r, signal) for r in inside], [_pairs(r, signal) for r in outside]
        result[name] = {
            **gate_operating_point(in_kb, out_kb, gate),
            "counts": _counts(in_kb, out_kb, gate)[2],
            "refused_answerable": [r["id"] for r, q in zip(inside, in_kb) if not gate.admits(q)],
        }
    return result


def ok(row: dict, variant: str = "check") -> float:
    """1.0 when the code check (in `variant`) passed the judge's evidence."""
    return float(row["variants"][variant]["reason"] == "answerable")


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def current_subject(corpus: str) -> frozenset:
    """The corpus's `common_names` as the code computes them now (the rows store the ones of their run)."""
    from lessons.agents.answerability import common_names
    from lessons.ingest.corpus import corpus_folder
    from lessons.retrieval.index import chunk_knowledge_base

    return common_names(chunk_knowledge_base(folder=corpus_folder(corpus)))


def questions_of(corpus: str, near_misses: str | None = None, answerable_set: str | bool = False) -> list:
    """The corpus's gold questions; with `near_misses` (a set: "1", "2"), its out-of-KB ones replaced by that set of
    held-out near misses in benchmarks/questions/ (written independently of the check, never used to fit it; their
    `note` is dropped); with `answerable_set` (a set: "1" or True, "3"), its answerable ones replaced by
    answerable_<corpus>.jsonl there, or answerable_<set>_<corpus>.jsonl (answerable questions written after the
    check's rules, never tuned on)."""
    from lessons.ingest import load_gold

    gold = load_gold(corpus=corpus)
    answerable = [q for q in gold if q.answerable]
    out_of_kb = [q for q in gold if not q.answerable]
    if near_misses:
        path = QUESTIONS / (
            f"near_miss_{corpus}.jsonl" if near_misses == "1" else f"near_miss_{near_misses}_{corpus}.jsonl"
        )
        out_of_kb = question_file(path)
        if any(q.answerable for q in out_of_kb):
            raise ValueError(f"{path}: a near miss must be out_of_kb — fix the question's type")
    if answerable_set:
        number = "1" if answerable_set is True else str(answerable_set)
        path = QUESTIONS / (f"answerable_{corpus}.jsonl" if number == "1" else f"answerable_{number}_{corpus}.jsonl")
        answerable = question_file(path)
        if not all(q.answerable for q in answerable):
            raise ValueError(f"{path}: every question of this set must be answerable — move out_of_kb ones elsewhere")
    return answerable + out_of_kb


def code_commit() -> str:
    """The commit of the code that ran, as its short hash, with "-dirty" when a file of it differs from that commit
    (this script, or a module of lessons/ it has imported: other work in progress elsewhere does not count); "unknown"
    outside a Git checkout (a clean export)."""
    root = Path(__file__).resolve().parents[1]
    files = {Path(__file__).resolve()} | {
        Path(module.__file__).resolve()
        for module in list(sys.modules.values())
        if getattr(module, "__file__", None) and Path(module.__file__).resolve().is_relative_to(root / "lessons")
    }
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "diff", "HEAD", "--quiet", "--", *map(str, sorted(files))], cwd=root, check=False
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if changed.returncode else "")


def replay(names: list[str]) -> dict:
    """The code check as it stands re-run over the stored rows of earlier results (`--replay`): no chat-model call and
    no knowledge base, the corpus's subject as stored with each row. Per results, corpus and language: answerable
    questions answered, out-of-KB questions refused, and why the answerable ones were refused.

    And how the judge's `asks_for` behaved: `named_answerable` / `named_out_of_kb` count the rows whose `asks_for`
    names a word of the question (`focus_terms`), `fallback_answered` / `fallback_not_refused` the questions passed
    although it named none (then only `MIN_QUESTION_SHARE` of the question's own words was looked for).
    `asks_for_enum`: how many rows were made with `--asks-for-enum` (the option changes the judge's call, not the code
    check: the stored `asks_for` is checked as it is).

    Each replay is recorded in RESULTS/NAME-replay-COMMIT.json (`code_commit`): the counts and every row's reason."""
    from lessons.agents.answerability import focus_terms

    report = {}
    for name in names:
        rows = json.loads((RESULTS / f"{name}-rows.json").read_text(encoding="utf-8"))
        cells: dict = {}
        reasons = {}
        for key, row in rows.items():
            checked = verify(row)
            reason = reasons[key] = checked["reason"]
            named = bool(focus_terms(row["question"], row.get("asks_for", ""), row["subject"]))
            cell = cells.setdefault(
                f"{row['corpus']}/{row['language']}",
                {"answered": 0, "answerable": 0, "refused": 0, "out_of_kb": 0, "refusals_answerable": {},
                 "named_answerable": 0, "named_out_of_kb": 0, "fallback_answered": 0, "fallback_not_refused": 0,
                 "asks_for_enum": 0},
            )  # fmt: skip
            cell["asks_for_enum"] += bool(row.get("asks_for_enum", False))
            if row["answerable"]:
                cell["answerable"] += 1
                cell["answered"] += reason == "answerable"
                cell["named_answerable"] += named
                cell["fallback_answered"] += reason == "answerable" and not named
                if reason != "answerable":
                    cell["refusals_answerable"][reason] = cell["refusals_answerable"].get(reason, 0) + 1
            else:
                cell["out_of_kb"] += 1
                cell["refused"] += reason != "answerable"
                cell["named_out_of_kb"] += named
                cell["fallback_not_refused"] += reason == "answerable" and not named
        report[name] = dict(sorted(cells.items()))
        commit = code_commit()  # after the check has run: the modules it imported are known
        record = {
            "machine": machine(),
            "replayed": name,
            "code": commit,
            "command": f"python benchmarks/bench_answerability.py --replay {' '.join(names)}",
            "report": report[name],
            "reasons": reasons,
        }
        path = RESULTS / f"{name}-replay-{commit}.json"
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}")
        for key, cell in report[name].items():
            print(
                f"{name} {key}: answered {cell['answered']}/{cell['answerable']}, "
                f"refused {cell['refused']}/{cell['out_of_kb']}; refusals of answerable: {cell['refusals_answerable']}; "
                f"asks_for names a question word: {cell['named_answerable']}/{cell['answerable']} answerable, "
                f"{cell['named_out_of_kb']}/{cell['out_of_kb']} out-of-KB; passed with none named: "
                f"{cell['fallback_answered']} answerable, {cell['fallback_not_refused']} out-of-KB; "
                f"made with --asks-for-enum: {cell['asks_for_enum']}/{cell['answerable'] + cell['out_of_kb']}"
            )
    return report


GATE_KEEPS = (1.0, 0.95, 0.9)  # shares of the course's answerable gold questions a swept P(yes) threshold keeps


def gold_best_p_yes() -> dict[tuple[str, str], tuple[dict, float]]:
    """Every gold question as bench_gate.py measured it (gate.json, gate-packages.json) with its best P(yes) among its
    top 3: (corpus, id) -> (question, best P(yes)). It chooses the swept thresholds (the course's answerable ones) and
    stands in for the P(yes) of rows measured with `--no-p-yes` (their chunks are the grading loop's round one too;
    bench_gate's retrieval of 2 Dec may differ by a chunk)."""
    gold = {}
    for corpus, name in (("course", "gate.json"), ("packages", "gate-packages.json")):
        for q in json.loads((RESULTS / name).read_text(encoding="utf-8"))["questions"]:
            gold[(corpus, q["id"])] = (q, max(q["p_yes"][:3]))
    return gold


def gate_sweep(names: list[str]) -> dict:
    """The relevance gate in front of the code check, its P(yes) threshold swept (`--gate-sweep`; no model call):
    the shipped `DEFAULT_GATE` and thresholds that keep `GATE_KEEPS` of the course's answerable gold questions
    (chosen on gate.json, never on the rows scored). Per results and cell: answerable answered and out-of-KB refused
    by the check alone and by the gate then the check (`_pairs(row, "check+p_yes")`, as `shipped_gate` reads round
    one). Rows without P(yes) take bench_gate's (`gold_best_p_yes`); a row with neither is left out and counted.
    Writes RESULTS/answerability-gate-sweep.json."""
    from lessons.agents.grading import DEFAULT_GATE, GateThresholds

    gold = gold_best_p_yes()
    gates = {"DEFAULT_GATE": {language: DEFAULT_GATE[language].p_yes for language in ("en", "zh")}}
    for keep in GATE_KEEPS:
        gates[f"keeps {keep:.0%} of course gold"] = {}
        for language in ("en", "zh"):
            best = sorted(p for (corpus, _), (q, p) in gold.items()
                          if corpus == "course" and q["language"] == language and q["answerable"])  # fmt: skip
            gates[f"keeps {keep:.0%} of course gold"][language] = round(
                best[int((1 - keep) * len(best) + 1e-9)] - 1e-4, 4
            )
    swept = {"check alone": {"en": 0.0, "zh": 0.0}, **gates}
    report = {"gates": gates, "results": {}}
    for name in names:
        rows = json.loads((RESULTS / f"{name}-rows.json").read_text(encoding="utf-8"))
        subjects = {corpus: current_subject(corpus) for corpus in {row["corpus"] for row in rows.values()}}
        cells: dict = {}
        missing = 0
        for row in rows.values():
            stand_in = gold.get((row["corpus"], row["id"]))
            p_yes = row.get("p_yes") or ([stand_in[1]] if stand_in else None)
            if p_yes is None:
                missing += 1
                continue
            pairs = _pairs(verify({**row, "p_yes": p_yes}, subjects[row["corpus"]]), "check+p_yes")
            cells.setdefault((row["corpus"], row["language"]), ([], []))[0 if row["answerable"] else 1].append(pairs)
        result = {}
        for (corpus, language), (in_kb, out_kb) in cells.items():
            cell = result[f"{corpus}/{language}"] = {"answerable": len(in_kb), "out_of_kb": len(out_kb)}
            for gate, thresholds in swept.items():
                answered, refused, _ = _counts(in_kb, out_kb, GateThresholds(0.0, thresholds[language]))
                cell[gate] = {"answered": answered, "refused": refused}
        pooled = {kind: sum(cell[kind] for cell in result.values()) for kind in ("answerable", "out_of_kb")}
        pooled |= {gate: {count: sum(cell[gate][count] for cell in result.values()) for count in ("answered", "refused")}
                   for gate in swept}  # fmt: skip
        report["results"][name] = {"by_cell": result, "pooled": pooled, "rows_without_p_yes": missing,
                                   "p_yes_from": "the rows" if all(r.get("p_yes") for r in rows.values())
                                   else "bench_gate (gate.json, gate-packages.json)"}  # fmt: skip
        print(f"{name}: answered of {pooled['answerable']} answerable / refused of {pooled['out_of_kb']} out-of-KB"
              f" ({missing} rows without P(yes) left out)")  # fmt: skip
        for gate in swept:
            print(f"   {gate:28} {pooled[gate]['answered']:3} / {pooled[gate]['refused']:3}")
    save("answerability-gate-sweep", report)
    return report


def main() -> dict:

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=["course", "packages"], choices=("course", "packages"))
    parser.add_argument("--answerable", type=int, default=8, help="answerable questions per language and corpus")
    parser.add_argument("--out-of-kb", type=int, default=5, help="out-of-KB questions per language and corpus")
    parser.add_argument("--all", action="store_true", help="every gold question")
    parser.add_argument("--analyse-only", action="store_true", help="analyse the rows already measured")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (0: the dev sample)")
    parser.add_argument(
        "--exclude-dev", action="store_true", help=f"never draw a question of the dev rows ({NAME}-rows.json)"
    )
    parser.add_argument(
        "--exclude-rows", nargs="+", default=[], metavar="NAME", help="never draw a question of these results' rows"
    )
    parser.add_argument(
        "--near-misses",
        nargs="?",
        const="1",
        metavar="SET",
        help="out-of-KB questions from a held-out near-miss set of benchmarks/questions/ (1: near_miss_<corpus>.jsonl, "
        "2: near_miss_2_<corpus>.jsonl; never tuned on) instead of gold",
    )
    parser.add_argument(
        "--answerable-set",
        nargs="?",
        const="1",
        metavar="SET",
        help="answerable questions from a set of benchmarks/questions/ (1: answerable_<corpus>.jsonl, 3: "
        "answerable_3_<corpus>.jsonl; never tuned on) instead of gold",
    )
    parser.add_argument(
        "--replay",
        nargs="+",
        metavar="NAME",
        help="re-run the code check over these results' stored rows (no model call), print answered / refused and "
        "record it in NAME-replay-COMMIT.json",
    )
    parser.add_argument(
        "--gate-sweep",
        nargs="+",
        metavar="NAME",
        help="the relevance gate's P(yes) threshold swept in front of the code check over these results' rows (no "
        "model call) → answerability-gate-sweep.json",
    )
    parser.add_argument("--no-p-yes", action="store_true", help="do not read P(yes): only the check's one call")
    parser.add_argument(
        "--asks-for-enum",
        action="store_true",
        help="the judge's asks_for must be one of the question's spans (the check's asks_for_from_question option)",
    )
    parser.add_argument("--name", help=f"results name (default {NAME}, or {NAME}-heldout-seedN with --exclude-dev)")
    args = parser.parse_args()
    if args.replay:
        return replay(args.replay)
    if args.gate_sweep:
        return gate_sweep(args.gate_sweep)
    name = args.name or (f"{NAME}-heldout-seed{args.seed}" if args.exclude_dev else NAME)
    dev_path = RESULTS / f"{NAME}-rows.json"
    dev = frozenset(json.loads(dev_path.read_text())) if args.exclude_dev and dev_path.exists() else frozenset()
    for other in args.exclude_rows:
        dev |= frozenset(json.loads((RESULTS / f"{other}-rows.json").read_text()))
    path = RESULTS / f"{name}-rows.json"
    rows = json.loads(path.read_text()) if path.exists() else {}
    same_setting(rows, path, args.asks_for_enum)
    samples = {
        corpus: sample(
            questions_of(corpus, args.near_misses, args.answerable_set),
            args.answerable,
            args.out_of_kb,
            seed=args.seed,
            everything=args.all,
            exclude=frozenset(key.split(":", 1)[1] for key in dev if key.startswith(f"{corpus}:")),
        )
        for corpus in args.corpus
    }
    if not args.analyse_only:  # the corpora interleaved: a stopped run has measured both alike
        pairs = itertools.zip_longest(*[[(corpus, q) for q in questions] for corpus, questions in samples.items()])
        measure(
            [pair for group in pairs for pair in group if pair is not None],
            rows,
            path,
            p_yes=not args.no_p_yes,
            asks_for_enum=args.asks_for_enum,
        )
    samples = {corpus: [q.id for q in questions] for corpus, questions in samples.items()}
    subjects = {corpus: current_subject(corpus) for corpus in samples}
    measured = [verify(r, subjects[r["corpus"]]) for r in rows.values() if r["id"] in samples.get(r["corpus"], [])]
    results = {
        "sample": {
            "answerable_per_language": args.answerable,
            "out_of_kb_per_language": args.out_of_kb,
            "all": args.all,
            "seed": args.seed,
            "excludes_dev_rows": args.exclude_dev,
            "excludes_rows_of": args.exclude_rows,
            "near_misses": args.near_misses,
            "answerable_set": args.answerable_set,
            "ids": samples,
        },
        "settings": {"p_yes": not args.no_p_yes, "asks_for_enum": args.asks_for_enum},
        "min_abstention": MIN_ABSTENTION,
        "k": K,
        **analyse(measured),
        "questions": measured,
    }
    save(name, results)
    for name, entry in results["by_cell"].items():
        print(
            f"{name}: {entry['answerable']} answerable / {entry['out_of_kb']} out-of-KB; AUC "
            + ", ".join(f"{k} {v:.2f}" for k, v in entry["auc"].items() if v is not None)
        )
        if "shipped_gate" in entry:
            shipped = entry["shipped_gate"]
            print(
                f"   DEFAULT_GATE (P(yes) >= {shipped['gate']['p_yes']}) alone: {shipped['gate_alone']['counts']}; "
                f"then the check: {shipped['gate_then_check']['counts']}"
            )
        for signal in [s for s in SIGNALS if s in entry]:
            point, half = entry[signal]["in_sample"], entry[signal].get("held_out", {})
            print(
                f"   {signal:22s} in-sample: answered {point['first_round']:.2f}, refused {point['abstention']:.2f}"
                + (
                    f"; held-out: {half['first_round']:.2f} / {half['abstention']:.2f}"
                    f" ({half['splits_holding_abstention']:.0%} hold)"
                    if half
                    else ""
                )
            )
    return results


if __name__ == "__main__":
    main()
