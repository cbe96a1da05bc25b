"""The course's one set of answer judges (lessons.evaluation.judges) with scripted models: the verdicts parsed,
a failure counted and never guessed, an abstention scored without a call, and notebooks 05, 06, 07 (and the
evaluation command, through `judge_answer`) sending the judge the very same prompt."""

import importlib

import pytest
from langchain_core.documents import Document

from lessons.core.fakes import ScriptedChatModel
from lessons.evaluation import deep_research_eval, three_agent_eval
from lessons.evaluation.judges import (
    COMPLETENESS_PROMPT,
    Judgement,
    answer_completeness,
    judge_completeness,
    judge_faithfulness,
)
from lessons.evaluation.pipelines import PipelineResult, judge_answer
from lessons.evaluation.testset import TestItem
from lessons.ingest.corpus import GoldQuestion

QUESTION = "How much is Team?"
REFERENCE = "Team costs €45 per user per month since 2026."
ANSWER = "€45 per user per month."
CONTEXT = [Document("Pricing: Team costs €45 per user per month since 2026.", metadata={"source": "faq.html"})]
COMPLETE = {"reference_key_fact": "€45 per user per month", "answer_says": "€45 per user per month", "complete": "yes"}
NOT_COMPLETE = {"reference_key_fact": "€45 per user per month", "answer_says": "", "complete": "no"}
CONSISTENT = {"answer_claim": "€45 per user", "context_says": "Team costs €45 per user per month", "consistent": "yes"}


def test_the_completeness_verdict_is_parsed_to_a_score_with_the_copied_text_as_its_reason():
    yes = judge_completeness(ScriptedChatModel(responses=[COMPLETE]), QUESTION, ANSWER, REFERENCE)
    assert yes == Judgement(
        1, "judged", "reference_key_fact: €45 per user per month · answer_says: €45 per user per month"
    )
    no_model = ScriptedChatModel(responses=[NOT_COMPLETE])
    no = judge_completeness(no_model, QUESTION, "€54 per user.", REFERENCE)
    assert no.score == 0 and no.status == "judged" and no.cause is None
    call = no_model.calls[0]
    assert call["tools"] == ["CompletenessVerdict"]
    prompt = call["messages"][0].content
    assert f"Reference answer: {REFERENCE}" in prompt and "Answer: €54 per user." in prompt


def test_the_faithfulness_verdict_reads_the_context_and_not_the_reference():
    model = ScriptedChatModel(responses=[CONSISTENT, {**CONSISTENT, "context_says": "", "consistent": "no"}])
    assert judge_faithfulness(model, QUESTION, ANSWER, CONTEXT).score == 1
    assert judge_faithfulness(model, QUESTION, "€54 per user.", CONTEXT).score == 0
    assert [c["tools"] for c in model.calls] == [["FaithfulnessVerdict"], ["FaithfulnessVerdict"]]
    prompt = model.calls[0]["messages"][0].content
    assert "Team costs €45 per user per month since 2026." in prompt and "Reference answer" not in prompt


@pytest.mark.parametrize("judge", ["completeness", "faithfulness"])
def test_a_judge_that_does_not_fill_its_verdict_is_a_counted_failure_not_a_guess(judge):
    model = ScriptedChatModel(default="Looks right to me!")
    if judge == "completeness":
        judgement, schema = judge_completeness(model, QUESTION, ANSWER, REFERENCE), "CompletenessVerdict"
    else:
        judgement, schema = judge_faithfulness(model, QUESTION, ANSWER, CONTEXT), "FaithfulnessVerdict"
    assert judgement.score is None and judgement.status == "judge_failed"
    assert "StructuredOutputError" in judgement.cause and schema in judgement.cause


def test_a_verdict_outside_yes_and_no_is_a_failure_too():
    broken = ScriptedChatModel(default={**COMPLETE, "complete": "mostly"})
    judgement = judge_completeness(broken, QUESTION, ANSWER, REFERENCE)
    assert judgement.score is None and judgement.status == "judge_failed"


def test_an_abstention_scores_zero_without_a_judge_call():
    model = ScriptedChatModel()  # no replies scripted: any call would fail the test
    assert answer_completeness(model, QUESTION, REFERENCE, "", abstained=True) == Judgement(
        0, "abstained", "abstained on an answerable question"
    )
    assert model.calls == []


