"""The chat panel's callbacks, driven without a browser: a simulated upload and button clicks."""

from datetime import UTC, datetime

from langchain_core.documents import Document

from lessons.agents.three_agents import Citation, ThreeAgentResult, TraceStep, Verification
from lessons.core.fakes import ScriptedChatModel
from lessons.retrieval.document_processor import process_documents
from lessons.widgets.chat_panel import ChatPanel, render_result_html, safe_upload_names, save_uploads

OK = Verification(unsupported_claims=[], contradictions=[], supported="yes", relevant="yes")


def fake_result(question, **_):
    return ThreeAgentResult(
        question=question,
        answer="Port 7420 <b>",
        abstained=False,
        outcome="answered",
        citations=[Citation("guide.md", 2, "abc123")],
        verification=OK,
        research_rounds=1,
        trace=[TraceStep("retrieve", 0, "2 chunks"), TraceStep("verification_agent", 1, "accept", "supported=yes")],
        seconds=1.5,
    )


def upload_item(name, content):
    return {
        "name": name,
        "type": "",
        "size": len(content),
        "content": memoryview(content),
        "last_modified": datetime.now(UTC),
    }


def panel(tmp_path, **kwargs):
    return ChatPanel(ScriptedChatModel(), upload_dir=tmp_path, **kwargs)


def test_asking_shows_answer_citations_verification_and_trace(tmp_path):
    calls = []
    chat = panel(tmp_path, retriever=lambda q: [], run=lambda q, **kw: calls.append((q, kw)) or fake_result(q))
    chat.question.value = "Which port?"
    chat.ask.click()
    out = chat.output.value
    assert calls[0][0] == "Which port?" and calls[0][1]["max_research_rounds"] == 2
    assert "Port 7420 &lt;b&gt;" in out, "answers are escaped"
    assert "guide.md, page 2" in out and "abc123" in out
    assert "Verification report" in out and "verification_agent" in out and "accept" in out
    assert chat.last_result.answer == "Port 7420 <b>"


def test_an_empty_question_or_no_documents_is_reported_in_the_panel(tmp_path):
    chat = panel(tmp_path, run=lambda *a, **k: (_ for _ in ()).throw(AssertionError("must not run")))
    chat.ask.click()
    assert "Type a question" in chat.status.value
    chat.question.value = "Which port?"
    chat.ask.click()
    assert "upload at least one file" in chat.status.value


def test_an_error_in_the_workflow_is_shown_not_raised(tmp_path):
    def broken(question, **_):
        raise RuntimeError("the model server is not reachable")

    chat = panel(tmp_path, retriever=lambda q: [], run=broken)
    chat.question.value = "Which port?"
    chat.ask.click()
    assert "RuntimeError" in chat.status.value and "not reachable" in chat.status.value
    assert chat.output.value == ""


def test_an_upload_is_saved_processed_and_used_for_the_next_question(tmp_path):
    seen = {}

    class Processed:
        skipped = ()

        def retrieve(self, question):
            return [Document("from the upload")]

        def summary(self):
            return "1 file(s) → 1 chunks."

    def process(paths, **kwargs):
        seen["paths"], seen["kwargs"] = paths, kwargs
        return Processed()

    chat = panel(
        tmp_path, process=process, run=lambda q, retriever, **kw: seen.update(docs=retriever(q)) or fake_result(q)
    )
    chat.upload.value = (upload_item("notes.md", b"# Notes\n\nThe port is 7420."),)
    assert seen["paths"][0].name == "notes.md" and seen["paths"][0].read_bytes().startswith(b"# Notes")
    assert seen["kwargs"]["index_name"].startswith("nb05-upload-") and seen["kwargs"]["limits"].max_file_bytes > 0
    assert "1 chunks" in chat.status.value
    chat.question.value = "Which port?"
    chat.ask.click()
    assert seen["docs"][0].page_content == "from the upload"


def test_a_bad_upload_names_the_file_and_the_fix_in_the_panel(tmp_path, monkeypatch):
    monkeypatch.setattr("lessons.retrieval.document_processor.build_index", lambda chunks, name: None)
    chat = panel(tmp_path, process=process_documents)
    chat.upload.value = (upload_item("slides.key", b"not supported"), upload_item("empty.txt", b""))
    status = chat.status.value
    assert "NoDocumentsError" in status and "slides.key" in status and "supported:" in status
    assert "empty.txt" in status and chat.retriever is None


