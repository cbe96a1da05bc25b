"""The grading loop with a scripted model: it stops early, rewrites, caps, and abstains on its own path."""

import pytest
from langchain_core.documents import Document

from lessons.fakes import ScriptedChatModel
from lessons.grading import (
    NOT_IN_KB,
    answer_without_grading,
    build_grading_loop,
    decide_after_grading,
    grade_documents,
)


def scripted(grade, answer=None, found="yes"):
    """A model that grades with grade(document_text) and answers with `answer`, by the tool it is asked for."""

    def reply(messages, tools):
        prompt = messages[0].content
        if tools == ["GradeDocuments"]:
            return {"binary_score": grade(prompt.split("Document:\n", 1)[1])}
        if tools == ["RewrittenQuery"]:
            return {"query": f"rewritten {prompt.count(';') + 1}", "new_keywords": ["synonym"]}
        if tools == ["DraftAnswer"]:
            return {"found": found, "answer": answer or ""}
        raise AssertionError(f"unexpected call with tools {tools}")

    return ScriptedChatModel(default=reply)


class Retriever:
    def __init__(self, pages):
        self.pages, self.queries = pages, []

    def __call__(self, query):
        self.queries.append(query)
        return [Document(text) for text in self.pages[min(len(self.queries), len(self.pages)) - 1]]


@pytest.mark.parametrize(
    ("grades", "round_number", "expected"),
    [(["no", "yes"], 1, "generate"), (["no", "no"], 1, "rewrite"), (["no"], 3, "not_in_kb"), ([], 2, "rewrite"),
     (["yes"], 3, "generate")],
)
def test_the_stop_rule(grades, round_number, expected):
    assert decide_after_grading(grades, round_number, max_rounds=3) == expected


def test_one_relevant_document_is_enough_to_stop_in_the_first_round():
    retriever = Retriever([["port 7420", "leave policy", "pricing"]])
    loop = build_grading_loop(scripted(lambda doc: "yes" if "7420" in doc else "no", answer="Port 7420."), retriever)
    state = loop.invoke({"question": "Which port?"})
    assert state["outcome"] == "answered" and state["answer"] == "Port 7420."
    assert [d.page_content for d in state["relevant"]] == ["port 7420"]
    assert len(state["trace"]) == 1 and state["trace"][0].grades == ("yes", "no", "no")


def test_a_rewrite_that_finds_something_answers_in_round_two():
    retriever = Retriever([["nothing useful"], ["the answer is here"]])
    loop = build_grading_loop(scripted(lambda doc: "yes" if "answer" in doc else "no", answer="Found."), retriever)
    state = loop.invoke({"question": "q"})
    assert state["outcome"] == "answered" and state["round"] == 2
    assert retriever.queries == ["q", "rewritten 1"]
    assert [step.decision for step in state["trace"]] == ["rewrite", "generate"]


def test_a_model_that_always_says_no_ends_at_the_cap_with_the_honest_answer():
    retriever = Retriever([["a"], ["b"], ["c"], ["d"], ["e"]])
    model = scripted(lambda doc: "no")
    state = build_grading_loop(model, retriever, max_rounds=3).invoke({"question": "What is the CFO's name?"})
    assert state["outcome"] == "not_in_kb" and state["answer"] == NOT_IN_KB["en"]
    assert state["round"] == 3 and len(retriever.queries) == 3
    assert [step.decision for step in state["trace"]] == ["rewrite", "rewrite", "not_in_kb"]
    assert not any(call["tools"] == ["DraftAnswer"] for call in model.calls), "no answer may be generated at the cap"


def test_the_cap_of_one_round_never_rewrites():
    model = scripted(lambda doc: "no")
    state = build_grading_loop(model, Retriever([["a"]]), max_rounds=1).invoke({"question": "财务总监是谁？"})
    assert state["answer"] == NOT_IN_KB["zh"] and state["round"] == 1
    assert not any(call["tools"] == ["RewrittenQuery"] for call in model.calls)


def test_a_generator_that_finds_no_answer_takes_the_not_in_kb_path():
    loop = build_grading_loop(scripted(lambda doc: "yes", found="no"), Retriever([["on topic but silent"]]))
    assert loop.invoke({"question": "q"})["outcome"] == "not_in_kb"


def test_a_zero_cap_is_rejected():
    with pytest.raises(ValueError, match="at least 1"):
        build_grading_loop(scripted(lambda doc: "no"), Retriever([["a"]]), max_rounds=0)


def test_every_document_is_graded_in_order():
    grades = grade_documents(scripted(lambda doc: "yes" if doc.startswith("b") else "no"), "q",
                             [Document("a"), Document("b"), Document("c")])
    assert grades == ["no", "yes", "no"]


def test_the_ungated_baseline_answers_from_whatever_came_back():
    state = answer_without_grading(scripted(lambda doc: "no", answer="Made up from noise."), Retriever([["noise"]]), "q")
    assert state["outcome"] == "answered" and state["answer"] == "Made up from noise."


def test_results_are_summarised_per_language():
    from lessons.corpus import GoldQuestion
    from lessons.grading import run_question, summarise

    questions = [
        GoldQuestion(id="en-1", question="Which port?", language="en", type="fact", answer="7420",
                     sources=[{"file": "a"}], evidence=["port 7420"]),
        GoldQuestion(id="en-2", question="Who is the CFO?", language="en", type="out_of_kb", answer=""),
    ]
    from lessons.usage import USAGE

    model = scripted(lambda doc: "yes" if "7420" in doc else "no", answer="7420")
    model.callbacks = [USAGE]  # as get_chat_model() does
    retriever = Retriever([["port 7420"]])
    loop = build_grading_loop(model, retriever)
    results = [run_question(loop, lambda q: answer_without_grading(model, retriever, q), q) for q in questions]
    assert [r.gated_outcome for r in results] == ["answered", "answered"]  # the retriever only knows port 7420
    assert results[0].first_round_stop and results[0].gated_calls == 2
    overall = summarise(results)[-1]
    assert overall["language"] == "all" and overall["questions"] == 2
    assert overall["abstention (out-of-KB), gated"] == 0.0 and overall["answer rate (in-KB), gated"] == 1.0
    assert summarise(results)[1]["questions"] == 0 and summarise(results)[1]["rounds per question"] is None
