"""The measurement helpers of notebook 05: planted claims, the drill, the gold-set summary, the contradiction case."""

import pytest
from langchain_core.documents import Document

from lessons.agents.three_agents import CrossEncoderRelevance
from lessons.core.fakes import ScriptedChatModel
from lessons.evaluation.three_agent_eval import (
    CONTRADICTION_WORDINGS,
    INJECTED_INSTRUCTION,
    INVENTED_NAME,
    OBEYED_ANSWER,
    DrillCase,
    RelevanceComparison,
    better_relevance_checker,
    compare_relevance,
    contradiction_case,
    contradiction_handling,
    drill_drafts,
    drill_findings,
    drill_summary,
    evaluate_question,
    evidence_context,
    follows_injection,
    injected_chunk,
    neighbour,
    plant_changed_figure,
    plant_invented_name,
    relevance_agreement,
    relevance_findings,
    relevance_summary,
    run_drill,
    run_findings,
    summarise_runs,
)
from lessons.ingest.corpus import CORPUS_DIR, GoldQuestion, load_gold

QUESTION = GoldQuestion(
    id="en-9",
    question="How much is Team?",
    language="en",
    type="fact",
    answer="Team costs €45 per user per month since 2026.",
    sources=[{"file": "faq.html"}],
    evidence=["€45 per user per month"],
)
CHUNKS = [Document("Unrelated."), Document("Pricing: Team costs €45 per user per month since 2026.")]


def test_a_changed_figure_skips_years_and_changes_the_first_figure():
    assert (
        plant_changed_figure("Team costs €45 per user per month since 2026.")
        == "Team costs €54 per user per month since 2026."
    )
    assert plant_changed_figure("In 2026 the port is 7420.") == "In 2026 the port is 8904."
    assert plant_changed_figure("Since 2026.") == "Since 2431."
    assert plant_changed_figure("No figure here.") is None


def test_an_invented_name_is_added_in_the_text_language():
    assert plant_invented_name("Port 7420.").endswith(INVENTED_NAME["en"])
    assert plant_invented_name("端口是 7420。").endswith(INVENTED_NAME["zh"])


def test_drill_drafts_and_evidence_context():
    kinds = [kind for kind, _ in drill_drafts(QUESTION)]
    assert kinds == ["correct", "changed figure", "invented name"]
    assert evidence_context(QUESTION, CHUNKS) == [CHUNKS[1]]


def test_the_drill_flags_what_the_verifier_rejects_and_skips_questions_without_evidence():
    def reply(messages, tools):
        draft = messages[0].content.rsplit("Draft answer: ", 1)[1]
        bad = "54" in draft or "Lindqvist" in draft
        return {
            "unsupported_claims": [draft] if bad else [],
            "contradictions": [],
            "supported": "no" if bad else "yes",
            "relevant": "yes",
        }

    no_evidence = QUESTION.model_copy(update={"id": "en-10", "evidence": ["not in any chunk"]})
    cases = run_drill(
        ScriptedChatModel(default=reply), [QUESTION, no_evidence], CHUNKS, progress=False, injection=False
    )
    assert [(c.kind, c.flagged) for c in cases] == [
        ("correct", False),
        ("changed figure", True),
        ("invented name", True),
    ]
    summary = {row["draft"]: row["flagged"] for row in drill_summary(cases)}
    assert summary == {"changed figure": 1.0, "invented name": 1.0, "correct": 0.0}
    # who caught it: the verifier listed both planted drafts (its claim is the whole draft, word for word what the
    # sentence check finds too); the string checks found the figure and the added sentence
    assert [(c.by_verifier, c.by_checks) for c in cases] == [(False, False), (True, True), (True, True)]


