"""Notebook 09's techniques as pipelines of the one registry (`lessons.agents.pipelines.PIPELINES`), so notebook 06
and the evaluation command measure them like the others: routing, graph expansion, RAPTOR; the semantic cache as
rows of answers served, right and wrong. Scripted models and hand-set vectors, no model."""

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakes import TableEmbeddings
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from lessons.agents import pipelines as registry
from lessons.core.fakes import ScriptedChatModel
from lessons.evaluation.pipelines import (
    build_measured,
    cache_counts,
    cache_lookups,
    cache_rows,
    retrieval_rows,
    technique_lines,
)
from lessons.evaluation.testset import TestItem
from lessons.retrieval.routing import EmbeddingRouter
from lessons.retrieval.semantic_cache import SemanticCache


def chunk(text, chunk_id, source="d.md"):
    return Document(page_content=text, metadata={"chunk_id": chunk_id, "section": "S", "source": source})


PORT = chunk("Atlas Server exposes its APIs on port 7420.", "c-port")
DEPLOY = chunk("Hangzhou Bank deployed Atlas in March.", "c-deploy")
BUG = chunk("The bug was reported by Hangzhou Bank.", "c-bug")
README = chunk("chromadb listens on port 8000.", "p-port", "chromadb.md")


class Fixed(BaseRetriever):
    documents: list[Document]

    def _get_relevant_documents(self, query, *, run_manager=None):
        return list(self.documents)


def fixed_first_stage(monkeypatch, by_base):
    """The reranked hybrid of each base replaced by a fixed ranking (the first chunk's source names the base)."""

    def fake(r, top_n, chunks=None, store=None):
        chunks = r.chunks if chunks is None else chunks
        return Fixed(documents=list(by_base[chunks[0].metadata["source"]]))

    monkeypatch.setattr(registry, "_reranked_retriever", fake)


def answers(reply_to_graph=None):
    def reply(messages, tools):
        if tools == ["DraftAnswer"]:
            return {"answer": "Port 7420.", "found": "yes"}
        if tools == ["ChunkGraph"] and reply_to_graph:
            return reply_to_graph(messages[-1].content)
        raise AssertionError(f"unexpected call with tools {tools}")

    return ScriptedChatModel(default=reply)


QUESTIONS = {"Which port does Atlas use?": [1, 0, 0], "Which port does chromadb use?": [0, 0, 1],
             "How do I boil an egg?": [0, 1, 0]}  # fmt: skip


def test_the_routed_pipeline_searches_the_base_the_router_picks_and_refuses_neither_without_a_call(monkeypatch):
    built = []

    def from_chunks(bases, embeddings=None, threshold=None, k=3):
        built.append(sorted(bases))
        vectors = {"course": np.array([[1.0, 0, 0]]), "packages": np.array([[0, 0, 1.0]])}
        return EmbeddingRouter(vectors, TableEmbeddings(QUESTIONS), threshold=0.8, k=1)

    monkeypatch.setattr(EmbeddingRouter, "from_chunks", staticmethod(from_chunks))
    fixed_first_stage(monkeypatch, {"d.md": [PORT, DEPLOY], "chromadb.md": [README]})
    model = answers()
    r = registry.Resources(chunks=[PORT, DEPLOY], store=None, llm=model, k=1, knowledge_base="course",
                           other_bases={"packages": ([README], None)})  # fmt: skip
    pipeline = registry.PIPELINES["routed+rerank"].build(r)
    home = pipeline("Which port does Atlas use?")
    assert home.retrieved == [PORT, DEPLOY] and home.context == [PORT] and not home.abstained
    assert pipeline("Which port does chromadb use?").retrieved == [README]  # searched where the router sent it
    refused = pipeline("How do I boil an egg?")
    assert refused.abstained and refused.retrieved == [] and refused.details == {"route": "neither"}
    assert len(model.calls) == 2  # the refused question cost no call
    assert registry.PIPELINES["routed+rerank"].retrieval(r)("How do I boil an egg?") == []
    assert built == [["course", "packages"]]  # one router per Resources, for the pipeline and its ranking


