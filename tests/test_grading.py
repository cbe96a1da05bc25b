"""The grading loop with a scripted model: it stops early, rewrites, caps, and abstains on its own path."""

import pytest
from langchain_core.documents import Document

from lessons.agents.answering import NOT_IN_KB
from lessons.agents.grading import (
    answer_without_grading,
    build_grading_loop,
    decide_after_grading,
    grade_documents,
)
from lessons.core.fakes import ScriptedChatModel


def inside(text):
    """The text of the first <document> block in `text` (prompts quote documents as delimited data)."""
    return text.split(">\n", 1)[1].split("\n</document>", 1)[0] if text.startswith("<document") else text


def scripted(grade, answer=None, found="yes"):
    """A model that grades with grade(document_text) and answers with `answer`, by the tool it is asked for."""

    def reply(messages, tools):
        prompt = messages[0].content
        if tools == ["GradeDocuments"]:
            return {"binary_score": grade(inside(prompt.split("Document:\n", 1)[1]))}
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
    [
        (["no", "yes"], 1, "generate"),
        (["no", "no"], 1, "rewrite"),
        (["no"], 3, "not_in_kb"),
        ([], 2, "rewrite"),
        (["yes"], 3, "generate"),
    ],
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
    grades = grade_documents(
        scripted(lambda doc: "yes" if doc.startswith("b") else "no"), "q", [Document("a"), Document("b"), Document("c")]
    )
    assert grades == ["no", "yes", "no"]


def test_the_ungated_baseline_answers_from_whatever_came_back():
    state = answer_without_grading(
        scripted(lambda doc: "no", answer="Made up from noise."), Retriever([["noise"]]), "q"
    )
    assert state["outcome"] == "answered" and state["answer"] == "Made up from noise."


def test_results_are_summarised_per_language():
    from lessons.agents.grading import run_question, summarise
    from lessons.ingest.corpus import GoldQuestion

    questions = [
        GoldQuestion(
            id="en-1",
            question="Which port?",
            language="en",
            type="fact",
            answer="7420",
            sources=[{"file": "a"}],
            evidence=["port 7420"],
        ),
        GoldQuestion(id="en-2", question="Who is the CFO?", language="en", type="out_of_kb", answer=""),
    ]
    from lessons.core.usage import USAGE

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


def judged_by_passage(probabilities):
    """A scripted one-token judge whose P(yes) depends on the document it reads (as the local server returns it)."""
    import math

    from langchain_core.messages import AIMessage

    def reply(messages, tools):
        marker = "Search result:\n" if "Search result:\n" in messages[-1].content else "搜索结果：\n"
        passage = inside(messages[-1].content.split(marker, 1)[1]).split("\n", 1)[0]
        p = probabilities[passage]
        top = [{"token": "yes", "logprob": math.log(p)}, {"token": "no", "logprob": math.log(1 - p)}]
        first = "yes" if p >= 0.5 else "no"
        return AIMessage(
            first, response_metadata={"logprobs": {"content": [{"token": first, "logprob": 0.0, "top_logprobs": top}]}}
        )

    return ScriptedChatModel(default=reply)


def p_yes_gate(judge, thresholds, **kwargs):
    """notebook 04's gate with the cross-encoder switched off (t1 = 0): P(yes) alone decides."""
    from lessons.agents.grading import RelevanceGate

    return RelevanceGate(judge, thresholds, cross_encoder=LengthCrossEncoder(), **kwargs)


def test_a_p_yes_gate_returns_typed_verdicts_from_p_yes_and_a_threshold():
    from lessons.agents.grading import GradeDocuments

    judge = judged_by_passage({"a": 0.95, "b": 0.7, "c": 0.2})
    grades = p_yes_gate(judge, 0.8)("q", [Document("a"), Document("b"), Document("c")])
    assert [g.binary_score for g in grades] == ["yes", "no", "no"]
    assert all(isinstance(g.verdict, GradeDocuments) for g in grades)
    assert [round(g.p_yes, 2) for g in grades] == [0.95, 0.7, 0.2]
    assert [g.binary_score for g in p_yes_gate(judge, 0.5)("q", [Document("b")])] == ["yes"]


def test_each_language_gets_its_own_threshold():
    grader = p_yes_gate(judged_by_passage({"b": 0.7}), {"en": 0.6, "zh": 0.8})
    assert grader("Which port?", [Document("b")])[0].binary_score == "yes"
    assert grader("哪个端口？", [Document("b")])[0].binary_score == "no"
    with pytest.raises(ValueError, match="no gate thresholds for \\['zh'\\]"):
        p_yes_gate(judged_by_passage({}), {"en": 0.6})