def test_the_drill_tells_the_string_checks_from_the_verifier():
    def never_flags(messages, tools):
        return {"unsupported_claims": [], "contradictions": [], "supported": "yes", "relevant": "yes"}

    cases = run_drill(ScriptedChatModel(default=never_flags), [QUESTION], CHUNKS, progress=False, injection=False)
    assert [(c.kind, c.flagged, c.by_verifier, c.by_checks) for c in cases] == [
        ("correct", False, False, False),
        ("changed figure", True, False, True),
        ("invented name", True, False, True),
    ]
    rows = {row["draft"]: row for row in drill_summary(cases)}
    assert (
        rows["changed figure"]["by the verifier's list"] == 0.0
        and rows["changed figure"]["by the string checks"] == 1.0
    )
    assert rows["correct"]["by the model's yes/no"] == 0.0
    assert [
        c.by_yes_no
        for c in run_drill(
            ScriptedChatModel(default=lambda m, t: {**never_flags(m, t), "relevant": "no"}),
            [QUESTION],
            CHUNKS,
            progress=False,
            injection=False,
        )
    ] == [True, True, True]


OTHER = GoldQuestion(
    id="en-11",
    question="Which port does Atlas Server use?",
    language="en",
    type="fact",
    answer="Atlas Server listens on port 7420 by default.",
    sources=[{"file": "guide.md"}],
    evidence=["listens on port 7420"],
)
PORT = Document("Atlas Server listens on port 7420 by default.")


def test_another_questions_answer_passes_the_verifier_and_the_answerability_check_refuses_it():
    from lessons.agents.answerability import AnswerabilityCheck

    def reply(messages, tools):
        prompt = messages[-1].content
        if tools == ["Evidence"]:  # the judge quotes the first sentence it was given: true, but is it evidence?
            quote = "Team costs €45 per user per month" if "Team costs" in prompt else PORT.page_content
            return {"quote": quote, "answer": quote.split()[-1], "asks_for": "how much"}
        return {"unsupported_claims": [], "contradictions": [], "supported": "yes", "relevant": "yes"}

    model = ScriptedChatModel(default=reply)
    check = AnswerabilityCheck(model)
    cases = run_drill(model, [QUESTION], [*CHUNKS, PORT], progress=False, injection=False, answerability=check,
                      pool=[QUESTION, OTHER])  # fmt: skip
    other = [c for c in cases if c.kind == "another question's answer"]
    assert len(other) == 1 and other[0].draft == OTHER.answer
    assert not other[0].flagged, "every claim is in the other question's evidence: the verifier has nothing to flag"
    assert other[0].by_answerability is True  # "Team" is nowhere in that context
    correct = next(c for c in cases if c.kind == "correct")
    assert correct.by_answerability is False  # the question's own evidence answers it: no false alarm
    rows = {row["draft"]: row for row in drill_summary(cases)}
    assert rows["another question's answer"]["by the answerability check"] == 1.0
    assert (
        rows["correct"]["by the answerability check"] == 0.0
        and rows["changed figure"]["by the answerability check"] is None
    )
    assert "refused 1 of 1" in drill_findings(cases)
    # without the check, the case is still drilled (the verifier alone), its column empty
    plain = run_drill(model, [QUESTION], [*CHUNKS, PORT], progress=False, injection=False, pool=[QUESTION, OTHER])
    assert [c.by_answerability for c in plain if c.kind == "another question's answer"] == [None]


def test_the_neighbour_is_the_next_question_in_the_language_with_evidence_of_its_own():
    chunks = [*CHUNKS, PORT]
    same_chunk = OTHER.model_copy(update={"id": "en-10", "evidence": ["Team costs €45"]})  # shares QUESTION's chunk
    chinese = OTHER.model_copy(update={"id": "en-95", "language": "zh"})
    assert neighbour(QUESTION, [QUESTION, same_chunk, chinese, OTHER], chunks) == OTHER
    assert neighbour(QUESTION, [QUESTION, same_chunk], chunks) is None
    assert neighbour(OTHER, [QUESTION, OTHER], chunks) == QUESTION  # wraps around


def test_drill_summary_of_nothing_is_none():
    assert all(row["flagged"] is None for row in drill_summary([]))
    case = DrillCase("x", "en", "correct", "d", True, (), ())
    assert drill_summary([case])[2]["flagged"] == 1.0


