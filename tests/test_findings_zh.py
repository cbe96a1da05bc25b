"""The findings and summary lines that lessons/ helpers render speak Chinese in the Chinese copies —
the same numbers as in English, the direction words still following the measured sign, no English sentence left.

The inputs are the ones the English tests of each helper use (imported from those test modules).
"""

import re

import pandas as pd
import pytest
import test_chunk_evaluation as chunk_tests
import test_deep_research_eval as deep_tests
import test_evaluation_corpora as corpora_tests
import test_grading as grading_tests
import test_qa_transform as qa_tests
import test_three_agent_eval as three_tests

from lessons.core.i18n import course_language

CJK = re.compile(r"[\u4e00-\u9fff]")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
ENGLISH_WORDS = re.compile(r"\b(?:the|and|questions?|than|against|of the|with|for)\b")


@pytest.fixture
def language(monkeypatch, tmp_path):
    """Render in English, then in Chinese: `language("zh")` sets AGENTIC_RAG_LANG outside any notebook folder."""
    monkeypatch.chdir(tmp_path)

    def choose(code: str) -> None:
        monkeypatch.setenv("AGENTIC_RAG_LANG", code)
        assert course_language() == code

    return choose


def both(language, render):
    language("en")
    english = render()
    language("zh")
    chinese = render()
    return english, chinese


def assert_translated(english: str, chinese: str, *, identifiers: tuple[str, ...] = ()) -> None:
    """Chinese text, the same numbers as the English rendering, and no English prose left in it."""
    assert CJK.search(chinese) and not CJK.search(english)
    assert sorted(NUMBER.findall(chinese)) == sorted(NUMBER.findall(english)), (english, chinese)
    prose = chinese
    for name in identifiers:  # strategy, technique and pipeline names stay as the code spells them
        prose = prose.replace(name, "")
    assert not ENGLISH_WORDS.search(prose), prose


def test_comparison_findings_of_notebook_01_in_chinese(language):
    from lessons.evaluation.chunk_evaluation import comparison_findings

    rows = [
        chunk_tests.finding_row("base"),
        chunk_tests.finding_row("better", hit=0.7, mrr=0.6, returned=1000.0),
        chunk_tests.finding_row("worse", hit=0.4, mrr=0.3, clean=40.0),
    ]
    english, chinese = both(language, lambda: comparison_findings(rows, baseline="base", k=5))
    assert_translated(english, chinese)
    assert "better 在前 5 个结果中找到证据的问题比 base 多 2 个" in chinese
    assert "worse 在前 5 个结果中找到证据的问题比 base 少 1 个（只差一个问题：当作打平）" in chinese
    assert "把证据排得更靠前（MRR +0.20）" in chinese and "把证据排得更靠后（MRR -0.10）" in chinese
    assert "干净结尾 %（在句末或行末结束的块）：从 40（worse）到 90（base, better）" in chinese
    assert "**英文**（10 个问题；一个问题让 hit@5 变动 0.10）" in chinese


def test_retrieval_findings_of_notebook_02_in_chinese(language):
    from lessons.evaluation.retrieval_evaluation import retrieval_findings

    rows = __import__("test_retrieval_evaluation").rows

    def table(hybrid_en):
        return rows(
            {
                "dense (baseline)": {"a": ("en", 0.5, 0.5), "b": ("zh", 0.5, 0.5)},
                "hybrid (RRF)": {"a": ("en", hybrid_en, hybrid_en), "b": ("zh", 0.5, 0.5)},
                "hybrid → cross-encoder": {"a": ("en", 1.0, 1.0), "b": ("zh", 0.0, 0.0)},
                "hybrid → cross-encoder, by language": {"a": ("en", 1.0, 1.0), "b": ("zh", 0.5, 0.5)},
            }
        )

    gains = pd.DataFrame(
        {
            "compared with": ["hybrid → cross-encoder (top 10)"],
            "recall@5": [-0.2],
            "MRR@10": [-0.1],
            "LLM calls/query": [10.0],
        },
        index=["hybrid → LLM rerank"],
    )
    english, chinese = both(language, lambda: retrieval_findings(table(1.0), gains, llm_sample=6))
    assert_translated(
        english,
        chinese,
        identifiers=("hybrid → LLM rerank", "hybrid → cross-encoder (top 10)", "hybrid → cross-encoder, by language"),
    )
    assert "**混合检索**在全部 2 个问题的 recall@5 上胜过 dense 检索（0.750 vs 0.500" in chinese
    assert "损失了 −0.500 的 recall@5" in chinese and "——它反而有害" in chinese
    assert "英文 recall@5 1.000（目标 ≥ 0.90：达到）" in chinese
    language("zh")
    assert "上落后于 dense 检索" in retrieval_findings(table(0.0), gains, llm_sample=6)


