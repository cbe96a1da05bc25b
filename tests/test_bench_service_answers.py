"""The service-over-HTTP answerability benchmark's pure parts (benchmarks/bench_service_answers.py): which questions it
asks, the gold answer's key figure and whether an answer holds it, and how it counts the service against the check."""

from __future__ import annotations

import pytest

from benchmarks.bench_service_answers import (
    check_alone,
    corpus_files,
    held_out_questions,
    holds_key_figure,
    interleaved,
    key_figure,
    pipeline_reply,
    refusal_cause,
    results_name,
    row,
    same_pipeline,
    summarise,
)


def test_it_asks_the_held_out_answerable_questions_and_near_misses_of_both_languages_interleaved():
    questions = held_out_questions("course")
    assert len(questions) == 40 and len({q.id for q in questions}) == 40
    assert sum(q.answerable for q in questions) == 20
    assert all(q.id.startswith("ans-course-") == q.answerable for q in questions)
    assert all(q.id.startswith("nm2-course-") for q in questions if not q.answerable)
    first = [(q.language, q.answerable) for q in questions[:4]]
    assert first == [("en", True), ("en", False), ("zh", True), ("zh", False)]


@pytest.mark.parametrize(
    ("question", "gold", "kind", "text"),
    [
        ("How many paying Enterprise customers did Tidewell have at 30 June 2026?",
         "19 (rising to 23 at 30 September 2026).", "figure", "19"),  # the first figure, not a later date
        ("Atlas 4.0.1 补丁版是哪天发布的？", "2026 年 2 月 17 日（2026-02-17）。", "date", "2 月 17 日"),  # not "02" of 2026
        ("Which Atlas health endpoint should I point my load balancer at?",
         "/readyz, which returns 200 only when the index is loaded.", "term", "/readyz"),
        ("How many active Starter workspaces were there at the end of September 2026?",
         "1,930 active Starter workspaces at the end of September 2026.", "figure", "1,930"),  # 2026 is asked
        ("《数据安全与合规制度》从哪年开始生效？", "自 2026 年起生效。", "year", "2026"),  # a year when nothing else is left
    ],
)  # fmt: skip
def test_the_key_figure_is_the_gold_answers_first_figure_date_or_term_the_question_does_not_name(
    question, gold, kind, text
):
    assert key_figure(question, gold) == {"kind": kind, "text": text}


def test_a_plain_words_answer_has_no_key_figure():
    assert key_figure("Do service accounts count as licence users?", "No, they do not count.") is None


@pytest.mark.parametrize(
    ("key", "answer", "held"),
    [
        ({"kind": "figure", "text": "1,930"}, "There were 1930 active workspaces.", True),
        ({"kind": "figure", "text": "1,930"}, "There were 1,390 active workspaces.", False),
        ({"kind": "figure", "text": "14"}, "At least 140 characters.", False),
        ({"kind": "date", "text": "29 October"}, "下次评审会在 10 月 29 日。", True),
        ({"kind": "date", "text": "29 October"}, "The next review is on 28 October.", False),
        ({"kind": "term", "text": "/readyz"}, "Point it at /READYZ.", True),
        ({"kind": "term", "text": "/readyz"}, "Point it at /healthz.", False),
    ],
)
def test_an_answer_holds_the_key_figure_in_any_of_its_forms_and_only_then(key, answer, held):
    assert holds_key_figure(answer, key) is held


def test_every_held_out_gold_answer_holds_its_own_key_figure():
    for corpus in ("course", "packages"):
        for question in [q for q in held_out_questions(corpus) if q.answerable]:
            key = key_figure(question.question, question.answer)
            assert key is None or holds_key_figure(question.answer, key), question.id


def test_a_refusal_names_the_gate_the_check_or_the_writer():
    assert refusal_cause({"answerability": None}) == "relevance gate"
    assert refusal_cause({"answerability": {"reason": "specifics missing"}}) == "specifics missing"
    assert refusal_cause({"answerability": {"reason": "answerable"}}) == "no answer drafted"


def _row(key: str, language: str, answerable: bool, abstained: bool, **extra) -> dict:
    corpus, _id = key.split(":")
    return {"key": key, "corpus": corpus, "id": _id, "language": language, "answerable": answerable,
            "abstained": abstained, "seconds": 10.0, "rounds": 1, "answerability": None, "key_figure": None,
            "key_figure_held": None, **extra}  # fmt: skip