def test_the_judge_is_asked_in_the_questions_language():
    from lessons.retrieval.rerank import RELEVANCE_PROMPT

    judge = judged_by_passage({"b": 0.7})
    grader = p_yes_gate(judge, 0.5)
    grader("Which port?", [Document("b")])
    grader("哪个端口？", [Document("b")])
    asked = [call["messages"][-1].content for call in judge.calls]
    assert "Does this search result help answer the question above?" in asked[0]
    assert "这段搜索结果是否写明了上述问题所问的具体信息？" in asked[1] and "Search result" not in asked[1]
    one_prompt = judged_by_passage({"b": 0.7})
    p_yes_gate(one_prompt, 0.5, prompts=RELEVANCE_PROMPT)("哪个端口？", [Document("b")])
    assert "Search result:" in one_prompt.calls[-1]["messages"][-1].content
    with pytest.raises(ValueError, match="no prompt for"):
        p_yes_gate(judge, 0.5, prompts={"en": RELEVANCE_PROMPT})


def test_a_threshold_outside_zero_to_one_is_rejected():
    from lessons.agents.grading import GateThresholds

    with pytest.raises(ValueError, match="between 0 and 1"):
        p_yes_gate(judged_by_passage({}), 80)
    with pytest.raises(ValueError, match="cross-encoder threshold \\(en\\)"):
        p_yes_gate(judged_by_passage({}), {"en": GateThresholds(1.5, 0.5), "zh": 0.5})


def test_the_loop_records_each_documents_p_yes_in_the_trace():
    judge = judged_by_passage({"port 7420": 0.9, "leave policy": 0.1})
    model = scripted(lambda doc: "no", answer="Port 7420.")
    loop = build_grading_loop(model, Retriever([["port 7420", "leave policy"]]), grader=p_yes_gate(judge, 0.5))
    state = loop.invoke({"question": "Which port?"})
    assert state["outcome"] == "answered" and state["trace"][0].grades == ("yes", "no")
    assert [round(p, 2) for p in state["trace"][0].p_yes] == [0.9, 0.1]


def test_the_threshold_is_the_lowest_that_keeps_abstention_at_the_goal():
    from lessons.agents.grading import choose_threshold

    out_of_kb = [0.1, 0.3, 0.6, 0.2]
    threshold = choose_threshold(in_kb_scores=[0.9, 0.7, 0.5], out_of_kb_scores=out_of_kb, min_abstention=0.75)
    assert 0.3 < threshold <= 0.5  # abstains on 0.1, 0.2, 0.3 (75%) and answers the in-KB 0.5
    assert choose_threshold([0.9], out_of_kb, min_abstention=1.0) > 0.6
    with pytest.raises(ValueError, match="out-of-KB"):
        choose_threshold([0.9], [])


def test_separation_auc_counts_pairs_ordered_correctly():
    from lessons.agents.grading import separation_auc

    assert separation_auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert separation_auc([0.1], [0.9]) == 0.0
    assert separation_auc([0.5, 0.9], [0.5, 0.1]) == 0.875  # 3 pairs won, one tie
    with pytest.raises(ValueError, match="both"):
        separation_auc([0.5], [])


def test_a_rewrite_that_repeats_the_question_is_replaced_by_new_keywords():
    from lessons.agents.grading import RewrittenQuery, new_query

    echoed = RewrittenQuery(query="Which port does Atlas use?", new_keywords=["gRPC", "port", "listener"])
    assert (
        new_query(echoed, "Which port does Atlas use?", ["Which port does Atlas use?"])
        == "Which port does Atlas use? gRPC listener"
    )
    fresh = RewrittenQuery(query="Atlas gRPC listener default", new_keywords=["gRPC"])
    assert (
        new_query(fresh, "Which port does Atlas use?", ["Which port does Atlas use?"]) == "Atlas gRPC listener default"
    )
    tried_before = RewrittenQuery(query="atlas grpc listener default ", new_keywords=["port"])
    assert new_query(tried_before, "Which port?", ["Which port?", "Atlas gRPC listener default"]) == "Which port?"


def test_the_loop_never_searches_an_echoed_rewrite_twice():
    def reply(messages, tools):
        if tools == ["GradeDocuments"]:
            return {"binary_score": "no"}
        return {"query": "q", "new_keywords": ["k1", "k2"]}  # the model echoes the question

    retriever = Retriever([["a"], ["b"], ["c"]])
    build_grading_loop(ScriptedChatModel(default=reply), retriever, max_rounds=2).invoke({"question": "q"})
    assert retriever.queries == ["q", "q k1 k2"]