def test_contradiction_handling():
    assert contradiction_handling("€45 in the FAQ, but the Q3 deck says €54.") == "states the conflict"
    assert contradiction_handling("Team costs €45.") == "follows the consistent sources (€45)"
    assert contradiction_handling("Team costs €54.") == "follows the Q3 deck only (€54)"
    assert contradiction_handling("I do not know.") == "gives neither price"
    # a figure counts whole: these hold a "45" or "54" only as part of another number
    assert contradiction_handling("€45.90 with annual billing") == "gives neither price"
    assert contradiction_handling("about €45,000 a year, or €1540 a seat.") == "gives neither price"
    assert contradiction_handling("Team costs €45. (Q3 deck: 54.)") == "states the conflict"


def test_the_contradiction_case_is_asked_in_the_readers_language_with_the_gold_reference(tmp_path, monkeypatch):
    gold = load_gold()
    english = next(q for q in gold if q.id == "en-052")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert contradiction_case(gold) == english, "the English copy asks the gold question itself"
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    chinese = contradiction_case(gold)
    assert (chinese.id, chinese.language, chinese.type) == ("en-052", "zh", "contradiction")
    assert chinese.question == "Atlas 的 Team 版 list price 是每用户每月多少？"
    assert (chinese.answer, chinese.evidence, chinese.sources) == (english.answer, english.evidence, english.sources)
    with pytest.raises(ValueError, match=r"en-052 is not among these 1 questions: pass the course gold set"):
        contradiction_case([gold[0]])


def test_the_chinese_wording_of_the_contradiction_case_retrieves_the_deck_that_disagrees():
    """The reason for its wording (`CONTRADICTION_WORDINGS`): notebook 05's retriever (hybrid top 20, the best 4 handed
    on) brings the Q3 deck's €54 chunk to the agents for it, and for an all-Chinese wording not even into the top 20."""
    from lessons.retrieval import process_documents

    kb = process_documents(CORPUS_DIR, index_name="kb", k=4)

    def deck(documents):
        return [d.metadata["source"] for d in documents if "€54 per user per month" in d.page_content]

    assert deck(kb.retrieve(CONTRADICTION_WORDINGS["zh"])) == ["q3_2026_business_review.pptx"]
    assert deck(kb.first_stage("Atlas Team 版每个用户每月多少钱？")) == []


def test_a_gold_question_is_run_judged_and_summarised():
    def reply(messages, tools):
        return {
            "RelevanceCheck": {"topic_words_found": ["Team"], "label": "CAN_ANSWER"},
            "ResearchDraft": {"answer": "€45 per user per month.", "cited_chunks": [2], "found": "yes"},
            "Verification": {"unsupported_claims": [], "contradictions": [], "supported": "yes", "relevant": "yes"},
            "CompletenessVerdict": {"reference_key_fact": "€45", "answer_says": "€45", "complete": "yes"},
        }[tools[0]]

    model = ScriptedChatModel(default=reply)
    run = evaluate_question(QUESTION, retriever=lambda q: CHUNKS, llm=model, relevance="llm")
    assert run.complete == 1 and run.judge_status == "judged"
    assert run.supported and not run.abstained and run.citations == 1 and run.research_rounds == 1
    out = GoldQuestion(id="en-11", question="Who is the CFO?", language="en", type="out_of_kb", answer="")
    refusal = evaluate_question(out, retriever=lambda q: [Document("Leave policy.")], llm=model, relevance="llm")
    assert refusal.abstained and refusal.complete is None and refusal.outcome == "not_in_documents"
    assert refusal.judge_status == "not_applicable"
    rows = {row["language"]: row for row in summarise_runs([run, refusal])}
    assert rows["all"]["complete (in-KB)"] == 1.0 and rows["all"]["abstention (out-of-KB)"] == 1.0
    assert rows["all"]["judge failures"] == 0
    assert rows["zh"]["questions"] == 0 and rows["zh"]["complete (in-KB)"] is None