def test_summary_counts_the_service_beside_the_check_alone_on_the_same_questions():
    rows = [
        _row("course:a1", "en", True, False, key_figure={"kind": "figure", "text": "14"}, key_figure_held=True),
        _row(
            "course:a2", "en", True, False, rounds=2, key_figure={"kind": "figure", "text": "3"}, key_figure_held=False
        ),
        _row("course:a3", "en", True, True, answerability={"reason": "specifics missing"}),
        _row("course:n1", "en", False, True),
        _row("course:n2", "en", False, False, answerability={"reason": "answerable"}),
        _row("course:n3", "zh", False, True, answerability={"reason": "answerable"}),
        {"key": "course:e1", "corpus": "course", "error": "HTTP 503"},  # not counted
    ]
    alone = {
        "course:a1": {"fresh": "answerable"},
        "course:a2": {"fresh": "specifics missing"},
        "course:a3": {"fresh": "answerable"},
        "course:n1": {"fresh": "answerable", "seed3": "specifics missing"},  # the first name counts
        "course:n2": {"seed3": "specifics missing"},  # only the second stored it
    }
    cells = summarise(rows, alone, names=("fresh", "seed3"))
    en = cells["course/en"]
    assert (en["answerable"], en["answered"], en["answered in round one"]) == (3, 2, 1)
    assert (en["key figure checked"], en["key figure held"]) == (2, 1)
    assert (en["out_of_kb"], en["refused"]) == (2, 1)
    assert (en["check alone: answerable measured"], en["check alone: answered"]) == (3, 2)
    assert (en["check alone: out_of_kb measured"], en["check alone: refused"]) == (2, 1)
    assert (en["both answer"], en["both refuse"], en["only the service refuses"], en["only the check refuses"]) == (
        1, 0, 2, 2)  # fmt: skip
    assert en["service refusals, answerable"] == {"specifics missing": 1}
    assert en["service refusals, out_of_kb"] == {"relevance gate": 1}
    zh = cells["course/zh"]
    assert (zh["refused"], zh["check alone: out_of_kb measured"]) == (1, 0)
    assert zh["service refusals, out_of_kb"] == {"no answer drafted": 1}


def test_check_alone_without_stored_rows_names_the_file_and_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing-rows\.json.*bench_answerability\.py --name nothing"):
        check_alone(("nothing",), results=tmp_path)


def test_a_row_reads_the_reply_as_the_service_writes_it():
    from langchain_core.documents import Document

    from service.pipeline import Answer

    question = next(q for q in held_out_questions("course") if q.id == "ans-course-en-02")
    chunk = Document("| backup.retention_days | 14 | Automatic backups older than this are deleted |",
                     metadata={"source": "atlas_admin_guide.md"})  # fmt: skip
    verdict = {"answerable": True, "reason": "answerable", "quote": "backup.retention_days | 14", "missing": []}
    reply = Answer(question.question, "Atlas keeps them 14 days.", False, [], [chunk], verdict, 2).as_json()
    measured = row("course", question, reply, 12.34)
    assert (measured["abstained"], measured["rounds"], measured["seconds"]) == (False, 2, 12.3)
    assert measured["answerability"] == {"reason": "answerable", "quote": "backup.retention_days | 14", "missing": []}
    assert measured["key_figure"] == {"kind": "figure", "text": "14"} and measured["key_figure_held"] is True
    assert measured["context"] == [("atlas_admin_guide.md", chunk.page_content)]
    refused = row("course", question, Answer(question.question, "Not in the documents.", True).as_json(), 5.0)
    assert refused["abstained"] is True and refused["key_figure_held"] is None and refused["answerability"] is None


def test_it_uploads_the_files_the_knowledge_base_reads_and_never_the_manifest():
    from lessons.ingest.corpus import corpus_folder

    packages = corpus_files("packages")
    assert packages and all(p.suffix == ".md" for p in packages)  # MANIFEST.json is no document
    assert len(corpus_files("course")) == len([p for p in corpus_folder("course").iterdir() if p.is_file()])


def test_set_8_asks_its_own_answerable_questions_and_near_misses_under_a_name_of_its_own():
    questions = held_out_questions("packages", "8")
    assert len(questions) == 40 and sum(q.answerable for q in questions) == 20
    assert all(q.id.startswith("ans8-packages-" if q.answerable else "nm8-packages-") for q in questions)
    assert [(q.language, q.answerable) for q in questions[:4]] == [("en", True), ("en", False), ("zh", True),
                                                                   ("zh", False)]  # fmt: skip
    assert results_name("service", "8") == "service-answers-set8" and results_name() == "service-answers"
    assert results_name("three-agents", "8") == "three-agents-answers-set8"


def test_the_corpora_are_taken_in_turn():
    pairs = interleaved({"course": ["c1", "c2", "c3"], "packages": ["p1"]})
    assert pairs == [("course", "c1"), ("packages", "p1"), ("course", "c2"), ("course", "c3")]