def test_a_chinese_answer_gets_the_same_english_instructions_which_allow_another_language():
    model = ScriptedChatModel(responses=[COMPLETE, COMPLETE])
    judge_completeness(model, QUESTION, ANSWER, REFERENCE)
    judge_completeness(model, "Team 套餐多少钱？", "每位用户每月 €45。", REFERENCE)
    english, chinese = (c["messages"][0].content for c in model.calls)
    instructions = COMPLETENESS_PROMPT.split("Question:")[0]
    assert english.startswith(instructions) and chinese.startswith(instructions)
    assert "language may differ" in instructions and "每位用户每月 €45。" in chinese


def _three_agent_replies(messages, tools):
    return {
        "RelevanceCheck": {"topic_words_found": ["Team"], "label": "CAN_ANSWER"},
        "ResearchDraft": {"answer": ANSWER, "cited_chunks": [1], "found": "yes"},
        "Verification": {"unsupported_claims": [], "contradictions": [], "supported": "yes", "relevant": "yes"},
    }[tools[0]]


def test_notebooks_05_06_and_07_send_the_completeness_judge_the_same_prompt():
    gold = GoldQuestion(id="en-9", question=QUESTION, language="en", type="fact", answer=REFERENCE,
                        sources=[{"file": "faq.html"}], evidence=["Team costs €45 per user per month"])  # fmt: skip
    judges = {name: ScriptedChatModel(default=lambda m, tools: COMPLETE if tools == ["CompletenessVerdict"] else CONSISTENT)
              for name in ("05", "06", "07")}  # fmt: skip
    run = three_agent_eval.evaluate_question(
        gold, retriever=lambda q: CONTEXT, llm=ScriptedChatModel(default=_three_agent_replies),
        judge=judges["05"], relevance="llm",
    )  # fmt: skip
    assert run.answer == ANSWER and run.complete == 1
    item = TestItem(id="en-9", question=QUESTION, language="en", type="fact", reference=REFERENCE, origin="gold")
    faithful, complete = judge_answer(judges["06"], item, PipelineResult(ANSWER, False, CONTEXT, CONTEXT))
    assert faithful.score == complete.score == 1
    shot = deep_research_eval.run_single_shot(
        gold, lambda q: PipelineResult(ANSWER, False, CONTEXT, CONTEXT), judges["07"], k=3
    )
    assert shot.complete == 1.0

    def completeness_prompts(model):
        return [c["messages"][0].content for c in model.calls if c["tools"] == ["CompletenessVerdict"]]

    assert (
        completeness_prompts(judges["05"]) == completeness_prompts(judges["06"]) == completeness_prompts(judges["07"])
    )
    assert len(completeness_prompts(judges["05"])) == 1


def test_notebook_05_counts_a_judge_failure_and_leaves_it_out_of_the_share():
    gold = GoldQuestion(id="en-9", question=QUESTION, language="en", type="fact", answer=REFERENCE,
                        sources=[{"file": "faq.html"}], evidence=["Team costs €45 per user per month"])  # fmt: skip
    failed = three_agent_eval.evaluate_question(
        gold, retriever=lambda q: CONTEXT, llm=ScriptedChatModel(default=_three_agent_replies),
        judge=ScriptedChatModel(default="It is right."), relevance="llm",
    )  # fmt: skip
    assert failed.complete is None and failed.judge_status == "judge_failed" and not failed.abstained
    judged = three_agent_eval.evaluate_question(
        gold, retriever=lambda q: CONTEXT, llm=ScriptedChatModel(default=_three_agent_replies),
        judge=ScriptedChatModel(default=NOT_COMPLETE), relevance="llm",
    )  # fmt: skip
    rows = {row["language"]: row for row in three_agent_eval.summarise_runs([failed, judged])}
    assert rows["all"]["judge failures"] == 1 and rows["all"]["complete (in-KB)"] == 0.0
    assert rows["en"]["complete (in-KB)"] == 0.0  # of the one question the judge scored
    only_failed = {row["language"]: row for row in three_agent_eval.summarise_runs([failed])}
    assert only_failed["all"]["complete (in-KB)"] is None and only_failed["all"]["judge failures"] == 1
    text = three_agent_eval.run_findings(three_agent_eval.summarise_runs([failed, judged]), [failed, judged], None)
    assert "2 of 2 answered, 0 of 2 complete" in text and "the judge failed on 1: counted, not guessed" in text


def test_the_judges_module_holds_the_verdicts_every_caller_uses():
    package = importlib.import_module("lessons.evaluation")  # the package's exports, as a master imports them
    for name in ("FaithfulnessVerdict", "judge_faithfulness", "judge_completeness", "run_judge"):
        assert getattr(package, name).__module__ == "lessons.evaluation.judges", name
    assert not hasattr(three_agent_eval, "judge_correctness") and not hasattr(three_agent_eval, "AnswerJudgement")
