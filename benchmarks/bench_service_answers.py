"""Does the running service refuse what its documents do not say? `/v1/ask` measured over HTTP — and notebook 05's
three agents on the same questions.

Starts the service the way a user does (`service.client.running_service`: `python -m service api` on 127.0.0.1, a
temporary folder, SQLite, embedded Chroma, the course's settings from this process's environment), uploads the files
of the corpus's knowledge base (`corpus_files`: data/corpus for "course", the READMEs MANIFEST.json lists for
"packages"), waits until they are indexed, then asks `/v1/ask` — one question at a time, as a client would — the held-out
questions `bench_answerability.py` measured the answerability check alone on (`--set`, `SETS`): set 1, the answerable
ones of benchmarks/questions/answerable_<corpus>.jsonl and the out-of-KB near misses of near_miss_2_<corpus>.jsonl;
set 8, answerable_8_<corpus>.jsonl and near_miss_8_<corpus>.jsonl (both languages; never tuned on). Per question:
abstained, the answerability verdict in the reply (reason, quote, what was missing; none when the relevance gate let
no chunk through), the loop's rounds and the gate's report, seconds, the model server's calls and tokens for it (read
from its log: `bench_notebooks.server_tokens`), and for an answer whether it holds the gold answer's key figure
(`key_figure`: its first figure, date or code-like term the question does not already name; a plain code check, no
judge).

`--pipeline three-agents` asks notebook 05's workflow instead (relevance checker, research agent, the answerability
check on the first draft, verification agent), in this process, as notebook 06 and the evaluation command build it:
the registry's "three-agents" (`lessons.agents.pipelines`) over `load_knowledge_base(corpus)`. The same rows, plus
the workflow's outcome (an answer the verifier still rejected at the cap is "unverified", not a refusal), the relevance
checker's label and the calls and tokens `lessons.core.usage.metered` counted. "service" in the summary's keys is
the pipeline measured.

Then per corpus and language: answerable answered and out-of-KB refused, beside the answerability check alone on the
same questions (bench_answerability's stored rows of the set, re-run through the code check as it stands:
`bench_answerability.verify`, no model call), how often the two agree, why the pipeline refused (the check's reason;
"relevance gate": the gate or the relevance checker let nothing on to the check; "no answer drafted": the model said
the chunks do not answer) and the calls and tokens per question. Rows are saved after every question
(`<name>-rows.json`; a re-run asks only what is missing, against a fresh service); `--minutes` stops asking when the
time is up, shared equally by the corpora for the service (one service per corpus), the corpora interleaved for the
three agents. The chat model is the course's (`get_chat_model()`): the local llama.cpp server of the course's cache
folder when one runs (the service registers as one more client, as a notebook does), else it starts it. Seconds are
indicative on a shared machine; the counts are the measurement.

    python benchmarks/bench_service_answers.py [--corpus course packages] [--set 1|8] [--minutes 55] [--name NAME]
    python benchmarks/bench_service_answers.py --pipeline three-agents --set 8 --corpus course packages
    python benchmarks/bench_service_answers.py --analyse-only [--set 8] [--pipeline three-agents]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, save

NAME = "service-answers"
PIPELINES = {"service": NAME, "three-agents": "three-agents-answers"}  # what is asked → its results' name
SETS = {  # --set → (answerable questions, near misses, bench_answerability's results on them, first one first)
    "1": ("1", "2", ("answerability-fresh", "answerability-nearmiss2-seed3")),
    "8": ("8", "8", ("answerability-fresh8-old",)),  # made without --asks-for-enum, the check's default
}
KEY_KINDS = ("figure", "date", "quarter", "year")  # of lessons.agents.answerability.Specific
_TERM = re.compile(r"[\w./@:-]*[A-Za-z][\w./@:-]*")
_CODE_LIKE = re.compile(r"[a-z][A-Z]|[_./@]|\w-\w")  # CamelCase, snake_case, dotted, a path, a mail, hyphenated


def results_name(pipeline: str = "service", question_set: str = "1") -> str:
    """The results' default name: the pipeline's, and the set's number for any set but the first."""
    return PIPELINES[pipeline] if question_set == "1" else f"{PIPELINES[pipeline]}-set{question_set}"


def held_out_questions(corpus: str, question_set: str = "1") -> list:
    """The corpus's held-out answerable questions and near misses of `question_set` (`SETS`), interleaved per language
    (en answerable, en out-of-KB, zh answerable, zh out-of-KB, …) so that a stopped run has measured every cell
    alike."""
    from benchmarks.bench_answerability import questions_of, sample

    answerable, near_misses, _ = SETS[question_set]
    return sample(questions_of(corpus, near_misses, answerable_set=answerable), 0, 0, everything=True)


