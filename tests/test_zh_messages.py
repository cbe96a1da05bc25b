"""The errors a notebook shows speak the reader's language: in the Chinese copy the reasons a folder gives no
document (notebook 05), the service client's timeouts and the job states (notebook 08) and the grading loop's and
three agents' outcomes (notebooks 04, 05) are Chinese; in English they are exactly what they were."""

import pytest

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
    from lessons.core.fakes import ScriptedChatModel
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
