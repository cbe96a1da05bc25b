"""The ask endpoint (citations) and the nightly job, against the real service (uvicorn on 127.0.0.1, in a thread of
this process so both use a scripted chat model — no real model here)."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest
import uvicorn
from service_support import API_KEY, document_text, upload, wait_for_jobs

from lessons.agents.grading import DEFAULT_GATE, DEFAULT_MAX_ROUNDS
from lessons.core.fakes import ScriptedChatModel
from lessons.core.local_server import free_port


def scripted_model() -> ScriptedChatModel:
    """Questions from the chunk's marker, answers that cite chunk 1, judges that check the marker is there."""

    def reply(messages, tools):
        prompt = messages[-1].content
        marker = re.search(r"marker is (\S+?)\.", prompt)
        if not tools:  # the relevance gate's one-token judge (no log-probabilities: the reply decides)
            return "no" if "unknown thing" in prompt else "yes"
        if tools == ["DraftAnswer"]:
            return {"answer": f"The marker is {marker.group(1)}.", "found": "yes"}
        if tools == ["RewrittenQuery"]:
            return {"query": "unknown thing again", "new_keywords": ["other"]}
        if tools == ["GeneratedQuestion"]:
            return {
                "question": f"What is the marker of {marker.group(1).split('-')[0]}?",
                "answer": f"the marker is {marker.group(1)}",
            }
        if tools == ["ResearchDraft"]:
            if "unknown thing" in prompt:
                return {"answer": "", "cited_chunks": [], "found": "no"}
            return {"answer": f"The marker is {marker.group(1)}.", "cited_chunks": [1], "found": "yes"}
        if tools == ["Evidence"]:  # the answerability check's judge quotes the marker's sentence
            return {"quote": f"marker is {marker.group(1)}", "answer": marker.group(1)}
        if tools == ["FaithfulnessVerdict"]:
            return {"answer_claim": "marker", "context_says": "marker", "consistent": "yes"}
        if tools == ["CompletenessVerdict"]:
            return {"reference_key_fact": "marker", "answer_says": "marker", "complete": "yes"}
        raise AssertionError(f"unexpected request {tools}")

    return ScriptedChatModel(default=reply)


