"""The service serves the registry's gated pipeline without the evaluation harness, its HTTP handlers go through
`service.core`, and the local server's runtime and the chat model no longer import each other (notebooks 00, 06, 08).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from langchain_core.documents import Document

ROOT = Path(__file__).resolve().parent.parent

SERVE_ONE_QUESTION = """
import json
import sys
import traceback

pandas_stack = []


class WatchPandas:  # records who imports pandas first
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" and not pandas_stack:
            pandas_stack.extend(frame.filename for frame in traceback.extract_stack())


sys.meta_path.insert(0, WatchPandas())
from langchain_core.documents import Document
from lessons.core.fakes import ScriptedChatModel
from service.pipeline import answer

replies = {"Evidence": {"quote": "Net revenue retention reached 118% in the third quarter", "answer": "118%"},
           "DraftAnswer": {"answer": "It reached 118%.", "found": "yes"}}
model = ScriptedChatModel(default=lambda messages, tools: replies[tools[0]] if tools else "yes")
review = Document("Net revenue retention reached 118% in the third quarter, driven by expansions.",
                  metadata={"source": "q3_2026_business_review.pptx"})
reply = answer(model, "What was Tidewell's net revenue retention in Q3 2026?", lambda q: [review],
               frozenset({"tidewell"}), max_rounds=1)
assert not reply.abstained, reply
ours = [f for f in pandas_stack if "/lessons/" in f or "/service/" in f]
print(json.dumps({"evaluation": sorted(m for m in sys.modules if m.startswith("lessons.evaluation")),
                  "pandas imported below": ours[-1] if ours else None,
                  "through docling": any("/docling" in f for f in pandas_stack[pandas_stack.index(ours[-1]):])
                  if ours else None}))
"""


def test_answering_a_question_loads_neither_the_evaluation_harness_nor_its_pandas():
    done = subprocess.run([sys.executable, "-c", SERVE_ONE_QUESTION], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["evaluation"] == []
    # pandas may come in only with ingestion's Docling (the worker converts files with it), never from serving code
    assert seen["pandas imported below"] is None or seen["through docling"], seen


IMPORT_THE_API = """
import json
import sys

import service.api

heavy = ("pandas", "docling_core", "transformers", "service.pipeline", "chromadb", "langgraph")
print(json.dumps(sorted(name for name in heavy if name in sys.modules)))
"""


def test_starting_the_api_imports_neither_pandas_nor_docling_s_document_stack():
    """`python -m service api` imports the API module before it serves: Docling's document model and chunker
    (docling_core, which imports pandas and transformers) are seconds of imports that only ingestion needs, when the
    worker converts its first file (`lessons.ingest.files`, `lessons.chunking.docling_hybrid`); the answering pipeline
    (`service.pipeline`: Chroma, LangGraph, the agents) loads with the first question (`service.core`)."""
    done = subprocess.run([sys.executable, "-c", IMPORT_THE_API], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_service_answers_with_the_registry_s_served_pipeline(monkeypatch):
    from lessons.agents.pipelines import PIPELINES, SERVED, PipelineResult
    from service.pipeline import answer

    chunk = Document("Net revenue retention reached 118%.", metadata={"source": "review.pptx", "document_id": "d1"})
    seen = {}

    def over(llm, retrieve, **options):
        seen.update(options, retrieved=retrieve("q"))
        return lambda question: PipelineResult(f"answer to {question}", False, [chunk], [chunk], {"check": None})

    assert SERVED == "grading-loop"
    monkeypatch.setitem(PIPELINES, SERVED, dataclasses.replace(PIPELINES[SERVED], over=over))
    reply = answer(object(), "q?", lambda q: [chunk], frozenset({"tidewell"}), max_rounds=2)
    assert reply.answer == "answer to q?" and [c.document_id for c in reply.citations] == ["d1"]
    assert seen == {"subject": frozenset({"tidewell"}), "max_rounds": 2, "retrieved": [chunk]}


def test_the_http_handlers_query_nothing_themselves():
    tree = ast.parse((ROOT / "service" / "api.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {name for name in imported if name and (name.startswith("sqlalchemy") or name == "service.db")}
    assert "session" not in (ROOT / "service" / "api.py").read_text(encoding="utf-8")


def test_the_local_server_runtime_does_not_import_the_chat_model_module():
    import grimp

    graph = grimp.build_graph("lessons")
    assert not graph.chain_exists(importer="lessons.core.local_server", imported="lessons.core.models")
    assert graph.chain_exists(importer="lessons.core.models", imported="lessons.core.local_server")
    assert graph.find_shortest_chain("lessons.core.local_server_cli", "lessons.core.models") is not None