def test_graph_expansion_is_built_once_with_the_chat_model_and_its_cost_is_measured(monkeypatch):
    fixed_first_stage(monkeypatch, {"d.md": [PORT, BUG]})

    def entities(text):
        return {"entities": ["Hangzhou Bank"] if "Hangzhou Bank" in text else ["Atlas Server"], "relations": []}

    model = answers(entities)
    filler = [chunk(f"Filler passage {i} about Atlas Server.", f"c-f{i}") for i in range(8)]
    r = registry.Resources(chunks=[PORT, BUG, DEPLOY, *filler], store=None, llm=model, k=2, rank_k=3)
    pipelines, costs = build_measured(["hybrid+rerank", "graph+rerank"], r)
    assert list(pipelines) == list(costs.index) == ["hybrid+rerank", "graph+rerank"]
    assert costs.loc["graph+rerank", "llm_calls"] == 11 and costs.loc["hybrid+rerank", "llm_calls"] == 0
    ranked = registry.PIPELINES["graph+rerank"].retrieval(r)("Who reported the bug, and when did they deploy Atlas?")
    assert [d.metadata["chunk_id"] for d in ranked] == ["c-port", "c-bug", "c-deploy"]  # the second hop, brought in
    assert ranked[2].metadata["graph_entities"] == ["Hangzhou Bank"]  # by the name it shares with the top hit
    assert len(model.calls) == 11  # the ranking reused the graph the pipeline's build made
    assert registry.PIPELINES["graph+rerank"].built_with_model and registry.PIPELINES["raptor+rerank"].built_with_model
    assert not registry.PIPELINES["routed+rerank"].built_with_model
    rows = retrieval_rows(["graph+rerank"], r, [ITEM], k=3, progress=False)
    assert rows["recall@3"].tolist() == [1.0] and len(model.calls) == 11


ITEM = TestItem(id="q1", question="Who reported the bug, and when did they deploy Atlas?", language="en",
                type="multi_hop", reference="Hangzhou Bank, in March.", evidence=["deployed Atlas in March"],
                evidence_chunk_ids=["c-deploy"], origin="gold")  # fmt: skip


def item(qid, question, evidence):
    return TestItem(id=qid, question=question, language="en", type="fact", reference=f"answer {qid}",
                    evidence=[evidence], evidence_chunk_ids=[], origin="gold")  # fmt: skip


def test_the_cache_rows_count_answers_served_right_and_wrong(tmp_path):
    angles = {"What port does Atlas use?": 0, "Which port does Atlas listen on?": 5, "What port does Atlas serve on?": 1,
              "What was ARR in Q2?": 60, "What was ARR in Q3?": 61, "How many leave days?": 120,
              "Who is the CFO?": 0}  # fmt: skip
    vectors = {q: [float(np.cos(np.radians(a))), float(np.sin(np.radians(a))), 0.0] for q, a in angles.items()}
    items = [
        item("port", "What port does Atlas use?", "port 7420"),
        item("port-2", "What port does Atlas serve on?", "port 7420"),  # the same evidence: the same answer
        item("arr", "What was ARR in Q2?", "ARR 12"),
        item("leave", "How many leave days?", "27 days"),
        TestItem(id="out", question="Who is the CFO?", language="en", type="out_of_kb", origin="gold"),
    ]
    lookups = [
        {"question": "Which port does Atlas listen on?", "of": "port", "kind": "paraphrase"},
        {"question": "What was ARR in Q3?", "of": "arr", "kind": "near"},
        {"question": "What was ARR in Q3?", "of": "not-stored", "kind": "near"},  # its question is not stored
    ]
    cache = SemanticCache(tmp_path / "c.sqlite", TableEmbeddings(vectors), "kb-1", threshold=0.99, guard=False)
    table = cache_rows(items, cache, lookups).set_index("lookup")
    assert len(cache) == 4  # the out-of-KB question has no answer to store
    again = table.loc["asked again (itself left out)"]
    assert (again["lookups"], again["answers served"], again["right"], again["wrong"]) == (4, 2, 2, 0)
    assert table.loc["paraphrase", ["lookups", "answers served", "right", "wrong"]].tolist() == [1, 1, 1, 0]
    assert table.loc["near", ["lookups", "answers served", "right", "wrong"]].tolist() == [1, 1, 0, 1]


