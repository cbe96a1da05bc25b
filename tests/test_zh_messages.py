"""The errors a notebook shows speak the reader's language: in the Chinese copy the reasons a folder gives no
document (notebook 05), the service client's timeouts and the job states (notebook 08) and the grading loop's and
three agents' outcomes (notebooks 04, 05) are Chinese, and so are the deep-research tools' errors notebook 07 shows
(while its model still reads them in English); in English they are exactly what they were."""

import pytest
from langchain_core.documents import Document

from lessons.agents.deep_research import (
    DeepResearchAgent,
    Observation,
    Page,
    PageNotFound,
    PageStore,
    read_page,
    trace_rows,
)
from lessons.core.fakes import ScriptedChatModel
from lessons.core.i18n import t_marked
from lessons.retrieval.document_processor import NoDocumentsError, process_documents
from service.client import JobTimeout, wait_for_jobs
from service.db import CANCELLED, DONE, FAILED, PENDING, RUNNING, SUPERSEDED, UPLOADING

OUTCOMES = ["answered", "not_in_kb", "unverified", "not_in_documents", "cannot_answer"]


def bad_folder(tmp_path):
    folder = tmp_path / "uploads"
    folder.mkdir()
    (folder / "notes.rtf").write_text("{\\rtf1 hello}")
    (folder / "empty.txt").write_text("")
    return folder


def test_the_reasons_no_document_was_read_are_in_the_course_language(tmp_path, monkeypatch):
    folder = bad_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    with pytest.raises(NoDocumentsError) as chinese:
        process_documents(folder)
    assert str(chinese.value).startswith("没有一个文档可以读取（")
    assert "'empty.txt' 是空文件（0 字节）" in str(chinese.value)
    assert "'notes.rtf' 的类型不受支持——支持的类型：" in str(chinese.value)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    with pytest.raises(NoDocumentsError, match=r"^no document could be read \(") as english:
        process_documents(folder)
    assert "empty.txt: EmptyFile: 'empty.txt' is empty (0 bytes) — add content to it or remove it" in str(english.value)
    assert "notes.rtf: UnsupportedFileType: 'notes.rtf' — supported: " in str(english.value)


def test_the_skipped_files_warning_and_the_index_report_are_in_the_course_language(tmp_path, monkeypatch, caplog):
    """Notebook 05 shows the warning for each file a folder skips; notebook 03 prints what indexing did."""
    from lessons.core.vectorstore import IndexStats

    folder = bad_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    for language, skipped, report in (
        ("zh", "已跳过 empty.txt：'empty.txt' 是空文件", "嵌入了 4 个块，0 个已在索引中，移除了 1 个"),
        ("en", "Skipped empty.txt: 'empty.txt' is empty", "4 chunks embedded, 0 already indexed, 1 removed"),
    ):
        monkeypatch.setenv("AGENTIC_RAG_LANG", language)
        caplog.clear()
        with pytest.raises(NoDocumentsError):
            process_documents(folder)
        warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
        assert any(message.startswith(skipped) for message in warnings), (language, warnings)
        assert str(IndexStats(added=4, already_indexed=0, removed=1)) == report