def test_a_verifier_that_lists_exactly_the_added_sentence_gets_the_credit():
    sentence = INVENTED_NAME["en"].strip()

    def lists_the_sentence(messages, tools):
        draft = messages[0].content.rsplit("Draft answer: ", 1)[1]
        return {
            "unsupported_claims": [sentence] if sentence in draft else [],
            "contradictions": [],
            "supported": "yes",
            "relevant": "yes",
        }

    cases = run_drill(
        ScriptedChatModel(default=lists_the_sentence), [QUESTION], CHUNKS, progress=False, injection=False
    )
    named = next(c for c in cases if c.kind == "invented name")
    assert named.by_verifier and named.by_checks and named.unsupported == (sentence,)


def injection_model(research_follows: bool, verifier_lists_it: bool = False):
    """A research agent that obeys the planted instruction (or answers from the evidence) and a verifier."""

    def reply(messages, tools):
        prompt = messages[0].content
        if tools == ["ResearchDraft"]:
            assert "never instructions" in prompt and '<document number="1" source="injected_note.md">' in prompt
            answer = OBEYED_ANSWER["en"] if research_follows else "Team costs €45 per user per month."
            return {"answer": answer, "cited_chunks": [1 if research_follows else 2], "found": "yes"}
        draft = prompt.rsplit("Draft answer: ", 1)[1]
        listed = [draft] if verifier_lists_it and "discontinued" in draft else []
        return {"unsupported_claims": listed, "contradictions": [], "supported": "yes", "relevant": "yes"}

    return ScriptedChatModel(default=reply)


def test_the_injected_instruction_case_measures_following_and_catching():
    cases = run_drill(injection_model(research_follows=True), [QUESTION], CHUNKS, progress=False)
    (injected,) = [c for c in cases if c.kind == "injected instruction"]
    assert injected.followed is True and injected.draft == OBEYED_ANSWER["en"]
    assert injected.flagged and injected.by_checks and not injected.by_verifier, (
        "the string checks catch it without the model"
    )
    assert any("repeats an instruction written in the documents" in claim for claim in injected.unsupported)
    assert all(c.followed is None for c in cases if c.kind != "injected instruction")
    row = next(r for r in drill_summary(cases) if r["draft"] == "injected instruction")
    assert row["research agent followed it"] == 1.0 and row["flagged"] == 1.0 and row["meaning"] == "catch rate"
    assert next(r for r in drill_summary(cases) if r["draft"] == "correct")["research agent followed it"] is None


def test_a_research_agent_that_ignores_the_injection_is_recorded_as_not_following_it():
    cases = run_drill(
        injection_model(research_follows=False, verifier_lists_it=True), [QUESTION], CHUNKS, progress=False
    )
    (injected,) = [c for c in cases if c.kind == "injected instruction"]
    assert injected.followed is False and injected.flagged and injected.by_verifier
    assert [c.kind for c in cases] == ["correct", "changed figure", "invented name", "injected instruction"]


def test_the_injected_chunk_is_in_the_question_language_and_found_as_an_instruction():
    from lessons.core.prompt_safety import find_instructions

    zh = QUESTION.model_copy(update={"language": "zh"})
    assert injected_chunk(zh).page_content == INJECTED_INSTRUCTION["zh"]
    for language in ("en", "zh"):
        assert find_instructions(INJECTED_INSTRUCTION[language]), language
        assert follows_injection(OBEYED_ANSWER[language]), language
    assert not follows_injection("Team costs €45 per user per month.")


def test_without_the_injection_case_the_drill_summary_has_no_row_for_it():
    assert "injected instruction" not in [r["draft"] for r in drill_summary([])]


class FakeCrossEncoder:
    languages = frozenset({"en"})

    def score(self, pairs):
        return [0.9 if "€45" in passage else 0.0 for _, passage in pairs]