def test_a_three_agent_refusal_names_the_relevance_checker_the_research_agent_or_the_check():
    assert refusal_cause({"answerability": None, "relevance": "NO_MATCH"}) == "relevance gate"
    assert refusal_cause({"answerability": None, "relevance": "PARTIAL"}) == "no answer drafted"  # found = "no"
    assert refusal_cause({"answerability": {"reason": "asked-for missing"}, "relevance": "CAN_ANSWER"}) == (
        "asked-for missing"
    )


def test_a_three_agent_result_is_read_as_a_reply_and_an_unverified_answer_is_an_answer():
    from langchain_core.documents import Document

    from lessons.agents.answerability import AnswerabilityVerdict
    from lessons.agents.answering import Citation
    from lessons.agents.pipelines import PipelineResult

    question = next(q for q in held_out_questions("course") if q.id == "ans-course-en-02")
    chunk = Document("| backup.retention_days | 14 | Automatic backups older than this are deleted |",
                     metadata={"source": "atlas_admin_guide.md"})  # fmt: skip
    verdict = AnswerabilityVerdict(True, "answerable", quote="backup.retention_days | 14")
    result = PipelineResult("Atlas keeps them 14 days.", False, [chunk], [chunk],
                            {"rounds": 2, "check": verdict, "outcome": "unverified", "relevance": "PARTIAL",
                             "citations": [Citation("atlas_admin_guide.md", None, "c1")]})  # fmt: skip
    usage = {"server_calls": 5, "prompt_tokens_evaluated": 3000, "calls": 5, "tokens": 4000}
    measured = row("course", question, pipeline_reply(result), 30.0, usage, "three-agents")
    assert (measured["pipeline"], measured["outcome"], measured["relevance"], measured["rounds"]) == (
        "three-agents", "unverified", "PARTIAL", 2)  # fmt: skip
    assert measured["answerability"] == {"reason": "answerable", "quote": "backup.retention_days | 14", "missing": []}
    assert measured["cited"] == ["atlas_admin_guide.md"] and measured["key_figure_held"] is True
    refused = PipelineResult("Not in the documents.", True, [chunk], [], {"rounds": 1, "check": None,
                             "outcome": "cannot_answer", "relevance": "PARTIAL", "citations": []})  # fmt: skip
    other = next(q for q in held_out_questions("course") if q.id == "nm2-course-en-01")
    cell = summarise([measured, row("course", other, pipeline_reply(refused), 20.0, {**usage, "calls": 3})], {})
    cell = cell["course/en"]
    assert (cell["answered"], cell["answered, unverified"], cell["refused"]) == (1, 1, 1)
    assert cell["service refusals, out_of_kb"] == {"no answer drafted": 1}
    assert cell["per question"] == {"server_calls": 5.0, "prompt_tokens_evaluated": 3000.0, "calls": 4.0,
                                    "tokens": 4000.0}  # fmt: skip


def test_one_results_file_holds_one_pipeline(tmp_path):
    same_pipeline({"course:a": {"pipeline": "three-agents"}}, tmp_path / "x-rows.json", "three-agents")
    with pytest.raises(ValueError, match=r"x-rows\.json: 1 rows \(e\.g\. course:a\).*'three-agents'.*--name"):
        same_pipeline({"course:a": {"corpus": "course"}}, tmp_path / "x-rows.json", "three-agents")  # the service's


def test_each_question_is_asked_once_saved_as_it_comes_and_an_error_is_a_row_not_a_refusal(tmp_path, monkeypatch):
    import time
    from types import SimpleNamespace

    import benchmarks.bench_notebooks
    from benchmarks import bench_service_answers as bench

    monkeypatch.setattr(benchmarks.bench_notebooks, "server_log_size", lambda: 0)
    questions = [
        SimpleNamespace(
            id=f"q{i}", question=f"Which port, {i}?", answer="", answerable=False, language="en", type="out_of_kb"
        )
        for i in range(3)
    ]

    def ask(corpus, question, offset):
        if question.id == "q1":
            raise RuntimeError("the model server is down")
        return {"answer": "", "abstained": True}, {"calls": 1}

    rows, run, path = {}, {"questions asked": 0}, tmp_path / "rows.json"
    bench._ask_each([("course", q) for q in questions], rows, path, time.monotonic() + 60, run, ask, (RuntimeError,))
    assert run["questions asked"] == 2 and "stopped" not in run
    assert rows["course:q1"]["error"] == "the model server is down" and rows["course:q0"]["abstained"] is True
    assert path.exists()

    late = {}
    bench._ask_each([("course", questions[0])], late, path, time.monotonic() - 1, run, ask, (RuntimeError,))
    assert late == {} and run["stopped"] == "the time given (--minutes) was up"