@pytest.fixture
def live(tmp_path, fresh_settings, monkeypatch):
    from service.api import create_app
    from service.core import Service

    for name, value in {"AGENTIC_RAG_EMBEDDER": "use", "AGENTIC_RAG_SERVICE_DATA_DIR": str(tmp_path / "service"),
                        "AGENTIC_RAG_SERVICE_API_KEY": API_KEY, "AGENTIC_RAG_SERVICE_POLL_SECONDS": "0.1"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    fresh_settings.cache_clear()
    service = Service(chat_model=scripted_model)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(service, workers=1), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        with httpx.Client(base_url=url, headers={"X-API-Key": API_KEY}, timeout=60) as client:
            yield service, url, client
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def add(client, name: str, marker: str) -> dict:
    reply = upload(client, name, document_text(name, marker, paragraphs=2, filler=15))
    assert wait_for_jobs(client, [reply["job_id"]])[reply["job_id"]]["status"] == "done"
    return reply


def test_ask_answers_with_citations_and_abstains_honestly(live):
    _service, _url, client = live
    document = add(client, "atlas.md", "atlas-7420")
    reply = client.post("/v1/ask", json={"question": "What is the marker of atlas?"}).json()
    assert reply["abstained"] is False and "atlas-7420" in reply["answer"]
    citations = reply["citations"]  # every chunk the gate let through, the one with the answer among them
    assert citations and all(c["source"] == "atlas.md" for c in citations)
    assert all(c["document_id"] == document["document_id"] for c in citations)
    assert any("atlas-7420" in c["text"] for c in citations) and reply["answerability"]["reason"] == "answerable"
    assert reply["rounds"] == 1  # answered from the first retrieval
    assert reply["gate"]["rounds"][0]["passed"] > 0 and reply["gate"]["language"] == "en"
    reply = client.post("/v1/ask", json={"question": "Tell me about the unknown thing"}).json()
    assert reply["abstained"] is True and reply["citations"] == []
    assert reply["rounds"] == DEFAULT_MAX_ROUNDS  # every rewrite tried before it says "not in the documents"
    gate = reply["gate"]  # why: no round let a chunk through, and the thresholds it was measured against
    assert gate["thresholds"] == {"cross_encoder": DEFAULT_GATE["en"].cross_encoder, "p_yes": DEFAULT_GATE["en"].p_yes}
    assert [r["passed"] for r in gate["rounds"]] == [0] * DEFAULT_MAX_ROUNDS
    assert [r["query"] for r in gate["rounds"]][:2] == ["Tell me about the unknown thing", "unknown thing again"]


@pytest.fixture
def strict_gate(tmp_path, fresh_settings, monkeypatch):
    """AGENTIC_RAG_GATE_FILE naming thresholds no chunk reaches (cross-encoder ≥ 1.0), set in the clean environment
    `fresh_settings` makes, before the service starts."""
    from lessons.agents.grading import GateThresholds, save_gate

    path = tmp_path / "gate.json"
    save_gate(path, {"en": GateThresholds(1.0, 0.5), "zh": GateThresholds(1.0, 0.5)}, {"documents": "test"})
    monkeypatch.setenv("AGENTIC_RAG_GATE_FILE", str(path))
    return path


def test_ask_uses_the_gate_calibrated_on_your_documents_when_the_setting_names_it(strict_gate, live):
    _service, _url, client = live
    add(client, "atlas.md", "atlas-7420")
    reply = client.post("/v1/ask", json={"question": "What is the marker of atlas?"}).json()
    assert reply["gate"]["thresholds"] == {"cross_encoder": 1.0, "p_yes": 0.5}  # the file's, not DEFAULT_GATE's
    assert reply["abstained"] is True and [r["passed"] for r in reply["gate"]["rounds"]] == [0] * DEFAULT_MAX_ROUNDS


def test_ask_serves_a_repeated_question_from_the_answer_cache_until_the_documents_change(live):
    service, _url, client = live
    add(client, "atlas.md", "atlas-7420")
    first = client.post("/v1/ask", json={"question": "What is the marker of atlas?"}).json()
    calls = len(service.llm.calls)
    assert first["cached"] is None and calls > 0 and "atlas-7420" in first["answer"]
    again = client.post("/v1/ask", json={"question": "  what is the marker of ATLAS"}).json()
    assert len(service.llm.calls) == calls  # no chat-model call: the stored reply
    assert again["cached"] == {
        "question": "What is the marker of atlas?",
        "similarity": 1.0,
        "exact": True,
        "mode": "exact",
    }
    assert again["question"] == "  what is the marker of ATLAS"
    assert {key: again[key] for key in ("answer", "abstained", "citations")} == {
        key: first[key] for key in ("answer", "abstained", "citations")
    }
    other_k = client.post("/v1/ask", json={"question": "What is the marker of atlas?", "k": 2}).json()
    assert other_k["cached"] is None and len(service.llm.calls) > calls  # another k is another reply
    add(client, "other.md", "other-5551")  # the documents changed: nothing stored before may be served
    calls = len(service.llm.calls)
    after = client.post("/v1/ask", json={"question": "What is the marker of atlas?"}).json()
    assert after["cached"] is None and len(service.llm.calls) > calls


def test_by_default_a_near_question_is_never_served_an_earlier_answer_and_semantic_mode_opts_in(live, monkeypatch):
    from lessons.core.embeddings import embedder_name
    from lessons.retrieval import semantic_cache

    service, _url, client = live
    assert service.settings.answer_cache == "exact"
    name = embedder_name(service.index.embeddings)  # a threshold low enough to match a near question
    monkeypatch.setitem(semantic_cache.DEFAULT_THRESHOLDS, (name, True), 0.3)
    add(client, "atlas.md", "atlas-7420")
    client.post("/v1/ask", json={"question": "What is the marker of atlas?"})
    calls = len(service.llm.calls)
    near = client.post("/v1/ask", json={"question": "What is the old marker of atlas?"}).json()
    assert near["cached"] is None and len(service.llm.calls) > calls  # answered anew, not the stored reply
    monkeypatch.setattr(service, "settings", service.settings.model_copy(update={"answer_cache": "semantic"}))
    calls = len(service.llm.calls)
    served = client.post("/v1/ask", json={"question": "What was the marker of atlas?"}).json()
    assert len(service.llm.calls) == calls and served["cached"]["mode"] == "semantic"
    assert served["cached"]["exact"] is False and served["cached"]["similarity"] >= 0.3


def test_the_answer_cache_setting_turns_it_off(live, monkeypatch):
    service, _url, client = live
    monkeypatch.setattr(service, "settings", service.settings.model_copy(update={"answer_cache": "off"}))
    add(client, "atlas.md", "atlas-7420")
    for _ in range(2):
        calls = len(service.llm.calls)
        reply = client.post("/v1/ask", json={"question": "What is the marker of atlas?"}).json()
        assert reply["cached"] is None and len(service.llm.calls) > calls


def test_nightly_evaluates_new_documents_stores_each_run_and_reports_the_trend(live, tmp_path):
    from sqlalchemy import func, select

    from service.db import EvalResult, EvalRun
    from service.nightly import run_nightly, trend

    service, url, client = live
    add(client, "first.md", "first-111")
    add(client, "second.md", "second-222")
    first = run_nightly(service, url, scripted_model(), questions=2, out=tmp_path / "nightly", progress=False)
    assert first["metrics"]["new documents"] == 2 and first["metrics"]["questions"] == 2
    assert first["metrics"]["recall@3"] == 1.0 and first["metrics"]["completeness"] == 1.0

    quiet = run_nightly(service, url, scripted_model(), questions=2, out=tmp_path / "nightly", progress=False)
    assert quiet["metrics"] == {"new documents": 0, "chunks": 0, "questions": 0, "out-of-KB probes": 0}  # nothing asked

    add(client, "third.md", "third-333")
    third = run_nightly(service, url, scripted_model(), questions=2, out=tmp_path / "nightly", progress=False)
    assert third["metrics"]["new documents"] == 1

    with service.db.read() as session:
        assert session.execute(select(func.count()).select_from(EvalRun)).scalar() == 3
        per_run = dict(session.execute(select(EvalResult.run_id, func.count()).group_by(EvalResult.run_id)).all())
        questions = (
            session.execute(select(EvalResult.question).where(EvalResult.run_id == third["run_id"])).scalars().all()
        )
    assert per_run == {first["run_id"]: 2, third["run_id"]: third["metrics"]["questions"]}
    assert questions and all("third" in q for q in questions)  # only the document added since the last run
    rows = trend(service.db)
    assert [r["run"] for r in rows] == [first["run_id"], quiet["run_id"], third["run_id"]]
    report = (tmp_path / "nightly" / "report.md").read_text()
    assert report.count("\n| ") == 4 and (tmp_path / "nightly" / "trend.png").stat().st_size > 0
    runs = client.get("/v1/eval/runs").json()
    assert [r["run_id"] for r in runs] == [r["run"] for r in rows]


def test_a_crashed_chat_model_is_a_503_that_says_so_and_the_next_question_is_answered(live):
    """The local server dying mid-question is named over HTTP (not a bare 500), and the service recovers by itself."""
    from lessons.core.models import ModelError

    service, _url, client = live
    add(client, "atlas.md", "atlas-7420")
    crashes = [ModelError("the local model server (pid 7) crashed: Segmentation fault. Fix: run `python -m ...`")]
    healthy = service._chat_model_factory

    def crashing_once():
        model = healthy()
        answer = model.default
        model.default = lambda messages, tools: crashes.pop() if crashes else answer(messages, tools)
        return model

    service._chat_model_factory = crashing_once
    first = client.post("/v1/ask", json={"question": "What is the marker of atlas?"})
    assert first.status_code == 503 and "crashed: Segmentation fault" in first.json()["detail"]
    second = client.post("/v1/ask", json={"question": "What is the marker of atlas?"})
    assert second.status_code == 200 and "atlas-7420" in second.json()["answer"]


def write_probes(path, lines) -> str:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return str(path)


PROBES = [
    {"id": "probe-1", "question": "Tell me about the unknown thing", "language": "en", "type": "out_of_kb"},
    {"id": "probe-2", "question": "Who signed the unknown thing in 2031?", "language": "en", "type": "out_of_kb"},
]


def test_every_nightly_run_asks_the_out_of_kb_probes_and_the_report_shows_the_abstention(live, tmp_path, monkeypatch):
    from sqlalchemy import select

    from service.db import EvalResult
    from service.nightly import run_nightly

    service, url, client = live
    add(client, "first.md", "first-111")
    before = run_nightly(service, url, scripted_model(), questions=1, out=tmp_path / "nightly", progress=False)
    assert before["metrics"]["out-of-KB probes"] == 0 and before["metrics"].get("abstained (out-of-KB)") is None

    probes = write_probes(tmp_path / "probes.jsonl", PROBES)
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_NIGHTLY_PROBES", probes)  # the setting, read as the service reads it
    from service.settings import load_service_settings

    monkeypatch.setattr(service, "settings", load_service_settings())
    assert str(service.settings.nightly_probes) == probes
    quiet = run_nightly(service, url, scripted_model(), questions=1, out=tmp_path / "nightly", progress=False)
    # no new document, yet the standing probes are asked: the service refuses both
    assert quiet["metrics"]["new documents"] == 0 and quiet["metrics"]["questions"] == 0
    assert quiet["metrics"]["out-of-KB probes"] == 2 and quiet["metrics"]["abstained (out-of-KB)"] == 1.0
    with service.db.read() as session:
        stored = session.execute(select(EvalResult).where(EvalResult.run_id == quiet["run_id"])).scalars().all()
        assert sorted(r.question_id for r in stored) == ["probe-1", "probe-2"]
        assert all(json.loads(r.row_json)["correct_abstention"] == 1 for r in stored)

    add(client, "second.md", "second-222")
    both = run_nightly(service, url, scripted_model(), questions=1, out=tmp_path / "nightly", progress=False)
    assert both["metrics"]["questions"] == 1 and both["metrics"]["out-of-KB probes"] == 2
    assert both["metrics"]["completeness"] == 1.0 and both["metrics"]["abstained (out-of-KB)"] == 1.0

    report = (tmp_path / "nightly" / "report.md").read_text()
    table = [line for line in report.splitlines() if line.startswith("| ")]
    assert "abstained (out-of-KB)" in table[0] and "out-of-KB probes" in table[0]
    assert table[1].endswith("| 0 | not measured |")  # the run before the probes: said, not left blank
    assert table[2].endswith("| 2 | 1.00 of 2 |") and table[3].endswith("| 2 | 1.00 of 2 |")
    assert "not measured in a run without out-of-KB probes" in report


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([PROBES[0], {"id": "a1", "question": "What is the marker?", "language": "en", "type": "fact"}],
         r"probes\.jsonl, line 2: a1 has type 'fact' — an out-of-KB probe .* \"type\": \"out_of_kb\""),
        ([PROBES[0], {"id": "p2", "question": "x?", "language": "en", "type": "out-of-kb"}],
         r"probes\.jsonl, line 2: .*out_of_kb"),
    ],
)  # fmt: skip
def test_a_bad_probe_file_is_an_error_naming_the_file_the_line_and_the_fix(live, tmp_path, lines, message):
    from sqlalchemy import func, select

    from service.db import EvalRun
    from service.nightly import ProbeFileError, run_nightly

    service, url, _client = live
    probes = write_probes(tmp_path / "probes.jsonl", lines)
    with pytest.raises(ProbeFileError, match=message):
        run_nightly(service, url, scripted_model(), out=tmp_path / "nightly", progress=False, probes=probes)
    with pytest.raises(ProbeFileError, match=r"missing\.jsonl does not exist"):
        run_nightly(service, url, scripted_model(), progress=False, probes=tmp_path / "missing.jsonl")
    with service.db.read() as session:
        assert session.execute(select(func.count()).select_from(EvalRun)).scalar() == 0  # no half-recorded run
