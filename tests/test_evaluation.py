"""The evaluation module with scripted models: metrics, typed judges that fail loudly, the run and its report."""

import json

import pandas as pd
import pytest
from langchain_core.documents import Document

from lessons.core.fakes import ScriptedChatModel
from lessons.core.usage import deepseek_cost_usd, metered
from lessons.evaluation import (
    PIPELINES,
    FaithfulnessVerdict,
    compare,
    evaluate,
    judge_failures,
    retrieval_scores,
    run_judge,
    save_report,
)
from lessons.evaluation.judges import CompletenessVerdict, Judgement
from lessons.evaluation.metrics import chunk_recall_at_k
from lessons.evaluation.pipelines import (
    PipelineResult,
    UnknownPipeline,
    answer_from,
    check_pipeline_names,
    judge_answer,
    threshold_note,
)
from lessons.evaluation.testset import TestItem


def chunk(text, chunk_id, **meta):
    return Document(page_content=text, metadata={"chunk_id": chunk_id, **meta})


PORT = chunk("Atlas Server exposes its APIs on port 7420 by default.", "c-port")
LEAVE = chunk("Employees in Rotterdam get 27 days of annual leave.", "c-leave")
OCR = chunk("Scanned PDFs pass through an OCR stage.", "c-ocr")
ZH = chunk("Atlas Server 默认在 7420 端口提供 API。", "c-zh")
CHUNKS = [PORT, LEAVE, OCR, ZH]

ITEMS = [
    TestItem(
        id="q-en",
        question="Which port does Atlas Server use?",
        language="en",
        type="fact",
        reference="Port 7420.",
        evidence=["on port 7420 by default"],
        evidence_chunk_ids=["c-port"],
        origin="gold",
    ),
    TestItem(
        id="q-zh",
        question="Atlas Server 默认用哪个端口？",
        language="zh",
        type="generated",
        reference="7420 端口。",
        evidence_chunk_ids=["c-zh"],
        origin="generated",
    ),
    TestItem(id="q-out", question="Who is the CFO?", language="en", type="out_of_kb", origin="gold"),
]


def judge_model(faithful="yes", complete="yes", answer="Port 7420.", found="yes"):
    """A scripted model that answers DraftAnswer and both judges, by the tool it is asked for."""

    def reply(messages, tools):
        if tools == ["FaithfulnessVerdict"]:
            return {"answer_claim": "port 7420", "context_says": "port 7420 by default", "consistent": faithful}
        if tools == ["CompletenessVerdict"]:
            return {"reference_key_fact": "port 7420", "answer_says": "Port 7420", "complete": complete}
        if tools == ["DraftAnswer"]:
            return {"answer": answer, "found": found}
        raise AssertionError(f"unexpected call with tools {tools}")

    return ScriptedChatModel(default=reply)


def test_metered_counts_calls_inside_the_block_only_also_from_threads():
    model = ScriptedChatModel(default="hi")
    with metered() as meter:
        model.invoke("one two three")
        model.batch(["a", "b"], config={"max_concurrency": 2})
    model.invoke("outside the block")
    assert meter.totals.calls == 3
    assert meter.totals.input_tokens == 5 and meter.totals.output_tokens == 3


def test_deepseek_cost_uses_the_list_price(monkeypatch, fresh_settings):
    monkeypatch.setenv("DEEPSEEK_PRICE_INPUT", "1.0")
    monkeypatch.setenv("DEEPSEEK_PRICE_OUTPUT", "2.0")
    assert deepseek_cost_usd(1_000_000, 500_000) == pytest.approx(2.0)


def test_chunk_recall_counts_relevant_ids_in_the_first_k():
    assert chunk_recall_at_k(["a", "b", "c"], ["c", "x"], 2) == 0.0
    assert chunk_recall_at_k(["a", "b", "c"], ["c", "x"], 3) == 0.5
    assert chunk_recall_at_k(["a"], [], 3) == 0.0


def test_retrieval_scores_by_quote_and_by_chunk_id():
    by_quote = retrieval_scores([LEAVE, PORT, OCR], ITEMS[0], n_relevant=1, k=3, rank_k=10)
    assert by_quote == {"hit@3": 1.0, "recall@3": 1.0, "MRR@10": 0.5, "nDCG@10": pytest.approx(1 / 1.5849625)}
    by_id = retrieval_scores([ZH, PORT], ITEMS[1], n_relevant=1, k=1, rank_k=10)
    assert by_id["hit@1"] == 1.0 and by_id["recall@1"] == 1.0 and by_id["MRR@10"] == 1.0
    missed = retrieval_scores([LEAVE, OCR], ITEMS[1], n_relevant=1, k=3, rank_k=10)
    assert missed == {"hit@3": 0.0, "recall@3": 0.0, "MRR@10": 0.0, "nDCG@10": 0.0}