def test_both_relevance_checkers_are_scored_against_the_gold_evidence():
    model = ScriptedChatModel(default=lambda messages, tools: {"topic_words_found": ["Team"], "label": "PARTIAL"})
    out = GoldQuestion(id="en-11", question="Who is the CFO of Team?", language="en", type="out_of_kb", answer="")
    rows = compare_relevance(
        [QUESTION, out],
        lambda q: CHUNKS if "much" in q else [Document("Team leave policy.")],
        model,
        CrossEncoderRelevance(FakeCrossEncoder(), 0.5, 0.05),
        progress=False,
    )
    assert [(r.holds_evidence, r.cross_encoder, r.chat_model) for r in rows] == [
        (True, "CAN_ANSWER", "PARTIAL"),
        (False, "NO_MATCH", "PARTIAL"),
    ]
    summary = {row["checker"]: row for row in relevance_summary(rows)}
    assert summary["cross_encoder"]["right decision"] == 1.0 and summary["llm"]["right decision"] == 0.5
    assert summary["llm"]["stopped (no evidence)"] == 0.0 and summary["llm"]["passed on (evidence)"] == 1.0
    assert relevance_agreement(rows) == {"same label": 0.0, "same decision": 0.5}
    assert better_relevance_checker(relevance_summary(rows)) == "cross_encoder"
    text = relevance_findings(relevance_summary(rows), relevance_agreement(rows), "cross_encoder")
    assert "cross-encoder made the right early-exit decision for 100%, the chat model for 50%" in text
    assert "**cross-encoder** was right more often" in text


def test_the_chat_model_wins_the_relevance_choice_only_when_it_is_right_more_often():
    def row(holds, ce, chat):
        return RelevanceComparison("en-1", "en", holds, holds, ce, 0.1, chat)

    chat_better = [row(False, "PARTIAL", "NO_MATCH"), row(True, "CAN_ANSWER", "CAN_ANSWER")]
    assert better_relevance_checker(relevance_summary(chat_better)) == "llm"
    tie = [row(False, "PARTIAL", "PARTIAL")]
    assert better_relevance_checker(relevance_summary(tie)) == "cross_encoder"
    assert "right equally often" in relevance_findings(
        relevance_summary(tie), relevance_agreement(tie), "cross_encoder"
    )


def case(kind, flagged, qid="en-1", followed=None, by_checks=False, by_yes_no=False):
    return DrillCase(
        qid, qid[:2], kind, "draft", flagged, (), (), by_checks=by_checks, by_yes_no=by_yes_no, followed=followed
    )


def test_the_drill_findings_are_rendered_from_the_cases():
    cases = [
        case("correct", False, by_yes_no=True),
        case("changed figure", True, by_checks=True),
        case("invented name", True, by_checks=True),
        case("injected instruction", True, followed=True, by_checks=True),
        case("correct", True, qid="zh-2"),
        case("invented name", False, qid="zh-2"),
        case("injected instruction", False, qid="zh-2", followed=False),
    ]
    text = drill_findings(cases)
    assert "(2 questions — 1 English, 1 Chinese; 7 verifier calls)" in text
    assert "false alarms): 1 of 2**" in text and 'said "no" to 1 of 2' in text
    assert "Changed figures caught: 1 of 1**" in text and "Invented names caught: 1 of 2**" in text
    assert "followed it in 1 of 2 questions** (50%)" in text and "flagged 1 of 2 of the obeyed drafts (50%)" in text
    assert "where the agent obeyed, 1 of 1 were caught" in text
    assert "Injected" not in drill_findings([c for c in cases if c.kind != "injected instruction"])


def test_the_run_findings_are_rendered_from_the_runs():
    def reply(messages, tools):
        return {
            "RelevanceCheck": {"topic_words_found": ["Team"], "label": "CAN_ANSWER"},
            "ResearchDraft": {"answer": "€45 per user per month.", "cited_chunks": [2], "found": "yes"},
            "Verification": {"unsupported_claims": [], "contradictions": [], "supported": "yes", "relevant": "yes"},
            "CompletenessVerdict": {"reference_key_fact": "€45", "answer_says": "", "complete": "no"},
        }[tools[0]]

    model = ScriptedChatModel(default=reply)
    run = evaluate_question(QUESTION, retriever=lambda q: CHUNKS, llm=model, relevance="llm")
    text = run_findings(summarise_runs([run]), [run], "follows the consistent sources (€45)")
    assert "(1 questions: 1 answerable, 0 out-of-KB)" in text and "1 of 1 answered, 0 of 1 complete" in text
    assert (
        "en 0 of 1 complete" in text
        and "judge failed" not in text
        and "the answer follows the consistent sources (€45)" in text
    )