class LengthCrossEncoder:
    """A stand-in relevance model: the score is read from the passage ("score=0.9 …")."""

    def score(self, pairs):
        return [float(p.split("score=", 1)[1].split()[0]) if "score=" in p else 0.0 for _, p in pairs]


def test_the_gate_asks_the_chat_model_only_about_documents_the_cross_encoder_lets_through():
    from lessons.agents.grading import GateThresholds, RelevanceGate

    asked = []
    judge = judged_by_passage({"score=0.9 a": 0.8, "score=0.7 b": 0.3})
    original = judge.default

    def spy(messages, tools):
        asked.append(messages[-1].content)
        return original(messages, tools)

    judge.default = spy
    gate = RelevanceGate(
        judge, {"en": GateThresholds(0.5, 0.6), "zh": GateThresholds(0.0, 0.9)}, cross_encoder=LengthCrossEncoder()
    )
    grades = gate("q", [Document("score=0.9 a"), Document("score=0.1 c"), Document("score=0.7 b")])
    assert [g.binary_score for g in grades] == ["yes", "no", "no"]
    assert [g.p_yes is None for g in grades] == [False, True, False]
    assert [g.cross_encoder for g in grades] == [0.9, 0.1, 0.7]
    assert len(asked) == 2  # the document below the cross-encoder threshold cost no call


def test_the_gate_needs_thresholds_for_both_languages():
    from lessons.agents.grading import GateThresholds, RelevanceGate

    with pytest.raises(ValueError, match="calibrate_gate"):
        RelevanceGate(judged_by_passage({}), {"en": GateThresholds(0.5, 0.5)}, cross_encoder=LengthCrossEncoder())


def test_calibration_keeps_abstention_and_answers_the_most_in_kb_questions():
    from lessons.agents.grading import calibrate_gate

    in_kb = [[(0.9, 0.8)], [(0.3, 0.3)]]
    out_of_kb = [[(0.85, 0.2)], [(0.2, 0.9)]]  # each signal alone lets one of them through
    gate = calibrate_gate(in_kb, out_of_kb, min_abstention=1.0)
    answered = [any(ce >= gate.cross_encoder and p >= gate.p_yes for ce, p in q) for q in in_kb]
    assert not any(any(ce >= gate.cross_encoder and p >= gate.p_yes for ce, p in q) for q in out_of_kb)
    assert answered == [True, True]  # together they answer both
    assert 0.2 < gate.cross_encoder <= 0.3 and 0.2 < gate.p_yes <= 0.3
    half = calibrate_gate(in_kb, out_of_kb, min_abstention=0.5)
    assert half.cross_encoder >= gate.cross_encoder  # equally good gates: the one that asks the chat model less


def test_calibration_takes_the_middle_of_the_feasible_region_not_its_edge():
    from lessons.agents.grading import calibrate_gate, gate_margin

    # P(yes) separates everything (in-KB ≥ 0.8, out-of-KB ≤ 0.2); the cross-encoder does not (0.1–0.9 both).
    in_kb = [[(0.9, 0.9)], [(0.1, 0.8)], [(0.5, 0.85)]]
    out_of_kb = [[(0.8, 0.2)], [(0.2, 0.1)]]
    gate = calibrate_gate(in_kb, out_of_kb, min_abstention=1.0)
    assert gate.cross_encoder == 0.0  # a t1 just below 0.1 would answer all three too, pressed against one score
    assert 0.45 < gate.p_yes < 0.55  # halfway between 0.2 and 0.8, not just below 0.8 or just above 0.2
    assert gate_margin([*in_kb, *out_of_kb], gate) > 0.25
    edge = type(gate)(0.05, 0.75)  # answers and abstains on all of them as well, with almost no room
    assert gate_margin([*in_kb, *out_of_kb], edge) < gate_margin([*in_kb, *out_of_kb], gate)


def test_calibration_without_out_of_kb_questions_is_refused():
    from lessons.agents.grading import calibrate_gate

    with pytest.raises(ValueError, match="out-of-KB"):
        calibrate_gate([[(0.9, 0.9)]], [])


def test_wilson_interval_is_honest_about_small_samples():
    from lessons.agents.grading import wilson_interval

    low, high = wilson_interval(4, 4)
    assert high == 1.0 and 0.45 < low < 0.55
    low, high = wilson_interval(90, 100)
    assert 0.82 < low < 0.9 < high < 0.95
    assert wilson_interval(0, 0) == (0.0, 1.0)


