"""The side-by-side view of techniques: one column per technique, scores, evidence marks, escaping."""

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from lessons.evaluation import BASELINE
from lessons.ingest.corpus import GoldQuestion
from lessons.widgets.retrieval_explorer import run_techniques, side_by_side_html, technique_explorer


def doc(text, score=None, **metadata):
    metadata = {"source": "a.md", "chunk_index": 3, **metadata}
    if score is not None:
        metadata["score"] = score
    return Document(page_content=text, metadata=metadata)


def test_table_has_a_column_per_technique_and_a_row_per_rank():
    html = side_by_side_html({"dense": [doc("one", 0.91), doc("two", 0.8)], "bm25": [doc("three", 7.5)]}, k=2)
    assert html.count("<th") == 2 and html.count("<tr>") == 3
    assert "score 0.910" in html and "score 7.500" in html and "a.md #3" in html
    assert "<td></td>" in html  # bm25 has no second result


def test_results_without_a_score_show_a_dash_and_blocks_show_their_chunk_range():
    html = side_by_side_html({"small-to-big": [doc("text", chunk_indexes="2,3,4")]}, k=1)
    assert "score –" in html and "a.md #2,3,4" in html


def test_chunks_with_gold_evidence_are_marked_and_text_is_escaped():
    gold = GoldQuestion(
        id="q", question="q", language="en", type="fact", answer="a", sources=[{"file": "a.md"}], evidence=["port 7420"]
    )
    html = side_by_side_html({"dense": [doc("uses port 7420 <b>"), doc("nothing")]}, k=2, gold=gold)
    assert html.count("✅") == 1 and "&lt;b&gt;" in html


def test_run_techniques_runs_only_the_chosen_ones():
    techniques = {"upper": RunnableLambda(lambda q: [doc(q.upper())]), "never": RunnableLambda(lambda q: 1 / 0)}
    results = run_techniques(techniques, "hi", ["upper"])
    assert list(results) == ["upper"] and results["upper"][0].page_content == "HI"


def test_the_explorer_speaks_the_language_of_its_notebook_folder(tmp_path, monkeypatch):
    """In notebooks/zh the question box, the picker, the button and the score label are Chinese."""
    monkeypatch.delenv("AGENTIC_RAG_LANG", raising=False)
    techniques = {BASELINE: RunnableLambda(lambda q: [doc(q, 0.5)]), "HyDE": RunnableLambda(lambda q: [])}
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "masters").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    english = technique_explorer(techniques, "which port?", [BASELINE])
    assert [w.description for w in english.children[:3]] == ["Question", "Techniques", "Search"]
    assert english.children[1].options == ((BASELINE, BASELINE), ("HyDE", "HyDE"))
    (tmp_path / "notebooks" / "zh").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks" / "zh")
    chinese = technique_explorer(techniques, "哪个端口？", [BASELINE])
    assert [w.description for w in chinese.children[:3]] == ["问题", "技术", "检索"]
    picker = chinese.children[1]
    assert picker.options == (("稠密检索（基线）", BASELINE), ("HyDE", "HyDE")) and picker.value == (BASELINE,), (
        "the picker shows the glossary's term and keeps the English name as its value"
    )
    html = side_by_side_html({BASELINE: [doc("one", 0.91)], "small-to-big": []}, k=1)
    assert "分数 0.910" in html and "score" not in html, html
    assert ">稠密检索（基线）<" in html and ">由小到大检索<" in html and "baseline" not in html, "technique names too"