def test_a_judge_gives_a_typed_verdict_with_its_reason():
    judgement = run_judge(judge_model(faithful="no"), FaithfulnessVerdict, "consistent", "check this")
    assert judgement == Judgement(0, "judged", "answer_claim: port 7420 · context_says: port 7420 by default", None)
    assert run_judge(judge_model(), CompletenessVerdict, "complete", "compare").score == 1


def test_a_judge_that_fails_is_recorded_with_its_cause_never_a_score():
    broken = ScriptedChatModel(default="I think the answer is fine")  # never calls the function
    judgement = run_judge(broken, FaithfulnessVerdict, "consistent", "check this")
    assert judgement.score is None and judgement.status == "judge_failed"
    assert "StructuredOutputError" in judgement.cause and "FaithfulnessVerdict" in judgement.cause


def test_abstentions_are_not_judged_and_out_of_kb_has_no_completeness():
    model = ScriptedChatModel()  # any call would fail: nothing may be asked
    abstained = PipelineResult("not in the KB", True, [PORT], [])
    faithful, complete = judge_answer(model, ITEMS[0], abstained)
    assert (faithful.status, faithful.score) == ("abstained", None)
    assert (complete.status, complete.score) == ("abstained", 0)
    faithful, complete = judge_answer(model, ITEMS[2], abstained)
    assert complete.status == "not_applicable" and complete.score is None
    assert model.calls == []


def test_an_answer_without_context_is_not_faithful_and_is_not_sent_to_the_judge():
    model = judge_model()
    faithful, complete = judge_answer(model, ITEMS[2], PipelineResult("The CFO is Ann.", False, [], []))
    assert faithful.score == 0 and complete.status == "not_applicable"
    assert model.calls == []


def test_the_shared_answer_step_reads_the_top_k_and_can_abstain():
    model = judge_model(found="no", answer="")
    result = answer_from(model, "Who is the CFO?", [PORT, LEAVE, OCR], k=2)
    assert result.abstained and result.context == [] and result.retrieved == [PORT, LEAVE, OCR]
    prompt = model.calls[0]["messages"][0].content
    assert "7420" in prompt and "27 days" in prompt and "OCR" not in prompt
    answered = answer_from(judge_model(), "Which port?", [PORT, LEAVE], k=1)
    assert not answered.abstained and answered.answer == "Port 7420." and answered.context == [PORT]


def fake_pipelines():
    def good(question):
        if "CFO" in question:
            return PipelineResult("not in the KB", True, [LEAVE], [])
        ranked = [ZH, PORT] if "端口" in question else [PORT, LEAVE]
        return PipelineResult("Port 7420.", False, ranked, ranked[:1])

    def broken(question):
        raise RuntimeError("index unavailable")

    return {"good": good, "broken": broken}


def test_evaluate_keeps_every_row_and_counts_errors_and_judge_failures():
    def flaky(messages, tools):  # the completeness judge never gives a valid verdict on the Chinese question
        if tools == ["CompletenessVerdict"]:
            if "端口" in messages[0].content:
                return "not a function call"
            return {"reference_key_fact": "7420", "answer_says": "7420", "complete": "yes"}
        return {"answer_claim": "7420", "context_says": "7420", "consistent": "yes"}

    rows = evaluate(fake_pipelines(), ITEMS, ScriptedChatModel(default=flaky), CHUNKS, k=2, progress=False)
    assert len(rows) == 6 and list(rows["pipeline"].unique()) == ["good", "broken"]
    table = compare(rows, k=2)
    good, broken = table.loc["good"], table.loc["broken"]
    assert good["hit@2"] == 1.0 and good["MRR@10"] == 1.0
    assert good["abstained (out-of-KB)"] == 1.0 and good["answered (in-KB)"] == 1.0
    assert good["judge failures"] == 1 and good["completeness"] == 1.0  # the failed one is not counted as 0 or 1
    assert broken["pipeline errors"] == 3 and broken["judge failures"] == 0
    failures = judge_failures(rows)
    assert failures[["pipeline", "judge"]].values.tolist() == [["good", "completeness"]]
    assert "StructuredOutputError" in failures["cause"].iloc[0]
    errors = rows[rows["pipeline"] == "broken"]
    assert errors["error"].str.contains("index unavailable").all()
    assert (errors["faithful_status"] == "pipeline_error").all()


