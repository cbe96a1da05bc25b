"""lessons.ingest.corpus.in_course_language: the notebooks' running examples and demo questions come from the gold
questions in the notebook's language, so the Chinese copy runs Chinese examples (one mechanism for every notebook)."""

import pytest

from lessons.ingest.corpus import in_course_language, load_gold


def test_the_chinese_copy_gets_the_chinese_gold_questions_in_order(tmp_path, monkeypatch):
    gold = load_gold()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    chinese = in_course_language(gold)
    assert [q.id for q in chinese] == [q.id for q in gold if q.language == "zh"] and len(chinese) == 48
    assert next(q for q in chinese if not q.answerable).id.startswith("zh-")
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert {q.language for q in in_course_language(gold)} == {"en"}
    assert [q.id for q in in_course_language(gold, "zh")] == [q.id for q in chinese], "an explicit language wins"


def test_no_question_in_the_language_is_an_error_not_the_other_language(tmp_path, monkeypatch):
    english = [q for q in load_gold() if q.language == "en"][:3]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    with pytest.raises(ValueError, match=r"none of these 3 questions is in 'zh': sample the examples from questions"):
        in_course_language(english)


def test_the_running_example_is_the_one_given_for_the_course_language(tmp_path, monkeypatch):
    from lessons.ingest.corpus import course_example, for_course_language

    gold = load_gold()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert course_example(gold, en="en-052", zh="zh-034").id == "en-052", "the English copy keeps its example"
    assert for_course_language(en="What?", zh="什么？") == "What?"
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    assert course_example(gold, en="en-052", zh="zh-034").id == "zh-034"
    assert for_course_language(en="What?", zh="什么？") == "什么？"
    with pytest.raises(ValueError, match=r"no value for the course language 'zh' \(given: \['en'\]\): add zh=…"):
        course_example(gold, en="en-052")
    with pytest.raises(ValueError, match=r"'en-052' is in 'en', given as zh=: pick a zh question"):
        course_example(gold, en="en-052", zh="en-052")
    with pytest.raises(ValueError, match=r"'zh-999' is not among these 123 questions"):
        course_example(gold, en="en-052", zh="zh-999")


def test_a_gold_question_is_asked_in_the_course_language_with_its_reference_and_evidence(tmp_path, monkeypatch):
    from lessons.ingest.corpus import asked_in_course_language

    question = next(q for q in load_gold() if q.id == "en-001")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert asked_in_course_language(question, zh="问题？") is question
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    asked = asked_in_course_language(question, zh="问题？")
    assert (asked.id, asked.question, asked.language) == ("en-001", "问题？", "zh")
    assert asked.model_dump(exclude={"question", "language"}) == question.model_dump(exclude={"question", "language"})
    assert question.question != "问题？" and question.language == "en", "the gold question itself is not changed"
    with pytest.raises(ValueError, match=r"no value for the course language 'zh' \(given: \['en'\]\)"):
        asked_in_course_language(question)
    with pytest.raises(ValueError, match=r"en-001 is asked in 'en' by the gold set: drop en=… from the call"):
        asked_in_course_language(question, en="What?", zh="问题？")
