"""Does the running service refuse what its documents do not say? `/v1/ask` measured over HTTP.

Starts the service the way a user does (`service.client.running_service`: `python -m service api` on 127.0.0.1, a
temporary folder, SQLite, embedded Chroma, the course's settings from this process's environment), uploads the files
of the corpus's knowledge base (`corpus_files`: data/corpus for "course", the READMEs MANIFEST.json lists for
"packages"), waits until they are indexed, then asks `/v1/ask` — one question at a time, as a client would — the held-out
questions `bench_answerability.py` measured the answerability check alone on: the answerable ones of
benchmarks/questions/answerable_<corpus>.jsonl and the out-of-KB near misses of near_miss_2_<corpus>.jsonl (both
languages; never tuned on). Per question: abstained, the answerability verdict in the reply (reason, quote, what was
missing; none when the relevance gate let no chunk through), the loop's rounds, seconds, and for an answer whether it
holds the gold answer's key figure (`key_figure`: its first figure, date or code-like term the question does not
already name; a plain code check, no judge).

Then per corpus and language: answerable answered and out-of-KB refused by the service, beside the answerability
check alone on the same questions (bench_answerability's stored rows, `CHECK_ALONE`, re-run through the code check as
it stands: `bench_answerability.verify`, no model call), how often the two agree, and why the service refused.
Rows are saved after every question (`<name>-rows.json`; a re-run asks only what is missing, against a fresh service);
`--minutes` stops asking when the time is up. The chat model is the course's (`get_chat_model()` in the service
process): the shared local llama.cpp server when one runs (the service registers as one more client, as a notebook
does), else it starts it. Seconds are indicative on a shared machine; the counts are the measurement.

    python benchmarks/bench_service_answers.py [--corpus course packages] [--minutes 55] [--name service-answers]
    python benchmarks/bench_service_answers.py --analyse-only
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, save

NAME = "service-answers"
NEAR_MISSES = "2"  # benchmarks/questions/near_miss_2_<corpus>.jsonl
CHECK_ALONE = ("answerability-fresh", "answerability-nearmiss2-seed3")  # bench_answerability results, first one first
KEY_KINDS = ("figure", "date", "quarter", "year")  # of lessons.agents.answerability.Specific
_TERM = re.compile(r"[\w./@:-]*[A-Za-z][\w./@:-]*")
_CODE_LIKE = re.compile(r"[a-z][A-Z]|[_./@]|\w-\w")  # CamelCase, snake_case, dotted, a path, a mail, hyphenated


def held_out_questions(corpus: str) -> list:
    """The corpus's held-out answerable questions and near misses, interleaved per language (en answerable, en out-of-KB,
    zh answerable, zh out-of-KB, …) so that a stopped run has measured every cell alike."""
    from benchmarks.bench_answerability import questions_of, sample

    return sample(questions_of(corpus, NEAR_MISSES, answerable_set=True), 0, 0, everything=True)


def key_figure(question: str, gold_answer: str) -> dict | None:
    """What an answer to `question` must state to hold `gold_answer`'s key fact: the gold answer's first figure, date,
    quarter or code-like term (CamelCase, snake_case, dotted, a path: `/readyz`) that the question does not name
    already, years only when nothing else is left; None when the gold answer has none (a plain-words answer)."""
    from lessons.agents.answerability import question_specifics
    from lessons.text.normalise import normalise_for_match

    text = normalise_for_match(gold_answer)
    asked = {form for s in question_specifics(question) for form in s.forms}
    asked_text = normalise_for_match(question).casefold()
    found = []
    for specific in question_specifics(gold_answer):
        if specific.kind in KEY_KINDS and not asked.intersection(specific.forms):
            found.append((specific.kind == "year", _position(text, specific.text), specific.kind, specific.text))
    for match in _TERM.finditer(text):
        term = match.group().rstrip(".,:;-/")
        if _CODE_LIKE.search(term) and term.casefold() not in asked_text:
            found.append((False, match.start(), "term", term))
    if not found:
        return None
    _year, _start, kind, shown = min(found)
    return {"kind": kind, "text": shown}


def _position(text: str, part: str) -> int:
    """Where `part` starts in `text` as a whole figure ("02" is not inside "2026"); the end when nowhere."""
    match = re.search(rf"(?<![\w.]){re.escape(part)}(?![\d])", text)
    return match.start() if match else len(text)


def holds_key_figure(answer: str, key: dict) -> bool:
    """Whether `answer` states `key` (from `key_figure`): a figure by value ("1,930" is 1930), a date or quarter in
    any of its forms (29 October, 10月29日, -10-29), a term as written (case aside)."""
    from lessons.agents.answerability import Specific, occurs, question_specifics
    from lessons.agents.claim_check import figures
    from lessons.text.normalise import normalise_for_match

    if key["kind"] == "term":
        return key["text"].casefold() in normalise_for_match(answer).casefold()
    if key["kind"] == "figure":
        return figures(key["text"])[0] in figures(answer)
    specific = next((s for s in question_specifics(key["text"]) if s.kind == key["kind"]), None)
    specific = specific or Specific(key["text"], (key["text"].casefold(),), key["kind"])
    return occurs(specific, normalise_for_match(answer).casefold())


def check_alone(names: tuple[str, ...] = CHECK_ALONE, results: Path = RESULTS) -> dict[str, dict]:
    """The answerability check alone on each stored question (`corpus:id` → name of the results → its reason), re-run
    through the code check as it stands over bench_answerability's stored rows (judge quotes and chunks; no model call)."""
    from benchmarks.bench_answerability import verify

    verdicts: dict[str, dict] = {}
    for name in names:
        path = results / f"{name}-rows.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: no stored rows — run benchmarks/bench_answerability.py --name {name} first"
            )
        for key, row in json.loads(path.read_text(encoding="utf-8")).items():
            verdicts.setdefault(key, {})[name] = verify(row)["reason"]
    return verdicts