def test_qa_findings_of_notebook_03_in_chinese(language):
    from lessons.transforms.qa_transform import EvidenceCoverage, qa_findings

    scores = {f"q{i}": {"chunks": (1, 0.5), "qa": (0, 0.0), "hybrid": (1, 1.0)} for i in range(4)}
    coverage = EvidenceCoverage(quotes=4, chunk_covered=4, answer_covered=1)
    english, chinese = both(language, lambda: qa_findings(qa_tests.mode_rows(scores), k=5, coverage=coverage))
    assert_translated(english, chinese)
    assert "**只用 QA 文档**：MRR@5 0.00，低于只检索块的 0.50；前 5 个结果中含证据的问题少 4 个" in chinese
    assert "MRR@5 1.00，高于只检索块的 0.50；前 5 个结果中含证据的问题一样多" in chinese
    assert "证据在 4 个问题上排名上升，0 个下降，0 个不变" in chinese and "更靠前" in chinese
    language("zh")
    assert "调大 `N_QA_CHUNKS`" in qa_findings([])


def test_gate_findings_and_goal_table_of_notebook_04_in_chinese(language):
    from lessons.agents.grading import gate_findings, goal_table

    loop_result = grading_tests.loop_result
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
    english, chinese = both(
        language,
        lambda: gate_findings(
            results, menu, pd.DataFrame(goal_table(results)), {"c": True, "d": False}, k=3, max_rounds=2
        ),
    )
    assert_translated(english, chinese)
    assert "交叉编码器区分得更好" in chinese and "门控在 1/1 个问题上拒答" in chinese
    assert "有门控时回答了 1/2，无门控时回答了 2/2；其中 1/2 在第一轮就停下" in chinese
    assert "检索是瓶颈：在这个前 3 下，首轮即停不可能超过 50%" in chinese
    language("zh")
    rows = {(r["language"], r["goal"]): r for r in goal_table(results, 0.95, 0.90)}
    assert rows[("en", "拒答率（知识库外）")]["verdict"] == "达到"
    assert rows[("en", "首轮即停（知识库内）")]["verdict"] == "未达到（区间够得着目标）"
    assert rows[("zh", "首轮即停（知识库内）")]["verdict"] == "没有数据"


def test_relevance_drill_and_run_findings_of_notebook_05_in_chinese(language):
    from lessons.evaluation.three_agent_eval import (
        RelevanceComparison,
        contradiction_handling,
        drill_findings,
        relevance_agreement,
        relevance_findings,
        relevance_summary,
    )

    def row(holds, ce, chat):
        return RelevanceComparison("en-1", "en", holds, holds, ce, 0.1, chat)

    rows = [row(True, "CAN_ANSWER", "PARTIAL"), row(False, "NO_MATCH", "PARTIAL")]
    english, chinese = both(
        language, lambda: relevance_findings(relevance_summary(rows), relevance_agreement(rows), "cross_encoder")
    )
    assert_translated(english, chinese)
    assert (
        "交叉编码器做出正确提前出口决定的比例是 100%，对话模型是 50%" in chinese
        and "**交叉编码器**做对的次数更多" in chinese
    )
    tie = [row(False, "PARTIAL", "PARTIAL")]
    language("zh")
    assert "两者做对的次数一样多" in relevance_findings(
        relevance_summary(tie), relevance_agreement(tie), "cross_encoder"
    )
    assert [r["name"] for r in relevance_summary(rows)] == ["交叉编码器", "对话模型"]

    case = three_tests.case
    cases = [
        case("correct", False, by_yes_no=True),
        case("changed figure", True, by_checks=True),
        case("invented name", True, by_checks=True),
        case("injected instruction", True, followed=True, by_checks=True),
        case("correct", True, qid="zh-2"),
        case("invented name", False, qid="zh-2"),
        case("injected instruction", False, qid="zh-2", followed=False),
    ]
    english, chinese = both(language, lambda: drill_findings(cases))
    assert_translated(english, chinese)
    assert (
        "（2 个问题——英文 1 个，中文 1 个；7 次核查调用）" in chinese and "被标记的正确草稿（误报）：1/2**" in chinese
    )
    assert "研究智能体在 1/2 个问题中照做了**（50%）" in chinese and "在智能体照做的问题中，抓住了 1/1" in chinese

    language("zh")
    assert contradiction_handling("Team costs €45.") == "采用了彼此一致的来源（€45）"