def test_the_same_inputs_give_the_same_table():
    def run():
        rows = evaluate(fake_pipelines(), ITEMS, judge_model(), CHUNKS, k=2, progress=False)
        return compare(rows, k=2, timing=False)

    first, second = run(), run()
    pd.testing.assert_frame_equal(first, second)
    assert "s/question" not in first.columns


def test_chinese_questions_go_through_the_same_judges():
    model = judge_model(answer="7420 端口。")
    rows = evaluate({"good": fake_pipelines()["good"]}, [ITEMS[1]], model, CHUNKS, k=2, progress=False)
    row = rows.iloc[0]
    assert row["faithful"] == 1 and row["complete"] == 1 and row["hit@2"] == 1.0
    judged_prompts = [c["messages"][0].content for c in model.calls]
    assert any("Atlas Server 默认用哪个端口？" in p and "7420 端口" in p for p in judged_prompts)


def test_the_report_is_json_without_nan_and_markdown_lists_failures(tmp_path):
    rows = evaluate(fake_pipelines(), ITEMS, ScriptedChatModel(default="no function call"), CHUNKS, k=2, progress=False)
    table = compare(rows, k=2)
    json_path, md_path = save_report(tmp_path, rows, table, ITEMS, {"model": "scripted"})
    text = json_path.read_text()
    assert "NaN" not in text
    data = json.loads(text)
    assert len(data["rows"]) == 6 and {r["pipeline"] for r in data["table"]} == {"good", "broken"}
    assert data["rows"][0]["faithful"] is None and data["rows"][0]["faithful_status"] == "judge_failed"
    report = md_path.read_text()
    assert "## Judge failures" in report and "good · q-en · factual consistency" in report
    assert "broken · q-en: RuntimeError: index unavailable" in report


def test_unknown_pipeline_names_list_the_known_ones():
    assert check_pipeline_names(["dense", "hybrid"]) == ["dense", "hybrid"]
    with pytest.raises(UnknownPipeline, match="choose from: dense, hybrid, hybrid\\+rerank"):
        check_pipeline_names(["dense", "colbert"], where="my.toml")
    with pytest.raises(UnknownPipeline, match="no pipelines"):
        check_pipeline_names([])


def test_the_registry_covers_the_earlier_notebooks():
    assert list(PIPELINES) == [
        "dense",
        "hybrid",
        "hybrid+rerank",
        "qa-hybrid",
        "grading-loop",
        "three-agents",
        "filtered+rerank",
        "routed+rerank",
        "graph+rerank",
        "raptor+rerank",
    ]


def test_the_gate_report_says_how_far_below_its_thresholds_each_round_was():
    from lessons.agents.grading import GateThresholds, RoundTrace
    from lessons.agents.pipelines import gate_report

    trace = [
        RoundTrace(1, "q", ("no", "no"), "rewrite", (0.41, None), (0.2, -1.5)),
        RoundTrace(2, "q again", ("yes", "no"), "answer", (0.9, 0.3), (None, None)),
    ]
    report = gate_report("Which port?", trace, {"en": GateThresholds(0.1, 0.77), "zh": 0.5})
    assert report == {
        "language": "en",
        "thresholds": {"cross_encoder": 0.1, "p_yes": 0.77},
        "rounds": [
            {"round": 1, "query": "q", "best_cross_encoder": 0.2, "best_p_yes": 0.41, "passed": 0, "decision": "rewrite"},
            {"round": 2, "query": "q again", "best_cross_encoder": None, "best_p_yes": 0.9, "passed": 1,
             "decision": "answer"},
        ],
    }  # fmt: skip
    assert gate_report("哪个端口？", trace, {"zh": 0.5})["thresholds"] == {"cross_encoder": 0.0, "p_yes": 0.5}
    assert gate_report("Which port?", [], {"zh": 0.5}) == {"language": "en", "thresholds": None, "rounds": []}