def question_files(corpus: str, question_set: str = "1") -> str:
    """The files of benchmarks/questions/ the set asks from."""
    answerable, near_misses, _ = SETS[question_set]
    first = f"answerable_{corpus}.jsonl" if answerable == "1" else f"answerable_{answerable}_{corpus}.jsonl"
    return f"{first} + near_miss_{near_misses}_{corpus}.jsonl"


def interleaved(questions: dict[str, list]) -> list[tuple[str, object]]:
    """(corpus, question) pairs, the corpora taken in turn: a stopped run has measured each alike."""
    pairs = itertools.zip_longest(*[[(corpus, q) for q in asked] for corpus, asked in questions.items()])
    return [pair for group in pairs for pair in group if pair is not None]


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


def check_alone(names: tuple[str, ...] = SETS["1"][2], results: Path = RESULTS) -> dict[str, dict]:
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
    """Why the pipeline abstained: the answerability check's reason; "relevance gate" when the service's gate let no
    chunk through or the three agents' relevance checker said NO_MATCH (the check never ran); "no answer drafted" when
    the model said the chunks do not answer (the service's writer, the three agents' research agent)."""
    verdict = row.get("answerability")
    if verdict is None:
        return "relevance gate" if row.get("relevance") in (None, "NO_MATCH") else "no answer drafted"
    return "no answer drafted" if verdict["reason"] == "answerable" else verdict["reason"]


USAGE = ("server_calls", "prompt_tokens_evaluated", "prompt_tokens_reused", "generated_tokens", "calls", "tokens")