def loop_result(qid, language, answerable, gated, first_round=False, ungated="answered", rounds=1):
    from lessons.agents.grading import LoopResult

    return LoopResult(
        id=qid,
        language=language,
        type="fact" if answerable else "out_of_kb",
        answerable=answerable,
        gated_outcome=gated,
        gated_answer="",
        rounds=rounds,
        first_round_stop=first_round,
        gated_tokens=10,
        gated_calls=2,
        ungated_outcome=ungated,
        ungated_answer="",
        ungated_tokens=5,
        trace=(),
    )


def test_goal_table_names_counts_intervals_and_verdicts():
    from lessons.agents.grading import goal_table

    results = [
        loop_result("a", "en", False, "not_in_kb"),
        loop_result("b", "en", False, "not_in_kb"),
        loop_result("c", "en", True, "answered", first_round=True),
        loop_result("d", "en", True, "answered"),
        loop_result("e", "zh", False, "answered"),
    ]
    rows = {(r["language"], r["goal"]): r for r in goal_table(results, 0.95, 0.90)}
    assert rows[("en", "abstention (out-of-KB)")]["count"] == "2/2"
    assert rows[("en", "abstention (out-of-KB)")]["verdict"] == "met"
    assert rows[("en", "first-round stop (in-KB)")]["count"] == "1/2"
    assert rows[("en", "first-round stop (in-KB)")]["verdict"] == "missed (the interval reaches the target)"
    assert rows[("zh", "abstention (out-of-KB)")]["verdict"] == "missed"
    assert rows[("zh", "first-round stop (in-KB)")]["verdict"] == "no data"


def test_gate_findings_are_computed_from_the_run():
    import pandas as pd

    from lessons.agents.grading import gate_findings, goal_table

    results = [
        loop_result("a", "en", False, "not_in_kb", ungated="answered"),
        loop_result("c", "en", True, "answered", first_round=True),
        loop_result("d", "en", True, "not_in_kb", rounds=2),
    ]
    menu = pd.DataFrame(
        [
            {
                "language": lang,
                "t₁ cross-encoder": 0.3,
                "t₂ P(yes)": 0.6,
                "separation, cross-encoder": 0.9,
                "separation, P(yes)": 0.7,
            }
            for lang in ("en", "zh")
        ]
    ).set_index("language")
    text = gate_findings(results, menu, pd.DataFrame(goal_table(results)), {"c": True, "d": False}, k=3, max_rounds=2)
    assert "the gate abstained on 1/1" in text and "answered 1/1 of these questions" in text
    assert "answered 1/2 gated against 2/2 ungated; 1/2 in the first round" in text
    assert "held the evidence for 1/2 of them — retrieval was the limit: first-round stops cannot exceed 50%" in text
    assert "the cross-encoder separates better" in text


def test_a_gates_operating_point_counts_round_one_answers_and_refusals():
    from lessons.agents.grading import GateThresholds, gate_operating_point

    in_kb = [[(0.9, 0.9)], [(0.9, 0.5), (0.2, 0.95)], [(0.1, 0.1)]]
    out_of_kb = [[(0.9, 0.6)], [(0.95, 0.85)]]
    point = gate_operating_point(in_kb, out_of_kb, GateThresholds(0.5, 0.8))
    assert point == {
        "first_round": pytest.approx(1 / 3),
        "abstention": 0.5,
    }  # (0.2, 0.95) fails t₁; (0.95, 0.85) passes
    assert gate_operating_point(in_kb, out_of_kb, GateThresholds(0.0, 0.0))["abstention"] == 0.0


def test_split_half_transfer_is_perfect_on_separable_questions_and_honest_on_overlapping_ones():
    from lessons.agents.grading import split_half_transfer

    separable_in = [[(0.9, 0.8 + i / 100)] for i in range(8)]
    separable_out = [[(0.9, 0.2 + i / 100)] for i in range(8)]
    clean = split_half_transfer(separable_in, separable_out, splits=10, seed=1)
    assert clean == {"first_round": 1.0, "abstention": 1.0, "splits_holding_abstention": 1.0}
    overlapping_in = [[(0.9, p)] for p in (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)]
    overlapping_out = [[(0.9, p)] for p in (0.4, 0.55, 0.65, 0.75, 0.85, 0.95)]
    mixed = split_half_transfer(overlapping_in, overlapping_out, splits=30, seed=1)
    assert mixed["first_round"] < 1.0 and mixed["splits_holding_abstention"] < 1.0
    assert mixed == split_half_transfer(overlapping_in, overlapping_out, splits=30, seed=1)  # seeded
    with pytest.raises(ValueError, match="two in-KB and two out-of-KB"):
        split_half_transfer(separable_in[:1], separable_out)


