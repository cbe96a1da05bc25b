"""Measuring the sub-agent against single-shot RAG with scripted models: completeness, evidence recall, cost."""

import pandas as pd
import pytest
from langchain_core.documents import Document

from lessons.agents.deep_research import FULL_TEXT, DeepResearchAgent, Observation, Page, PageStore
from lessons.core.fakes import ScriptedChatModel
from lessons.evaluation.deep_research_eval import (
    DEEP,
    SINGLE_SHOT,
    MethodRun,
    compare_methods,
    evidence_recall,
    measure_sample,
    method_findings,
    run_deep_research,
    run_single_shot,
    search_recall,
)
from lessons.evaluation.pipelines import PipelineResult
from lessons.ingest.corpus import GoldQuestion, SourceRef, load_gold

QUESTION = GoldQuestion(
    id="en-x",
    question="Which tiers include Guard, and when was it released?",
    language="en",
    type="multi_hop",
    answer="Business and Enterprise; Atlas 4.2, 1 July 2026.",
    sources=[SourceRef(file="w.pdf", page=4)],
    evidence=["Guard is in Business and Enterprise", "Atlas 4.2 was released on 1 July 2026"],
)
PAGES = PageStore(
    [
        Page("w.pdf", 4, "page 4", "Guard is in Business and Enterprise."),
        Page("notes.md", 2, "Atlas 4.2", "Atlas 4.2 was released on 1 July 2026. It adds Guard."),
    ]
)


def search(query):
    if query == "Guard release":
        hit = Document(
            "Atlas 4.2 was released on 1 July 2026. […]", metadata={"source": "notes.md", "page": 2, "kind": "chunk"}
        )
    else:
        hit = Document("Guard is in Business and Enterprise.", metadata={"source": "w.pdf", "page": 4, "kind": "chunk"})
    return Observation("search", f"search({query!r})", (hit,))


def judge_says(verdict):
    return {"reference_key_fact": "x", "answer_says": "x", "complete": verdict}


def model_for(decisions, answer, verdict="yes"):
    decisions = list(decisions)

    def reply(messages, tools):
        if tools == ["ResearchDecision"]:
            return decisions.pop(0)
        if tools == ["ResearchDraft"]:
            return answer
        if tools == ["CompletenessVerdict"]:
            return judge_says(verdict)
        raise AssertionError(tools)

    return ScriptedChatModel(default=reply)


def test_evidence_recall_counts_quotes_in_everything_read():
    assert evidence_recall(["Guard is in Business and Enterprise."], QUESTION.evidence) == 0.5
    assert evidence_recall([], QUESTION.evidence) == 0.0 and evidence_recall(["x"], []) == 0.0


def test_a_deep_research_run_is_measured():
    decision = {
        "reason": "release date",
        "action": "search",
        "query": "Guard release",
        "source_id": "",
        "page_index": 0,
    }
    answer = {"answer": "Business and Enterprise; 1 July 2026.", "cited_chunks": [1, 2], "found": "yes"}
    model = model_for([decision, {**decision, "action": "answer", "query": ""}], answer)
    run = run_deep_research(QUESTION, DeepResearchAgent(model, search, PAGES, max_steps=3), model)
    assert run.method == DEEP and run.answered and run.complete == 1.0 and run.judge_status == "judged"
    assert run.evidence_recall == 1.0 and run.tool_calls == 2 and run.pages_read == 0
    assert run.llm_calls == 3, "two decisions and the answer; the judge is not counted"
    assert run.tokens > 0
    assert run.at_cap == 0.0, "the model chose to answer before the cap"
    capped = run_deep_research(
        QUESTION,
        DeepResearchAgent(model_for([decision] * 3, answer), search, PAGES, max_steps=2),
        model_for([], answer),
    )
    assert capped.at_cap == 1.0 and capped.tool_calls == 2
    shot = run_single_shot(QUESTION, lambda q: PipelineResult("x", False, [], []), model_for([], answer), k=3)
    table = compare_methods([run, capped, shot])
    assert table.loc[DEEP, "at the cap"] == 0.5 and pd.isna(table.loc[SINGLE_SHOT, "at the cap"])


def test_an_abstention_scores_zero_without_asking_the_judge():
    model = model_for(
        [{"reason": "nothing", "action": "answer", "query": "", "source_id": "", "page_index": 0}],
        {"answer": "", "cited_chunks": [], "found": "no"},
    )
    run = run_deep_research(QUESTION, DeepResearchAgent(model, search, PAGES), model)
    assert not run.answered and run.complete == 0.0 and run.judge_status == "abstained"
    assert not any(c["tools"] == ["CompletenessVerdict"] for c in model.calls)


def test_single_shot_reads_only_its_top_k_and_a_judge_failure_is_recorded():
    retrieved = [
        Document("Guard is in Business and Enterprise."),
        Document("x"),
        Document("Atlas 4.2 was released on 1 July 2026."),
    ]
    pipeline = lambda question: PipelineResult("Business and Enterprise.", False, retrieved, retrieved[:2])
    broken_judge = ScriptedChatModel(default=lambda messages, tools: "no function call")
    run = run_single_shot(QUESTION, pipeline, broken_judge, k=2)
    assert run.method == SINGLE_SHOT and run.evidence_recall == 0.5 and run.tool_calls == 1
    assert run.complete is None and run.judge_status == "judge_failed"
    table = compare_methods([run])
    assert table.loc[SINGLE_SHOT, "judge failures"] == 1 and table.loc[SINGLE_SHOT, "questions"] == 1