def test_the_reports_cache_line_embeds_through_the_course_embedding_cache(fresh_settings, monkeypatch, tmp_path):
    from fakes import KeywordEmbeddings

    from lessons.core import embeddings
    from lessons.evaluation.cli import cache_note
    from lessons.retrieval import semantic_cache

    model = KeywordEmbeddings(("port", "ARR", "leave"), name="keyword-embedder")
    monkeypatch.setattr(embeddings, "get_embeddings", lambda *args, **kwargs: model)
    monkeypatch.setitem(semantic_cache.DEFAULT_THRESHOLDS, ("keyword-embedder", True), 0.99)
    items = [
        TestItem(id=qid, question=question, language="en", type="fact", reference=f"answer {qid}",
                 evidence=[qid], evidence_chunk_ids=[], origin="gold")
        for qid, question in [("port", "Which port does Atlas use?"), ("arr", "What was ARR in Q2?")]
    ]  # fmt: skip
    chunks = [Document(page_content="Atlas uses port 7420.", metadata={"chunk_id": "c1"})]
    first = cache_note(items, chunks, tmp_path / "run-1")
    embedded = model.calls
    assert embedded == 2 and "2 evaluated questions stored" in first  # stored, then asked again: embedded once each
    assert cache_note(items, chunks, tmp_path / "run-2") == first
    assert model.calls == embedded, "the next run's questions come from the embedding cache, not the model"


def test_the_commands_report_is_written_in_the_course_language(fresh_settings, monkeypatch, tmp_path):
    """report.md, the notes in it and the lines the command prints come from the catalogue: Chinese in Chinese,
    the same English as before in English; results.json keeps the English keys."""
    from fakes import KeywordEmbeddings

    from lessons.core import embeddings
    from lessons.evaluation.cli import EvalConfig, cache_note, rerank_note
    from lessons.retrieval import semantic_cache
    from lessons.retrieval.rerank import DEFAULT_FIRST_STAGE_WEIGHT

    model = KeywordEmbeddings(("port", "leave"), name="keyword-embedder")
    monkeypatch.setattr(embeddings, "get_embeddings", lambda *args, **kwargs: model)
    monkeypatch.setitem(semantic_cache.DEFAULT_THRESHOLDS, ("keyword-embedder", True), 0.99)
    monkeypatch.chdir(tmp_path)
    rows = evaluate(fake_pipelines(), ITEMS, ScriptedChatModel(default="no function call"), CHUNKS, k=2, progress=False)
    table = compare(rows, k=2)
    config = EvalConfig(tmp_path / "eval.toml", tmp_path, "gold", ["dense"], tmp_path / "out")
    reports = {}
    for language in ("zh", "en"):
        monkeypatch.setenv("AGENTIC_RAG_LANG", language)
        meta = {"model": "scripted", "gate thresholds": threshold_note("my-docs"), "reranker": rerank_note(config),
                "semantic cache": cache_note(ITEMS, CHUNKS, tmp_path / language)}  # fmt: skip
        json_path, md_path = save_report(tmp_path / language, rows, table, ITEMS, meta)
        reports[language] = md_path.read_text(encoding="utf-8")
        assert list(json.loads(json_path.read_text())["meta"]) == list(meta)  # the keys stay English
    chinese, english = reports["zh"], reports["en"]
    assert chinese.startswith("# RAG 评测报告\n") and english.startswith("# RAG evaluation report\n")
    for heading in ("## 测试集", "## 流水线比较", "## 评审失败", "## 流水线错误"):
        assert f"\n{heading}\n" in chinese
    assert "- **模型**: scripted" in chinese and "- **model**: scripted" in english
    assert "- **门控阈值**: 门控阈值（en P(yes) ≥ " in chinese and "由 benchmarks/bench_gate.py" in chinese
    assert "它**没有**在 my-docs 上校准" in chinese and "NOT calibrated on my-docs" in english
    assert (
        f"- **重排器**: default_reranker，第一阶段权重 {DEFAULT_FIRST_STAGE_WEIGHT:g}，跨语言路线 开（课程的默认设置）"
        in chinese
    )
    assert "- **语义缓存**: 放在任何流水线前面，阈值 0.990，打开防护：存入 2 道被评测的问题" in chinese
    assert "- **semantic cache**: in front of any pipeline, at threshold 0.990 with its guard: 2 evaluated" in english
    headers = {language: [[cell.strip() for cell in line.split("|")[1:3]] for line, below in
                          zip(report.splitlines(), report.splitlines()[1:]) if below.startswith("|:")]
               for language, report in reports.items()}  # fmt: skip
    assert headers["zh"] == [["问题数", "英文"], ["流水线", "问题数"]]  # the test set, the comparison
    assert headers["en"] == [["questions", "English"], ["pipeline", "questions"]]
    assert not any(english_line in chinese for english_line in ("## Judge failures", "None.", "Retrieval metrics"))