def test_the_default_gate_is_the_one_bench_gate_calibrated_and_holds_on_its_questions():
    """DEFAULT_GATE copies benchmarks/results/gate.json (rounded to 3 decimals): re-running the benchmark with
    another model or gold set must show up here, and the rounding must not move a single decision."""
    import json
    from pathlib import Path

    from lessons.agents.grading import DEFAULT_GATE, GateThresholds, gate_operating_point

    result = json.loads((Path(__file__).parents[1] / "benchmarks" / "results" / "gate.json").read_text())
    for language, calibrated in result["calibrated_gate_top_3"].items():
        assert DEFAULT_GATE[language] == GateThresholds(
            round(calibrated["cross_encoder"], 3), round(calibrated["p_yes"], 3)
        ), language
        rows = [q for q in result["questions"] if q["language"] == language]

        def pairs(row):
            return list(zip(row["cross_encoder"][:3], row["p_yes"][:3]))

        in_kb, out_of_kb = [pairs(r) for r in rows if r["answerable"]], [pairs(r) for r in rows if not r["answerable"]]
        point = gate_operating_point(in_kb, out_of_kb, DEFAULT_GATE[language])
        assert point == pytest.approx(result["by_language"][language]["top_3"]["both_signals"]["in_sample"])
        assert point["abstention"] >= result["min_abstention"]


def test_the_gate_reads_the_score_the_reranker_recorded_and_scores_only_the_rest():
    from lessons.agents.grading import RelevanceGate
    from lessons.retrieval.rerank import RELEVANCE_SCORE

    class CountingCrossEncoder:
        def __init__(self):
            self.pairs = []

        def score(self, pairs):
            self.pairs += pairs
            return [0.5 for _ in pairs]

    model = CountingCrossEncoder()
    gate = RelevanceGate(judged_by_passage({"a": 0.9, "b": 0.9}), 0.5, cross_encoder=model)
    reranked = Document("a", metadata={RELEVANCE_SCORE: 0.93})
    assert gate.cross_encoder_scores("q", [reranked, Document("b")]) == [0.93, 0.5]
    assert [text for _, text in model.pairs] == ["b"]  # the reranked passage was not scored again


# --- thresholds calibrated on your documents: the evaluation command writes them, AGENTIC_RAG_GATE_FILE reads them ---


def test_a_saved_gate_is_the_gate_every_pipeline_reads_when_the_setting_names_it(tmp_path, fresh_settings, monkeypatch):
    from lessons.agents.grading import DEFAULT_GATE, GATE_FILE_SOURCE, GateThresholds, load_gate, save_gate
    from lessons.agents.pipelines import gate_thresholds

    path = tmp_path / "gate.json"
    mine = {"en": GateThresholds(0.0, 0.42), "zh": GateThresholds(0.3, 0.61)}
    save_gate(path, mine, {"documents": "my-docs", "in_sample": False})
    assert load_gate(path) == mine
    assert gate_thresholds() == (dict(DEFAULT_GATE), gate_thresholds()[1])  # unset: the course corpus's
    monkeypatch.setenv("AGENTIC_RAG_GATE_FILE", str(path))
    fresh_settings.cache_clear()
    assert gate_thresholds() == (mine, GATE_FILE_SOURCE)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "no such file"),
        ("{not json", "not a gate file"),
        ('{"thresholds": {"en": {"cross_encoder": 0, "p_yes": 0.5}}}', "no zh thresholds"),
        ('{"thresholds": {"en": {"cross_encoder": 0, "p_yes": 5}, "zh": {"cross_encoder": 0, "p_yes": 0.5}}}',
         "scores between 0 and 1"),
    ],
)  # fmt: skip
def test_a_bad_gate_file_is_an_error_naming_the_file_and_the_fix_never_the_course_thresholds(
    tmp_path, fresh_settings, monkeypatch, content, says
):
    from lessons.agents.pipelines import gate_thresholds
    from lessons.core.settings import SettingsError

    path = tmp_path / "gate.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    monkeypatch.setenv("AGENTIC_RAG_GATE_FILE", str(path))
    fresh_settings.cache_clear()
    with pytest.raises(SettingsError) as error:
        gate_thresholds()
    assert str(path) in str(error.value) and says in str(error.value) and "[gate] calibrate" in str(error.value)