def test_compare_methods_averages_per_method_and_type():
    decision = {"reason": "nothing", "action": "answer", "query": "", "source_id": "", "page_index": 0}
    answer = {"answer": "Business and Enterprise.", "cited_chunks": [1], "found": "yes"}
    deep = run_deep_research(
        QUESTION, DeepResearchAgent(model_for([decision], answer, "no"), search, PAGES), model_for([], answer, "no")
    )
    pipeline = lambda question: PipelineResult("x", True, [], [])
    shot = run_single_shot(QUESTION, pipeline, model_for([], answer), k=3)
    table = compare_methods([deep, shot])
    assert list(table.index) == [DEEP, SINGLE_SHOT]
    assert table.loc[DEEP, "complete"] == 0.0 and table.loc[DEEP, "evidence recall"] == 0.5
    assert table.loc[SINGLE_SHOT, "complete"] == 0.0 and table.loc[SINGLE_SHOT, "evidence recall"] == 0.0
    assert list(compare_methods([deep, shot], by="type").index) == [(DEEP, "multi_hop"), (SINGLE_SHOT, "multi_hop")]


def test_the_measure_sample_is_balanced_seeded_and_ends_with_the_contradiction():
    gold = load_gold()
    sample = measure_sample(gold, 4, 2, seed=3)
    assert [(q.type, q.language) for q in sample] == [("multi_hop", "en")] * 2 + [("multi_hop", "zh")] * 2 + [
        ("table", "en"),
        ("table", "zh"),
        ("contradiction", "en"),
    ]
    assert [q.id for q in sample] == [q.id for q in measure_sample(gold, 4, 2, seed=3)]
    assert [q.type for q in measure_sample(gold, 1, 0, seed=3)] == ["multi_hop", "contradiction"]


def test_the_chinese_copy_asks_the_contradiction_case_in_chinese(tmp_path, monkeypatch):
    gold = load_gold()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    case = measure_sample(gold, 0, 0)[-1]
    assert (case.id, case.language) == ("en-052", "zh") and "每用户每月" in case.question


def test_search_recall_reads_the_whole_chunks_behind_the_shown_hits_per_reranker():
    def snippet_search(query):  # the snippet is cut; the whole chunk holds the quote
        hit = Document(
            "Guard is in […]",
            metadata={"source": "w.pdf", "page": 4, "kind": "chunk", FULL_TEXT: "Guard is in Business and Enterprise."},
        )
        return Observation("search", f"search({query!r})", (hit,))

    table = search_recall([QUESTION], {"cut": snippet_search, "nothing": lambda q: Observation("search", "s")})
    assert list(table["reranker"]) == ["cut", "nothing"] and list(table["id"]) == ["en-x", "en-x"]
    assert list(table["evidence recall"]) == [0.5, 0.0]
    with pytest.raises(ValueError, match="search 'broken' failed on en-x: no index"):
        search_recall([QUESTION], {"broken": lambda q: Observation("search", "s", error="no index")})


def _run(qid, kind, method, complete, recall, at_cap=0.0, pages=0, tokens=100, contradiction=""):
    return MethodRun(
        id=qid,
        type=kind,
        language="en",
        method=method,
        answer="a",
        answered=True,
        complete=complete,
        judge_status="judged" if complete is not None else "judge_failed",
        evidence_recall=recall,
        tool_calls=3 if method == DEEP else 1,
        pages_read=pages,
        llm_calls=3 if method == DEEP else 1,
        tokens=tokens,
        seconds=2.0,
        contradiction=contradiction,
        at_cap=at_cap,
    )


def test_findings_are_computed_from_the_runs_and_follow_the_sign():
    runs = [
        _run("q1", "multi_hop", DEEP, 1.0, 1.0, at_cap=1.0, pages=1, tokens=400),
        _run("q1", "multi_hop", SINGLE_SHOT, 0.0, 0.5),
        _run("q2", "contradiction", DEEP, None, 0.0, tokens=400, contradiction="states the conflict"),
        _run("q2", "contradiction", SINGLE_SHOT, 1.0, 0.5, contradiction="follows the consistent sources"),
    ]
    text = "\n".join(method_findings(runs))
    assert "deep research 1 of 2, single-shot hybrid 1 of 2** — the same count" in text
    assert "1 judge failure(s)" in text and "moves a share by 0.50" in text
    assert "multi-hop 1.00 against 0.50 (deep research read more)" in text
    assert "contradiction 0.00 against 0.50 (single-shot read more)" in text
    assert "the step cap in 1 of 2 questions, the model's own `answer` in 1; it read a page in 1 of 2" in text
    assert "4.0× the tokens" in text
    assert "deep research: states the conflict; single-shot hybrid: follows the consistent sources" in text
    better = [_run("q1", "table", DEEP, 1.0, 1.0), _run("q1", "table", SINGLE_SHOT, 0.0, 1.0)]
    assert "deep research gave 1 more complete answers" in method_findings(better)[0]
    assert "(the same)" in method_findings(better)[1]
    worse = [_run("q1", "table", DEEP, 0.0, 1.0), _run("q1", "table", SINGLE_SHOT, 1.0, 1.0)]
    assert "single-shot gave 1 more complete answers" in method_findings(worse)[0]
    with pytest.raises(ValueError, match="needs runs of both"):
        method_findings(better[:1])