def summarise(rows: list[dict], alone: dict[str, dict], names: tuple[str, ...] = SETS["1"][2]) -> dict:
    """Per corpus and language: the pipeline's answered / refused counts beside the check alone's on the same questions
    (the first of `names` that stored the question), their agreement, the pipeline's refusal causes, key figures held,
    answers the three agents' verifier still rejected ("answered, unverified") and the calls and tokens per question
    (`USAGE`, over the rows that recorded them)."""
    cells: dict[str, dict] = {}
    usage: dict[str, dict[str, list]] = {}
    for row in rows:
        if row.get("error"):
            continue
        cell = cells.setdefault(f"{row['corpus']}/{row['language']}", {
            "answerable": 0, "answered": 0, "answered in round one": 0, "answered, unverified": 0,
            "key figure checked": 0, "key figure held": 0,
            "out_of_kb": 0, "refused": 0, "check alone: answerable measured": 0, "check alone: answered": 0,
            "check alone: out_of_kb measured": 0, "check alone: refused": 0,
            "both answer": 0, "both refuse": 0, "only the service refuses": 0, "only the check refuses": 0,
            "service refusals, answerable": {}, "service refusals, out_of_kb": {}, "service seconds": [],
        })  # fmt: skip
        spent = usage.setdefault(f"{row['corpus']}/{row['language']}", {k: [] for k in USAGE})
        for k in USAGE:
            if (row.get("usage") or {}).get(k) is not None:
                spent[k].append(row["usage"][k])
        kind = "answerable" if row["answerable"] else "out_of_kb"
        cell[kind] += 1
        cell["service seconds"].append(row["seconds"])
        cell["answered, unverified"] += not row["abstained"] and row.get("outcome") == "unverified"
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
    for name, cell in cells.items():
        seconds = sorted(cell.pop("service seconds"))
        cell["median seconds per question"] = seconds[len(seconds) // 2] if seconds else None
        cell["per question"] = {k: round(sum(v) / len(v), 1) for k, v in usage[name].items() if v}
    return dict(sorted(cells.items()))


def corpus_files(corpus: str) -> list[Path]:
    """The files of the corpus's knowledge base, as `load_corpus` reads them: those its `MANIFEST.json` lists (the
    package READMEs), else every file of the folder."""
    from lessons.ingest.corpus import corpus_folder, manifest_files

    folder = corpus_folder(corpus)
    listed = manifest_files(folder)
    return sorted(listed if listed is not None else (p for p in folder.iterdir() if p.is_file() and p.name[0] != "."))


def _save(rows: dict, path: Path) -> None:
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")


def _shown(key: str, question, measured: dict) -> str:
    shown = "abstained: " + refusal_cause(measured) if measured["abstained"] else "answered"
    spent = measured.get("usage") or {}
    return (f"{key} ({'answerable' if question.answerable else 'out-of-KB'}): {shown}, {measured['seconds']} s, "
            f"{spent.get('server_calls')} server calls")  # fmt: skip


def ask_all(corpus: str, questions: list, rows: dict, path: Path, deadline: float) -> dict:
    """Start the service, upload the corpus, wait for it to be indexed, ask each question not in `rows` (saved after
    each) until `deadline` (time.monotonic()). What the run saw: the upload's jobs and seconds, the model server."""
    import httpx

    from benchmarks.bench_notebooks import server_log_since, server_tokens
    from lessons.core.local_server import server_status
    from service.client import running_service

    todo = [q for q in questions if f"{corpus}:{q.id}" not in rows]
    run: dict = {"pipeline": "service", "corpus": corpus, "questions asked": 0, "model server before": server_status()}
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

        def ask(_corpus: str, question, offset: int) -> tuple[dict, dict]:
            reply = client.ask(question.question)
            return reply, server_tokens(server_log_since(offset))  # the service's calls: the server's log is all we see

        # a 503 (model down) or a timeout: recorded, not a refusal
        _ask_each([(corpus, q) for q in todo], rows, path, deadline, run, ask, (httpx.HTTPError, RuntimeError))
    run["model server after"] = server_status()
    return run


def pipeline_reply(result) -> dict:
    """A registry pipeline's `PipelineResult` (the three agents': `details` with rounds, the check's verdict, outcome,
    relevance label, citations) as the fields of a `/v1/ask` reply that `row` reads, plus the outcome and the label."""
    details = result.details
    verdict = details.get("check")
    return {
        "answer": result.answer,
        "abstained": result.abstained,
        "rounds": details.get("rounds"),
        "answerability": None if verdict is None else {"reason": verdict.reason, "quote": verdict.quote,
                                                       "missing": list(verdict.missing)},
        "citations": [{"source": c.source} for c in details.get("citations", [])],
        "context": [{"metadata": d.metadata, "text": d.page_content} for d in result.retrieved],
        "outcome": details.get("outcome"),
        "relevance": details.get("relevance"),
    }  # fmt: skip


def answer_all(questions: dict[str, list], rows: dict, path: Path, deadline: float) -> dict:
    """Notebook 05's three agents in this process, built as notebook 06 and the evaluation command build them (the
    registry's "three-agents" over `load_knowledge_base(corpus)`), on each question not in `rows` (saved after each),
    the corpora interleaved, until `deadline` (time.monotonic()). Each row's `usage`: the model server's calls and
    tokens (its log, as for the service) and the calls and tokens `metered` counted (cached answers included)."""
    import openai

    from benchmarks.bench_notebooks import server_log_since, server_tokens
    from lessons.agents.pipelines import PIPELINES as REGISTRY
    from lessons.agents.pipelines import Resources
    from lessons.core import get_chat_model
    from lessons.core.local_server import server_status
    from lessons.core.usage import metered
    from lessons.retrieval.index import load_knowledge_base

    todo = [(corpus, q) for corpus, q in interleaved(questions) if f"{corpus}:{q.id}" not in rows]
    run: dict = {"pipeline": "three-agents", "questions asked": 0, "model server before": server_status()}
    if not todo:
        return run
    started, llm, pipelines = time.perf_counter(), get_chat_model(), {}
    for corpus in dict.fromkeys(corpus for corpus, _ in todo):
        chunks, store = load_knowledge_base(corpus)
        resources = Resources(chunks=chunks, store=store, llm=llm, progress=False)
        pipelines[corpus] = REGISTRY["three-agents"].build(resources)
        run[f"{corpus} chunks"] = len(chunks)
    run["seconds until built"] = round(time.perf_counter() - started, 1)
    print(run, flush=True)

    def ask(corpus: str, question, offset: int) -> tuple[dict, dict]:
        with metered() as meter:
            result = pipelines[corpus](question.question)
        spent = meter.totals
        usage = {**server_tokens(server_log_since(offset)), "calls": spent.all_calls,
                 "cached_calls": spent.cached_calls, "tokens": spent.pipeline_tokens}  # fmt: skip
        return pipeline_reply(result), usage

    # the server down, a reply never valid
    _ask_each(todo, rows, path, deadline, run, ask, (RuntimeError, OSError, openai.OpenAIError), "three-agents")
    run["model server after"] = server_status()
    return run


def _ask_each(todo, rows: dict, path: Path, deadline: float, run: dict, ask, errors, pipeline: str = "service") -> None:
    """Ask each (corpus, question) of `todo` through `ask(corpus, question, server log offset) -> (reply, usage)` until
    `deadline` (time.monotonic()): each row saved as it comes, an error in `errors` recorded as the row, not a refusal."""
    from benchmarks.bench_notebooks import server_log_size

    for corpus, question in todo:
        if time.monotonic() > deadline:
            run["stopped"] = "the time given (--minutes) was up"
            break
        key = f"{corpus}:{question.id}"
        asked = time.perf_counter()
        try:
            reply, usage = ask(corpus, question, server_log_size())
        except errors as error:
            rows[key] = {"key": key, "corpus": corpus, "id": question.id, "error": str(error)[:500]}
            _save(rows, path)
            continue
        rows[key] = row(corpus, question, reply, time.perf_counter() - asked, usage, pipeline)
        run["questions asked"] += 1
        _save(rows, path)
        print(_shown(key, question, rows[key]), flush=True)


def row(
    corpus: str, question, reply: dict, seconds: float, usage: dict | None = None, pipeline: str = "service"
) -> dict:
    """One question's measurement from its `/v1/ask` reply (or `pipeline_reply`'s); `usage`: its calls and tokens."""
    key = key_figure(question.question, question.answer) if question.answerable else None
    verdict = reply.get("answerability")
    return {
        "key": f"{corpus}:{question.id}",
        "pipeline": pipeline,
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
        "outcome": reply.get("outcome"),
        "relevance": reply.get("relevance"),
        "gate": reply.get("gate"),
        "key_figure": key,
        "key_figure_held": None if key is None or reply["abstained"] else holds_key_figure(reply["answer"], key),
        "cited": [c.get("source") for c in reply.get("citations", [])],
        "context": [(c["metadata"].get("source"), c["text"][:200]) for c in reply.get("context", [])],
        "seconds": round(seconds, 1),
        "usage": usage,
    }


def same_pipeline(rows: dict, path: Path, pipeline: str) -> None:
    """Raise when `rows` (read from `path`) hold another pipeline's answers (rows written before the option: the
    service's): one results file measures one pipeline."""
    other = [key for key, r in rows.items() if r.get("pipeline", "service") != pipeline]
    if other:
        raise ValueError(f"{path}: {len(other)} rows (e.g. {other[0]}) measured another pipeline than {pipeline!r} — "
                         f"give this run another --name")  # fmt: skip


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=["course"], choices=("course", "packages"))
    parser.add_argument("--set", default="1", choices=sorted(SETS), dest="question_set",
                        help="the held-out questions: 1 (answerable_<corpus> + near_miss_2_<corpus>) or 8 "
                             "(answerable_8_<corpus> + near_miss_8_<corpus>)")  # fmt: skip
    parser.add_argument("--pipeline", default="service", choices=sorted(PIPELINES),
                        help="service: /v1/ask over HTTP; three-agents: notebook 05 in-process")  # fmt: skip
    parser.add_argument("--minutes", type=float, default=60.0, help="stop asking new questions after this long")
    parser.add_argument("--analyse-only", action="store_true", help="summarise the rows already measured")
    parser.add_argument("--name", help="results name (default: the pipeline's and the set's, `results_name`)")
    args = parser.parse_args()
    name = args.name or results_name(args.pipeline, args.question_set)
    path = RESULTS / f"{name}-rows.json"
    rows = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    same_pipeline(rows, path, args.pipeline)
    questions = {corpus: held_out_questions(corpus, args.question_set) for corpus in args.corpus}
    runs = []
    if not args.analyse_only:
        end = time.monotonic() + 60 * args.minutes
        if args.pipeline == "three-agents":
            runs = [answer_all(questions, rows, path, end)]
        else:  # one service per corpus, each given an equal share of the time left
            for left, corpus in zip(range(len(args.corpus), 0, -1), args.corpus):
                now = time.monotonic()
                runs.append(ask_all(corpus, questions[corpus], rows, path, now + (end - now) / left))
    measured = [r for corpus in args.corpus for q in questions[corpus] if (r := rows.get(f"{corpus}:{q.id}"))]
    names = SETS[args.question_set][2]
    alone = check_alone(names)
    results = {
        "pipeline": args.pipeline,
        "questions": {c: question_files(c, args.question_set) for c in args.corpus},
        "check alone from": list(names),
        "runs": runs,
        "by_cell": summarise(measured, alone, names),
        "not asked": [f"{c}:{q.id}" for c in args.corpus for q in questions[c] if f"{c}:{q.id}" not in rows],
        "errors": [r for r in measured if r.get("error")],
        "rows": [{**r, "check alone": alone.get(r["key"], {})} for r in measured if not r.get("error")],
    }
    save(name, results)
    for cell_name, cell in results["by_cell"].items():
        print(f"{cell_name}: {args.pipeline} answered {cell['answered']}/{cell['answerable']} (check alone "
              f"{cell['check alone: answered']}/{cell['check alone: answerable measured']}), refused "
              f"{cell['refused']}/{cell['out_of_kb']} (check alone {cell['check alone: refused']}/"
              f"{cell['check alone: out_of_kb measured']}); key figure held {cell['key figure held']}/"
              f"{cell['key figure checked']}; per question {cell['per question']}")  # fmt: skip
    return results


if __name__ == "__main__":
    main()