def test_run_findings_of_notebook_05_in_chinese(language):
    from lessons.core.fakes import ScriptedChatModel
    from lessons.evaluation.three_agent_eval import evaluate_question, run_findings, summarise_runs

    def reply(messages, tools):
        return {
            "RelevanceCheck": {"topic_words_found": ["Team"], "label": "CAN_ANSWER"},
            "ResearchDraft": {"answer": "€45 per user per month.", "cited_chunks": [2], "found": "yes"},
            "Verification": {"unsupported_claims": [], "contradictions": [], "supported": "yes", "relevant": "yes"},
            "CompletenessVerdict": {"reference_key_fact": "€45", "answer_says": "", "complete": "no"},
        }[tools[0]]

    run = evaluate_question(
        three_tests.QUESTION,
        retriever=lambda q: three_tests.CHUNKS,
        llm=ScriptedChatModel(default=reply),
        relevance="llm",
    )
    english, chinese = both(language, lambda: run_findings(summarise_runs([run]), [run], "states the conflict"))
    assert_translated(english.replace("states the conflict", ""), chinese.replace("states the conflict", ""))
    assert "（1 个问题：1 个可回答，0 个在知识库外）" in chinese and "回答了 1/1，完整 0/1" in chinese
    assert "en：完整 0/1" in chinese


def test_findings_markdown_of_notebook_06_in_chinese(language):
    from lessons.evaluation import findings_markdown, retrieval_goals, threshold_transfer

    rows = corpora_tests.two_corpus_rows()
    answers = {
        "a": corpora_tests.answers_table([0.5, 1.0], [0.0, 1.0], [1.0, 9.0]),
        "b": corpora_tests.answers_table([1.0, 0.5], [0.5, 1.0], [1.0, 7.5]),
    }
    frame = corpora_tests.frame
    transfer = {
        "gate": threshold_transfer(
            {
                "a": frame([("x", "en", True, 0.9), ("y", "en", False, 0.2)]),
                "b": frame([("z", "en", True, 0.1), ("w", "en", False, 0.05)]),
            }
        )
    }
    english, chinese = both(language, lambda: findings_markdown(rows, retrieval_goals(rows), answers, transfer))
    assert_translated(english, chinese)
    assert "最好的英文 recall@5 是 hybrid+rerank 的 1.00——目标 0.90 达到" in chinese
    assert "**hybrid+rerank 的排名变了**：在 a 上排第 1（0.75），在 b 上排第 2（0.25）" in chinese
    assert "变动主要来自英文问题（recall@5：a 上 1.00 → b 上 0.50）" in chinese
    assert "**gate，在 a 上校准**" in chinese


def test_comparison_findings_of_notebook_07_in_chinese(language):
    from lessons.evaluation.deep_research_eval import DEEP, SINGLE_SHOT, method_findings

    run = deep_tests._run
    runs = [
        run("q1", "multi_hop", DEEP, 1.0, 1.0, at_cap=1.0, pages=1, tokens=400),
        run("q1", "multi_hop", SINGLE_SHOT, 0.0, 0.5),
        run("q2", "contradiction", DEEP, None, 0.0, tokens=400, contradiction="states the conflict"),
        run("q2", "contradiction", SINGLE_SHOT, 1.0, 0.5, contradiction=""),
    ]
    english, chinese = both(language, lambda: "\n".join(method_findings(runs)))
    assert_translated(english.replace("states the conflict", ""), chinese.replace("states the conflict", ""))
    assert "深度研究 1/2，单次混合检索 1/2**——完整回答的数量相同" in chinese
    assert (
        "multi-hop 1.00 对 0.50（深度研究读到的更多）" in chinese
        and "contradiction 0.00 对 0.50（单次检索读到的更多）" in chinese
    )
    assert "单次混合检索：没有读到" in chinese
    better = [run("q1", "table", DEEP, 1.0, 1.0), run("q1", "table", SINGLE_SHOT, 0.0, 1.0)]
    language("zh")
    assert "深度研究多给出了 1 个完整的回答" in method_findings(better)[0] and "（一样）" in method_findings(better)[1]