def test_notebook_09_and_the_command_count_a_cache_with_one_harness(tmp_path):
    angles = {"What port does Atlas use?": 0, "Which port does Atlas listen on?": 5, "What was ARR in Q2?": 60,
              "What was ARR in Q3?": 61, "How many leave days?": 120}  # fmt: skip
    vectors = {q: [float(np.cos(np.radians(a))), float(np.sin(np.radians(a))), 0.0] for q, a in angles.items()}
    items = [item("port", "What port does Atlas use?", "port 7420"), item("arr", "What was ARR in Q2?", "ARR 12"),
             item("leave", "How many leave days?", "27 days")]  # fmt: skip
    lookups = [
        {"id": "p1", "question": "Which port does Atlas listen on?", "of": "port", "kind": "paraphrase"},
        {"id": "n1", "question": "What was ARR in Q3?", "of": "arr", "kind": "near"},
    ]
    cache = SemanticCache(tmp_path / "c.sqlite", TableEmbeddings(vectors), "kb-1", threshold=0.99)
    table = cache_rows(items, cache, lookups).set_index("lookup")
    from lessons.retrieval.semantic_cache import answer_equivalents

    found = cache_lookups(cache, lookups, answer_equivalents(items), guards=(False, True))
    assert found.fillna({"nearest": "none"})[["id", "guard", "nearest", "served", "correct"]].values.tolist() == [
        ["p1", False, "port", True, True], ["p1", True, "port", True, True],
        ["n1", False, "arr", True, False], ["n1", True, "none", False, False],  # the guard: Q2 never answers Q3
    ]  # fmt: skip
    assert cache_counts(found[~found["guard"]]) == {"lookups": 2, "paraphrases": 1, "answers served": 2, "right": 1,
                                                    "wrong": 1, "hit rate": 1.0, "wrong share": 0.5}  # fmt: skip
    guarded = found[found["guard"]]  # the cache's own setting, as the command asks it: the same counts
    for kind in ("paraphrase", "near"):
        counts = cache_counts(guarded[guarded["kind"] == kind])
        assert table.loc[kind].tolist() == [counts[c] for c in ("lookups", "answers served", "right", "wrong")]


def test_no_notebook_decides_a_cache_lookup_itself():
    """Whether a cache serves an answer, and whether it is right, is decided in one place (`cache_lookups`): a
    master that looped over `nearest` or compared a similarity with the threshold could count otherwise."""
    for master in sorted((Path(__file__).resolve().parents[1] / "masters").glob("*.py")):
        tree = ast.parse(master.read_text(encoding="utf-8"))
        for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)):
            calls = [node.func.attr for node in ast.walk(function)
                     if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]  # fmt: skip
            assert "nearest" not in calls, f"{master.name}: {function.name} asks the cache itself; use cache_lookups"
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(isinstance(op, ast.GtE) for op in node.ops):
                text = ast.unparse(node)
                assert not ("similarity" in text and "threshold" in text), f"{master.name}: {text}; use cache_lookups"


def test_every_technique_of_notebook_09_is_a_pipeline_of_the_one_registry():
    assert {"filtered+rerank", "routed+rerank", "graph+rerank", "raptor+rerank"} <= set(registry.PIPELINES)
    assert all(registry.PIPELINES[name].notebook == "09" for name in ("routed+rerank", "graph+rerank", "raptor+rerank"))
    with pytest.raises(registry.UnknownPipeline):
        registry.check_pipeline_names(["semantic-cache"])  # the cache is a table of answers served, not a pipeline


def test_technique_lines_compare_each_technique_with_the_pipeline_it_is_built_around():
    rows = pd.DataFrame([
        {"corpus": "course", "pipeline": name, "question_id": qid, "language": "en", "recall@5": recall, "MRR@10": mrr}
        for name, qid, recall, mrr in [("hybrid+rerank", "a", 1.0, 1.0), ("hybrid+rerank", "b", 0.5, 0.5),
                                       ("routed+rerank", "a", 0.0, 0.0), ("routed+rerank", "b", 0.5, 0.5),
                                       ("dense", "a", 1.0, 1.0), ("dense", "b", 0.0, 0.0)]
    ])  # fmt: skip
    (line,) = technique_lines(rows)
    assert line.startswith("- **routed+rerank on course** (2 questions): recall@5 0.250 against hybrid+rerank's 0.750")
    assert line.endswith("raised on 0, lowered on 1.")


def test_no_notebook_reads_a_benchmarks_result_file():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for master in sorted((root / "masters").glob("*.py")):
        code = "\n".join(line for line in master.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
        assert '"benchmarks" / "results"' not in code and "benchmarks/results" not in code, (
            f"{master.name} reads a benchmark's results: compute the figure in the run, or move what it needs to data/"
        )