def test_upload_names_cannot_escape_the_upload_folder(tmp_path):
    paths = save_uploads([upload_item("../../evil.md", b"x")], tmp_path)
    assert paths[0].parent.parent == tmp_path and paths[0].name == "evil.md"


def test_abstentions_render_without_citations_or_verification():
    result = ThreeAgentResult(
        question="q",
        answer="These documents do not contain the answer to this question.",
        abstained=True,
        outcome="not_in_documents",
        trace=[TraceStep("relevance_checker", 0, "NO_MATCH")],
    )
    out = render_result_html(result)
    assert "not in these documents" in out and "Verification report" not in out and "Citations" not in out


def test_two_uploads_with_the_same_name_are_both_kept_and_the_panel_says_so(tmp_path, fresh_settings):
    chat = panel(tmp_path, process=process_documents)
    chat.upload.value = (
        upload_item("a.md", b"# A\n\nThe port is 7420."),
        upload_item("a.md", b"# A\n\nThe port is 9000."),
        upload_item("sub/a.md", b"# A\n\nThe region is eu-west."),
    )
    status = chat.status.value
    assert "3 file(s)" in status and "same content" not in status
    assert "saved as &#x27;a (2).md&#x27;" in status and "saved as &#x27;a (3).md&#x27;" in status
    texts = " ".join(d.page_content for d in chat.retriever("port region"))
    assert "7420" in texts and "9000" in texts and "eu-west" in texts


def test_upload_names_lose_folder_parts_and_dot_names_and_stay_unique():
    assert safe_upload_names(["a.md", "sub/a.md", "A.md", "..", ".", "x\\..\\b.txt", "/"]) == [
        "a.md",
        "a (2).md",
        "A (3).md",
        "upload",
        "upload (2)",
        "b.txt",
        "upload (3)",
    ]


def test_a_name_of_dot_dot_is_saved_not_an_is_a_directory_error(tmp_path):
    (path,) = save_uploads([upload_item("..", b"# Notes\n\ntext")], tmp_path)
    assert path.parent.parent == tmp_path and path.read_bytes().startswith(b"# Notes")


def test_each_upload_set_has_its_own_index(tmp_path, fresh_settings):
    chat = panel(tmp_path, process=process_documents)
    chat.upload.value = (upload_item("alpha.md", b"# Alpha\n\nThe alpha server listens on port 7420."),)
    retriever_a = chat.retriever
    chat.upload.value = (upload_item("beta.md", b"# Beta\n\nThe beta cluster runs in region eu-west."),)
    retriever_b = chat.retriever
    assert {d.metadata["source"] for d in retriever_a("Which port does the alpha server use?")} == {"alpha.md"}
    assert {d.metadata["source"] for d in retriever_b("Which region?")} == {"beta.md"}


def test_the_panel_speaks_the_language_of_its_notebook_folder(tmp_path, monkeypatch):
    """In notebooks/zh the panel's buttons, placeholder, status lines and rendered result are Chinese."""
    monkeypatch.delenv("AGENTIC_RAG_LANG", raising=False)
    folder = tmp_path / "notebooks" / "zh"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    chat = panel(tmp_path, run=lambda q, **kw: fake_result(q))
    assert (chat.upload.description, chat.ask.description) == ("上传文件", "提问")
    assert chat.question.placeholder == "就这些文档提一个问题" and chat.status.value == "先上传文件。"
    chat.ask.click()
    assert "请先输入一个问题" in chat.status.value
    chat.question.value = "哪个端口？"
    chat.ask.click()
    assert "请先上传至少一个文件" in chat.status.value
    chat = panel(tmp_path, retriever=lambda q: [], run=lambda q, **kw: fake_result(q))
    assert chat.status.value == "正在检索课程知识库。"
    chat.question.value = "哪个端口？"
    chat.ask.click()
    out = chat.output.value
    assert "✅ 已回答，已通过验证" in out and "· 1.5 秒 · 研究 1 轮" in out and "guide.md，第 2 页" in out
    assert "<b>验证报告</b>" in out and "<th>步骤</th>" in out and "verification_agent" in out, "step names stay"
    assert "Verification report" not in out and "Citations" not in out and "用时 1.5 秒完成" in chat.status.value