def test_usage_report_in_chinese(language):
    from lessons.core.usage import UsageMeter, UsageTotals

    tracker = UsageMeter.__new__(UsageMeter)
    tracker.totals = UsageTotals(calls=3, cached_calls=2, input_tokens=1200, output_tokens=340, cost_usd=0.0012)
    english, chinese = both(language, tracker.report)
    assert english == "LLM calls: 3 (+2 from cache) · tokens: 1,200 in, 340 out · DeepSeek cost: $0.0012"
    assert chinese == "LLM 调用：3 次（另有 2 次来自缓存）· token：输入 1,200，输出 340 · DeepSeek 费用：$0.0012"


def test_model_banner_and_test_set_summary_in_chinese(language):
    """The first line every notebook prints, and the summary notebook 08's nightly run prints."""
    from lessons.core.models import ModelInfo
    from lessons.evaluation.testset import GenerationReport, Rejected

    info = ModelInfo("local", "qwen2.5-coder-1.5b", "http://127.0.0.1:8080/v1")
    english, chinese = both(language, info.banner)
    assert english == "Chat model: qwen2.5-coder-1.5b (local llama.cpp server, http://127.0.0.1:8080/v1)"
    assert chinese.startswith("对话模型：qwen2.5-coder-1.5b") and "http://127.0.0.1:8080/v1" in chinese

    report = GenerationReport(rejected=[Rejected(chunk_ids=("a",), question="q", reason="duplicate: same as q1")])
    english, chinese = both(language, lambda: str(report))
    assert english.startswith("0 questions kept (0 from one chunk, 0 from two); 1 not kept")
    assert "道问题" in chinese and "1 道未保留" in chinese and "{'duplicate': 1}" in chinese


def test_upload_summary_in_chinese(language):
    """What the chat panel (notebook 05) shows after an upload: files, chunks and every skipped file with its reason."""
    from lessons.ingest.files import Skipped
    from lessons.retrieval.document_processor import ProcessedDocuments

    processed = ProcessedDocuments(
        chunks=[], files=["a.md", "slides.key"], skipped=[Skipped("slides.key", "UnsupportedType")]
    )
    english, chinese = both(language, processed.summary)
    assert english == "2 file(s) → 0 chunks.\nSkipped slides.key: UnsupportedType"
    assert chinese == "2 个文件 → 0 个块。\n已跳过 slides.key：UnsupportedType"


def test_test_set_rejection_reasons_and_the_context_budget_warning_in_chinese(language):
    """Notebook 06 shows why a generated question was not kept, notebook 03 warns about the context budget."""
    import warnings

    from langchain_core.documents import Document

    from lessons.evaluation.testset import GeneratedQuestion, grounding
    from lessons.transforms.qa_transform import ContextBudget, ContextBudgetWarning, warn_if_over_budget

    pair = GeneratedQuestion(question="How long are audit logs kept?", answer="Seven years in the cold archive.")
    chunk = Document(page_content="Audit logs are kept for 400 days.", metadata={"source": "policy.docx"})
    english, chinese = both(language, lambda: grounding(pair, [chunk]))
    assert english.startswith("not grounded: only") and chinese.startswith("没有依据: 回答里只有")
    assert_translated(english, chinese)

    budget = ContextBudget(
        chunk_id="c-long", context_window=4096, chunk_tokens=3500, answer_tokens=400, overhead_tokens=300
    )

    def warning_text():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn_if_over_budget([budget])
        return str(next(w.message for w in caught if w.category is ContextBudgetWarning))

    english, chinese = both(language, warning_text)
    assert "c-long" in chinese and "AGENTIC_RAG_CTX=8192" in chinese and "回答可能被截断" in chinese
    assert_translated(english, chinese, identifiers=("c-long", "max_pairs", "AGENTIC_RAG_CTX", "schema"))