def test_the_service_clients_timeout_is_in_the_course_language(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    with pytest.raises(JobTimeout, match=r"^1 个作业在 0.05 秒后仍未完成：7 \(running\)——请查看 GET /v1/jobs/\{id\}"):
        wait_for_jobs(lambda job_id: {"status": "running"}, [7], timeout=0.05, every=0.01)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    with pytest.raises(
        JobTimeout, match=r"^1 job\(s\) not finished after 0.05 s: 7 \(running\) — look at GET /v1/jobs/\{id\}"
    ):
        wait_for_jobs(lambda job_id: {"status": "running"}, [7], timeout=0.05, every=0.01)


def test_the_service_settings_notebook_08_shows_are_worded_in_the_course_language(tmp_path, monkeypatch):
    from service.settings import ServiceSettings, stores_for_reader

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    embedded = ServiceSettings(data_dir=tmp_path / "data", chroma_url=None).describe()  # the health payload's
    server = ServiceSettings(data_dir=tmp_path / "data", chroma_url="http://chroma.local:8000").describe()
    assert embedded["file store"] == f"folder {tmp_path / 'data' / 'files'}"  # the API stays English
    assert stores_for_reader(embedded) == embedded and stores_for_reader(server) == server
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    assert ServiceSettings(data_dir=tmp_path / "data", chroma_url=None).describe() == embedded
    shown = stores_for_reader(embedded)
    assert shown["file store"] == f"文件夹 {tmp_path / 'data' / 'files'}"
    assert shown["index"] == f"嵌入式 Chroma，位于 {tmp_path / 'data' / 'chroma'}"
    assert stores_for_reader(server)["index"] == "Chroma 服务器 http://chroma.local:8000"
    assert shown["database"] == embedded["database"] and shown["reranker"] == "default"  # a URL, a setting's value


def test_the_qa_report_notebook_03_prints_is_in_the_course_language(tmp_path, monkeypatch):
    from lessons.transforms.qa_transform import QAReport

    report = QAReport(chunks=3, ok=2, fewer=1, failed=0, errors=0, from_cache=3, pairs=6, generation_seconds=0.0)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert str(report) == (
        "3 chunks → 6 pairs · schema success 100.0% (first try 2, with fewer pairs 1, failed 0, errors 0) · "
        "3 from the QA cache"
    )
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    assert str(report).startswith("3 个块 → 6 个问答对 · schema 成功率 100.0%（第一次就成功 2，减少对数后成功 1")


def test_a_structured_output_failure_and_the_gates_source_are_shown_in_the_course_language(tmp_path, monkeypatch):
    """Notebook 06 shows a judge's failure (its cause is StructuredOutputError's message) and where the gate's
    thresholds come from; the reports keep the English source."""
    from lessons.agents.grading import DEFAULT_GATE_SOURCE
    from lessons.agents.pipelines import gate_thresholds
    from lessons.core.structured import StructuredOutputError
    from lessons.evaluation import FaithfulnessVerdict

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    english = str(StructuredOutputError(FaithfulnessVerdict, 3, "Looks right to me!", ValueError("no function")))
    assert english.startswith("no valid FaithfulnessVerdict after 3 attempt(s): ValueError('no function'). Last reply")
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    chinese = str(StructuredOutputError(FaithfulnessVerdict, 3, "Looks right to me!", ValueError("no function")))
    assert chinese.startswith("尝试 3 次后仍没有得到有效的 FaithfulnessVerdict：ValueError('no function')。"), chinese
    assert gate_thresholds()[1] == DEFAULT_GATE_SOURCE and DEFAULT_GATE_SOURCE.startswith("the gate calibrated")
    assert t_marked(DEFAULT_GATE_SOURCE).startswith(
        "由 benchmarks/bench_gate.py 在课程语料库的全部金标准问题上校准的门控"
    )


def test_the_vector_stores_location_is_english_for_reports_and_chinese_for_the_reader(tmp_path, monkeypatch):
    import json

    from lessons.core.i18n import for_reader
    from lessons.core.vectorstore import store_location

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    location = store_location()
    assert location.startswith(("embedded Chroma in ", "Chroma server ")), location  # what a report records
    assert json.loads(json.dumps({"vector store": location}))["vector store"] == str(location)
    assert for_reader(location).startswith(("嵌入式 Chroma，位于 ", "Chroma 服务器 ")), for_reader(location)


def test_job_states_and_outcomes_are_shown_in_the_course_language(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    states = [UPLOADING, PENDING, RUNNING, DONE, FAILED, SUPERSEDED, CANCELLED]
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert [t_marked(s) for s in states + OUTCOMES] == states + OUTCOMES
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    shown = [t_marked(s) for s in states + OUTCOMES]
    assert shown[:3] == ["上传中", "等待中", "运行中"] and t_marked("not_in_kb") == "知识库中没有"
    assert all(not label.isascii() for label in shown), shown


def test_the_judges_no_log_probabilities_warning_is_in_the_course_language(tmp_path, monkeypatch):
    from lessons.retrieval.rerank import LLMRelevanceScorer

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    with pytest.warns(UserWarning, match=r"^对话模型没有返回对数概率"):
        assert LLMRelevanceScorer(ScriptedChatModel(default="yes")).score([("问题", "段落")]) == [1.0]


def test_the_model_banner_every_notebook_prints_first_is_in_the_course_language(fresh_settings, monkeypatch):
    from lessons.core import model_banner

    monkeypatch.setenv("AGENTIC_RAG_MODEL", "local")
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    fresh_settings()
    chinese = model_banner()
    assert "首次使用时启动" in chinese and "started on first use" not in chinese
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    fresh_settings()
    assert model_banner().endswith("(local llama.cpp server, 127.0.0.1 (started on first use))")


def test_importing_the_course_does_not_advise_installing_pytorch():
    """Docling's chunker imports transformers, which printed 'PyTorch was not found…' (in English) in every notebook."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSFORMERS_")}
    code = "import lessons.chunking.strategies"
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "PyTorch was not found" not in done.stderr + done.stdout


# ---------------------------------------------------------------- notebook 07: the deep-research tools' errors
# They reach the model in English, the language of every prompt, and the reader in the course language: the
# observation carries both; the trace and the notebook show the reader's.

PAGES = PageStore(
    [
        Page("handbook.docx", 1, "Leave", "Lisbon staff get 25 days of annual leave."),
        Page("handbook.docx", 2, "Expenses", "Hotels up to €140 per night."),
    ]
)


def test_a_bad_page_is_english_for_the_model_and_chinese_for_the_reader(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    seen = read_page(PAGES, "handbook.docx", 9)
    assert seen.error == "handbook.docx has no page 9: its pages are 1–2"
    assert seen.error_for_reader == "handbook.docx 没有第 9 页：它的页码是 1–2"
    unknown = read_page(PAGES, "pricing.pdf", 3)
    assert unknown.error.startswith("unknown source_id 'pricing.pdf': use a source name exactly")
    assert (
        unknown.error_for_reader.startswith("未知的来源 'pricing.pdf'") and "handbook.docx" in unknown.error_for_reader
    )
    try:
        PAGES.read("handbook.docx", "two")
    except PageNotFound as error:
        assert (
            str(error).endswith("its pages are 1–2") and error.shown == "handbook.docx 没有第 'two' 页：它的页码是 1–2"
        )


def test_in_english_the_reader_sees_what_the_model_reads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    seen = read_page(PAGES, "handbook.docx", 9)
    assert seen.error_for_reader == seen.error == "handbook.docx has no page 9: its pages are 1–2"
    assert Observation("search", "search('x')", error="plain").error_for_reader == "plain"


def test_the_agents_trace_is_chinese_while_its_notes_stay_english(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    decisions = [
        {"reason": "the page", "action": "read_page", "query": "", "source_id": "handbook.docx", "page_index": 9},
        {"reason": "done", "action": "answer", "query": "", "source_id": "", "page_index": 0},
    ]
    prompts = []

    def reply(messages, tools):
        prompts.append((tools[0], "\n".join(str(m.content) for m in messages)))
        if tools == ["ResearchDecision"]:
            return decisions.pop(0) if len(decisions) > 1 else decisions[0]
        return {"answer": "25 天。", "cited_chunks": [1], "found": "yes"}

    def search(query):
        hit = Document("Lisbon staff get 25 days", metadata={"source": "handbook.docx", "page": 1, "kind": "chunk"})
        return Observation("search", f"search({query!r})", (hit,))

    result = DeepResearchAgent(ScriptedChatModel(default=reply), search, PAGES, max_steps=5).research(
        "里斯本员工有几天年假？"
    )
    rows = trace_rows(result)
    assert rows[0]["reason"] == "第一步：用问题本身检索" and rows[0]["result"] == "handbook.docx，第 1 页"
    assert rows[1]["argument"] == "handbook.docx，第 9 页"
    assert rows[1]["result"] == "错误：handbook.docx 没有第 9 页：它的页码是 1–2"
    decide_prompts = [text for tool, text in prompts if tool == "ResearchDecision"]
    assert "ERROR: handbook.docx has no page 9: its pages are 1–2" in decide_prompts[-1]
    assert "没有第" not in decide_prompts[-1], "the model must read the tool's English, not the reader's Chinese"


def test_the_research_outcome_is_a_code_the_notebook_shows_in_the_course_language(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")

    def search(query):
        hit = Document("Lisbon staff get 25 days", metadata={"source": "handbook.docx", "page": 1, "kind": "chunk"})
        return Observation("search", f"search({query!r})", (hit,))

    model = ScriptedChatModel(default={"answer": "25 天。", "cited_chunks": [1], "found": "yes"})
    result = DeepResearchAgent(model, search, PAGES, max_steps=1).research("里斯本员工有几天年假？")
    assert result.outcome == "answered at the cap", "the outcome stays a code (tables and tests read it)"
    assert t_marked(result.outcome) == "到达步数上限后作答"
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert t_marked(result.outcome) == "answered at the cap"


def test_the_verifiers_code_findings_are_english_for_the_model_and_chinese_for_the_reader(tmp_path, monkeypatch):
    from lessons.agents.three_agents import (
        ResearchDraft,
        Verification,
        deterministic_findings,
        feedback_from,
        ground_verification,
    )
    from lessons.core.i18n import for_reader

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    chunks = [Document(page_content="Atlas Server listens on port 7420 by default.")]
    draft = "Atlas Server listens on port 7421 by default."
    findings = deterministic_findings(draft, chunks)
    assert "the figure 7421 is in none of the chunks" in findings  # what the research agent's next prompt reads
    assert [for_reader(f) for f in findings if "7421" in f] == ["数字 7421 不在任何一个块中"]
    said = Verification(unsupported_claims=[], contradictions=[], supported="yes", relevant="yes")
    checked = ground_verification(said, draft, chunks, findings=findings)
    assert [for_reader(c) for c in checked.unsupported_claims if "7421" in c] == ["数字 7421 不在任何一个块中"]
    note = feedback_from(ResearchDraft(found="yes", answer=draft, cited_chunks=[1]), checked)
    assert "unsupported: the figure 7421 is in none of the chunks" in note and "数字" not in note
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert for_reader(deterministic_findings(draft, chunks)[0]) == "the figure 7421 is in none of the chunks"


SHOWN_TEXT_CALLS = {"tqdm": "desc", "set_title": 0, "set_xlabel": 0, "set_ylabel": 0, "suptitle": 0, "title": 0}


def literal_english(node) -> str | None:
    """The English a literal argument holds (a string constant, or the text parts of an f-string), else None."""
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(part.value for part in node.values if isinstance(part, ast.Constant))
    else:
        return None
    return text if any(character.isascii() and character.isalpha() for character in text) else None


def test_progress_bars_and_plot_labels_in_lessons_and_service_go_through_t():
    """A progress bar's description or a plot's title and axis labels written as an English literal stays English
    in the Chinese copy; each must be a t() call (a name built only from identifiers, f"{corpus} {name}", is fine)."""
    import ast

    from lessons.core.settings import PROJECT_ROOT

    found = []
    for path in sorted([*(PROJECT_ROOT / "lessons").rglob("*.py"), *(PROJECT_ROOT / "service").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            where = SHOWN_TEXT_CALLS.get(name)
            if where is None:
                continue
            if isinstance(where, int):
                argument = node.args[where] if len(node.args) > where else None
            else:
                argument = next((k.value for k in node.keywords if k.arg == where), None)
            text = literal_english(argument) if argument is not None else None
            if text is not None:
                found.append(f"{path.relative_to(PROJECT_ROOT)}:{node.lineno}: {name}({text!r}) — write t({text!r})")
    assert not found, "English shown to the reader without t():\n" + "\n".join(found)


def test_the_missing_chinese_plot_font_warning_is_chinese_where_only_a_chinese_reader_meets_it(monkeypatch):
    """use_chinese_font() runs only in a Chinese copy (lessons.core.i18n calls it there), so its warning is read by a
    Chinese reader; the pip command in it stays as it is."""
    import matplotlib

    from lessons.core import plot_fonts

    monkeypatch.setattr(plot_fonts, "chinese_font_path", lambda: None)
    monkeypatch.setattr(plot_fonts, "installed_system_families", list)  # a machine without a Chinese font
    monkeypatch.setattr(plot_fonts, "_told", set())
    before = list(matplotlib.rcParams["font.sans-serif"])
    for language, expected in (
        ("zh", "画图用的中文字体没有安装"),
        ("en", "The Chinese font for plots is not installed"),
    ):
        monkeypatch.setenv("AGENTIC_RAG_LANG", language)
        with pytest.warns(plot_fonts.ChineseFontWarning) as caught:
            assert plot_fonts.use_chinese_font() is None
        message = str(caught[0].message)
        assert expected in message and plot_fonts.INSTALL_COMMAND in message, message
    assert matplotlib.rcParams["font.sans-serif"] == before


def test_the_three_agents_trace_shows_its_details_in_the_course_language(tmp_path, monkeypatch):
    """Notebook 05's trace: the answerability check's reason (a catalogue message), the research agent's citation and
    the retrieved count are Chinese where the reader sees them (`for_reader`); the trace itself keeps the English."""
    from lessons.agents.answerability import AnswerabilityVerdict
    from lessons.agents.three_agents import run_three_agents
    from lessons.core.i18n import for_reader

    def retriever(question):
        return [Document("Team: €45 per user per month.", metadata={"source": "faq.html", "chunk_id": "c1"})]

    def answerability(question, documents):
        return AnswerabilityVerdict(False, "asked-for missing", quote="€45 per user per month", missing=("tier",))

    def reply(messages, tools):
        if tools == ["RelevanceCheck"]:
            return {"topic_words_found": ["team"], "label": "CAN_ANSWER"}
        if tools == ["Verification"]:
            return {"unsupported_claims": [], "contradictions": [], "supported": "yes", "relevant": "yes"}
        return {"answer": "€45", "cited_chunks": [1], "found": "yes"}

    monkeypatch.chdir(tmp_path)
    details = {}
    for language in ("zh", "en"):
        monkeypatch.setenv("AGENTIC_RAG_LANG", language)
        details[language] = {}
        for check in (answerability, None):  # refused before a draft; without the check, drafted
            result = run_three_agents("Team 版多少钱？", retriever=retriever, llm=ScriptedChatModel(default=reply),
                                      relevance="llm", answerability=check)  # fmt: skip
            details[language] |= {s.step: (for_reader(s.decision), for_reader(s.detail), s.detail)
                                  for s in result.trace}  # fmt: skip
    assert details["zh"]["answerability_check"][1] == "缺少所问之物：'€45 per user per month'；缺少 ['tier']"
    assert details["zh"]["research_agent"][1] == "引用 [1]：€45"
    assert details["zh"]["retrieve"][0] == "1 个块"
    assert details["zh"]["answerability_check"][2] == "asked-for missing: '€45 per user per month'; missing ['tier']"
    assert details["en"]["answerability_check"][1] == details["en"]["answerability_check"][2]
    assert details["en"]["research_agent"][1] == "cites [1]: €45" and details["en"]["retrieve"][0] == "1 chunks"


def test_a_reader_text_survives_a_copy_in_the_course_language(monkeypatch):
    import copy
    import pickle

    from lessons.agents.three_agents import FIGURE_NOT_IN_CHUNKS
    from lessons.core.i18n import ReaderText, for_reader

    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    text = ReaderText(FIGURE_NOT_IN_CHUNKS, figure="54")
    for copied in (copy.deepcopy(text), pickle.loads(pickle.dumps(text))):
        assert (str(copied), for_reader(copied)) == ("the figure 54 is in none of the chunks", for_reader(text))


REPAIR_REQUEST = (
    "Your previous reply could not be used (the model called no function). "
    "Reply again with every required field filled in and valid."
)


def test_a_reply_without_a_function_call_is_explained_in_chinese_while_the_model_is_asked_in_english(
    tmp_path, monkeypatch
):
    """Notebook 06's judge-failure demo: the inner cause (no function called) is Chinese in the message the reader
    sees; the repair request the model reads stays English, word for word (its prompt, and so its cache key)."""
    from lessons.core.structured import StructuredOutputError, invoke_structured
    from lessons.evaluation import FaithfulnessVerdict

    monkeypatch.chdir(tmp_path)
    messages = {}
    for language in ("zh", "en"):
        monkeypatch.setenv("AGENTIC_RAG_LANG", language)
        model = ScriptedChatModel(default="我看没问题！")
        with pytest.raises(StructuredOutputError) as failure:
            invoke_structured(model, FaithfulnessVerdict, "Is it consistent?", retries=1)
        messages[language] = str(failure.value)
        repair = [m.content for call in model.calls for m in call["messages"] if "could not be used" in str(m.content)]
        assert repair == [REPAIR_REQUEST]
    assert messages["zh"].startswith(
        "尝试 2 次后仍没有得到有效的 FaithfulnessVerdict：ValueError('模型没有调用任何函数')。"
    )
    assert messages["en"].startswith(
        "no valid FaithfulnessVerdict after 2 attempt(s): ValueError('the model called no function')"
    )