def refusal_cause(row: dict) -> str:
    """Why the service abstained, from its reply: the answerability check's reason; "relevance gate" when the gate let
    no chunk through (the check never ran); "no answer drafted" when the check passed but the writer found none."""
    verdict = row.get("answerability")
    if verdict is None:
        return "relevance gate"
    return "no answer drafted" if verdict["reason"] == "answerable" else verdict["reason"]


def summarise(rows: list[dict], alone: dict[str, dict], names: tuple[str, ...] = CHECK_ALONE) -> dict:
    """Per corpus and language: the service's answered / refused counts beside the check alone's on the same questions
    (the first of `names` that stored the question), their agreement, the service's refusal causes, key figures held."""
    cells: dict[str, dict] = {}
    for row in rows:
        if row.get("error"):
            continue
        cell = cells.setdefault(f"{row['corpus']}/{row['language']}", {
            "answerable": 0, "answered": 0, "answered in round one": 0, "key figure checked": 0, "key figure held": 0,
            "out_of_kb": 0, "refused": 0, "check alone: answerable measured": 0, "check alone: answered": 0,
            "check alone: out_of_kb measured": 0, "check alone: refused": 0,
            "both answer": 0, "both refuse": 0, "only the service refuses": 0, "only the check refuses": 0,
            "service refusals, answerable": {}, "service refusals, out_of_kb": {}, "service seconds": [],
        })  # fmt: skip
        kind = "answerable" if row["answerable"] else "out_of_kb"
        cell[kind] += 1
        cell["service seconds"].append(row["seconds"])
        if row["abstained"]:
            cause = refusal_cause(row)
            cell[f"service refusals, {kind}"][cause] = cell[f"service refusals, {kind}"].get(cause, 0) + 1
        if row["answerable"]:
            cell["answered"] += not row["abstained"]
            cell["answered in round one"] += not row["abstained"] and row.get("rounds") == 1
            if not row["abstained"] and row["key_figure"] is not None:
                cell["key figure checked"] += 1
                cell["key figure held"] += bool(row["key_figure_held"])
        else:
            cell["refused"] += row["abstained"]
        reason = next((alone[row["key"]][n] for n in names if n in alone.get(row["key"], {})), None)
        if reason is None:
            continue
        check_answers = reason == "answerable"
        cell[f"check alone: {kind} measured"] += 1
        cell["check alone: answered" if row["answerable"] else "check alone: refused"] += (
            check_answers if row["answerable"] else not check_answers
        )
        both = {(False, True): "both answer", (True, False): "both refuse"}
        pair = (row["abstained"], check_answers)
        cell[both.get(pair, "only the service refuses" if row["abstained"] else "only the check refuses")] += 1
    for cell in cells.values():
        seconds = sorted(cell.pop("service seconds"))
        cell["median seconds per question"] = seconds[len(seconds) // 2] if seconds else None
    return dict(sorted(cells.items()))


def corpus_files(corpus: str) -> list[Path]:
    """The files of the corpus's knowledge base, as `load_corpus` reads them: those its `MANIFEST.json` lists (the
    package READMEs), else every file of the folder."""
    from lessons.ingest.corpus import corpus_folder, manifest_files

    folder = corpus_folder(corpus)
    listed = manifest_files(folder)
    return sorted(listed if listed is not None else (p for p in folder.iterdir() if p.is_file() and p.name[0] != "."))


def ask_all(corpus: str, questions: list, rows: dict, path: Path, deadline: float) -> dict:
    """Start the service, upload the corpus, wait for it to be indexed, ask each question not in `rows` (saved after
    each) until `deadline` (time.monotonic()). What the run saw: the upload's jobs and seconds, the model server."""
    import httpx

    from lessons.core.local_server import server_status
    from service.client import running_service

    todo = [q for q in questions if f"{corpus}:{q.id}" not in rows]
    run: dict = {"corpus": corpus, "questions asked": 0, "model server before": server_status()}
    if not todo:
        return run
    paths = corpus_files(corpus)
    started = time.perf_counter()
    with running_service() as service, service.client() as client:
        run["service start seconds"] = round(time.perf_counter() - started, 1)
        uploads = client.upload_files(paths, progress=False)
        jobs = client.wait([u.job_id for u in uploads], timeout=1800, every=1.0)
        run.update({"files uploaded": len(paths), "jobs done": sum(j.status == "done" for j in jobs.values()),
                    "failed": {j.file_name: j.error for j in jobs.values() if j.status != "done"},
                    "chunks indexed": client.index().get("total"),
                    "seconds until indexed": round(time.perf_counter() - started, 1)})  # fmt: skip
        print(run, flush=True)
        for question in todo:
            if time.monotonic() > deadline:
                run["stopped"] = "the time given (--minutes) was up"
                break
            key = f"{corpus}:{question.id}"
            asked = time.perf_counter()
            try:
                reply = client.ask(question.question)
            except (httpx.HTTPError, RuntimeError) as error:  # a 503 (model down) or a timeout: recorded, not a refusal
                rows[key] = {"key": key, "corpus": corpus, "id": question.id, "error": str(error)[:500]}
                path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
                continue
            rows[key] = row(corpus, question, reply, time.perf_counter() - asked)
            run["questions asked"] += 1
            path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
            shown = "abstained: " + refusal_cause(rows[key]) if reply["abstained"] else "answered"
            print(f"{key} ({'answerable' if question.answerable else 'out-of-KB'}): {shown}, "
                  f"{rows[key]['seconds']} s", flush=True)  # fmt: skip
    run["model server after"] = server_status()
    return run


def row(corpus: str, question, reply: dict, seconds: float) -> dict:
    """One question's measurement from its `/v1/ask` reply."""
    key = key_figure(question.question, question.answer) if question.answerable else None
    verdict = reply.get("answerability")
    return {
        "key": f"{corpus}:{question.id}",
        "corpus": corpus,
        "id": question.id,
        "language": question.language,
        "answerable": question.answerable,
        "question": question.question,
        "gold_answer": question.answer,
        "abstained": bool(reply["abstained"]),
        "answer": reply["answer"],
        "rounds": reply.get("rounds"),
        "answerability": None if verdict is None else {k: verdict.get(k) for k in ("reason", "quote", "missing")},
        "key_figure": key,
        "key_figure_held": None if key is None or reply["abstained"] else holds_key_figure(reply["answer"], key),
        "cited": [c.get("source") for c in reply.get("citations", [])],
        "context": [(c["metadata"].get("source"), c["text"][:200]) for c in reply.get("context", [])],
        "seconds": round(seconds, 1),
    }


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=["course"], choices=("course", "packages"))
    parser.add_argument("--minutes", type=float, default=60.0, help="stop asking new questions after this long")
    parser.add_argument("--analyse-only", action="store_true", help="summarise the rows already measured")
    parser.add_argument("--name", default=NAME, help=f"results name (default {NAME})")
    args = parser.parse_args()
    path = RESULTS / f"{args.name}-rows.json"
    rows = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    questions = {corpus: held_out_questions(corpus) for corpus in args.corpus}
    runs = []
    if not args.analyse_only:
        deadline = time.monotonic() + 60 * args.minutes
        runs = [ask_all(corpus, questions[corpus], rows, path, deadline) for corpus in args.corpus]
    measured = [r for corpus in args.corpus for q in questions[corpus] if (r := rows.get(f"{corpus}:{q.id}"))]
    alone = check_alone()
    results = {
        "questions": {c: f"answerable_{c}.jsonl + near_miss_{NEAR_MISSES}_{c}.jsonl" for c in args.corpus},
        "check alone from": list(CHECK_ALONE),
        "runs": runs,
        "by_cell": summarise(measured, alone),
        "not asked": [f"{c}:{q.id}" for c in args.corpus for q in questions[c] if f"{c}:{q.id}" not in rows],
        "errors": [r for r in measured if r.get("error")],
        "rows": [{**r, "check alone": alone.get(r["key"], {})} for r in measured if not r.get("error")],
    }
    save(args.name, results)
    for name, cell in results["by_cell"].items():
        print(f"{name}: service answered {cell['answered']}/{cell['answerable']} (check alone "
              f"{cell['check alone: answered']}/{cell['check alone: answerable measured']}), refused "
              f"{cell['refused']}/{cell['out_of_kb']} (check alone {cell['check alone: refused']}/"
              f"{cell['check alone: out_of_kb measured']}); key figure held {cell['key figure held']}/"
              f"{cell['key figure checked']}")  # fmt: skip
    return results


if __name__ == "__main__":
    main()
