"""The chunking measures: clean ends, split quotes, intact blocks, retrieval scores, one row per language."""

import math

import pytest
from langchain_core.documents import Document

from lessons.chunking import parent_child_chunks, recursive_chunker
from lessons.chunking.markdown_blocks import atomic_blocks
from lessons.evaluation import chunk_evaluation
from lessons.evaluation.chunk_evaluation import (
    StrategyRun,
    block_body,
    boundary_share,
    compare_strategy,
    comparison_findings,
    embed_questions,
    ends_at_boundary,
    findable_quotes,
    index_name,
    intact_share,
    mean_retrieval_scores,
    retrieve,
    run_parent_child,
    run_strategy,
    split_quote_share,
)
from lessons.ingest.corpus import GoldQuestion

SOURCE = """Atlas 4.2 adds hybrid search. It fuses BM25 and vectors.
- Debian 12
- Ubuntu 24.04

混合检索把两路结果融合。默认 k 值为 60。

| Port | Use |
|---|---|
| 7420 | API |

```yaml
port: 7420
```"""


def doc(text, **metadata):
    return Document(page_content=text, metadata={"source": "s.md", "language": "en", **metadata})


def question(qid, text, evidence, language="en"):
    return GoldQuestion(
        id=qid, question=text, language=language, type="fact", answer="a", sources=[{"file": "s.md"}], evidence=evidence
    )


@pytest.mark.parametrize(
    ("chunk", "clean"),
    [
        ("Atlas 4.2 adds hybrid search.", True),
        ("Atlas 4.2 adds hybrid sea", False),
        ("Atlas 4.", False),
        ("It fuses BM25 and vectors.\n- Debian 12", True),
        ("混合检索把两路结果融合。", True),
        ("混合检索把两路", False),
        ("| 7420 | API |", True),
        ("a sentence that is not in the source.", True),
        ("a fragment that is not in the source", False),
    ],
)
def test_ends_at_boundary(chunk, clean):
    assert ends_at_boundary(chunk, SOURCE) is clean


def test_ends_at_boundary_ignores_whitespace_a_splitter_changed():
    assert ends_at_boundary("search. It fuses BM25 and vectors. - Debian 12", SOURCE)


def test_boundary_share_looks_chunks_up_in_their_own_page():
    pages = [doc("First page ends here.", source="a.pdf", page=1), doc("Second page ends mid", source="a.pdf", page=2)]
    chunks = [doc("ends here.", source="a.pdf", page=1), doc("Second page ends", source="a.pdf", page=2)]
    assert boundary_share(chunks, pages) == 0.5
    assert math.isnan(boundary_share([], pages))


def test_a_quote_cut_across_two_chunks_counts_as_split():
    quote = "It fuses BM25 and vectors."
    whole = [doc("Atlas 4.2 adds hybrid search. It fuses BM25 and vectors.")]
    cut = [doc("Atlas 4.2 adds hybrid search. It fuses BM25"), doc("and vectors.")]
    assert split_quote_share(whole, [quote]) == 0.0
    assert split_quote_share(cut, [quote]) == 1.0
    assert math.isnan(split_quote_share(cut, []))


def test_findable_quotes_leaves_out_quotes_the_documents_do_not_hold():
    questions = [
        question("q1", "?", ["adds hybrid search", "not in the text"]),
        question("q2", "?", ["adds hybrid search"]),
    ]
    assert findable_quotes(questions, [doc(SOURCE)]) == ["adds hybrid search"]


def test_intact_share_counts_tables_and_code_held_whole():
    document = doc(SOURCE)
    table_start = SOURCE.index("| Port")
    whole = [doc(SOURCE[:table_start]), doc(SOURCE[table_start:])]
    cut = [doc(SOURCE[: table_start + 20]), doc(SOURCE[table_start + 20 :])]
    assert intact_share(whole, [document]) == 1.0
    assert intact_share(cut, [document]) == 0.5
    assert math.isnan(intact_share(whole, [doc("no tables here")]))


def test_block_body_drops_fences_but_keeps_tables_whole():
    table, code = atomic_blocks(SOURCE)
    assert block_body(table) == table.text
    assert block_body(code) == "port: 7420"
    assert block_body(atomic_blocks("$$\nx = 1\n$$")[0]).strip() == "x = 1"


def test_retrieval_scores_hit_rate_and_mrr():
    questions = [question("q1", "?", ["BM25"]), question("q2", "?", ["Ubuntu"])]
    ranked = [[doc("nothing"), doc("uses BM25")], [doc("nothing"), doc("nothing either")]]
    assert mean_retrieval_scores(ranked, questions, k=2) == {"hit_rate": 0.5, "mrr": 0.25}
    with pytest.raises(ValueError, match="once per question"):
        mean_retrieval_scores(ranked[:1], questions, k=2)


def test_index_name_differs_for_a_subset_and_is_stable():
    everything = [doc("x", source="a.md"), doc("y", source="b.md")]
    assert index_name("Headers + recursive", everything) == index_name(
        "Headers + recursive", list(reversed(everything))
    )
    assert index_name("Headers + recursive", everything) != index_name("Headers + recursive", everything[:1])
    assert index_name("Headers + recursive", everything).startswith("nb01-headers-recursive-")


class FakeStore:
    """Returns the stored documents in order, whatever the query."""

    def __init__(self, documents):
        self.documents = documents

    def similarity_search_by_vector(self, vector, k):
        return self.documents[:k]


def test_retrieve_returns_parents_for_a_parent_child_run():
    run = run_parent_child("parent-child", parent_child_chunks, [doc(SOURCE * 3)])
    ranked = retrieve(run, FakeStore(run.chunks), [[0.0]], k=2)
    assert len(ranked[0]) <= 2 and all(parent in run.parents for parent in ranked[0])
    plain = run_strategy("recursive", recursive_chunker(200, 0), [doc(SOURCE)])
    assert retrieve(plain, FakeStore(plain.chunks), [[0.0]], k=2) == [plain.chunks[:2]]


def test_compare_strategy_gives_one_row_per_language(monkeypatch):
    documents = [doc(SOURCE), doc("重排序后取前八名。", source="z.md", language="zh")]
    run = run_strategy("recursive", recursive_chunker(30, 0), documents)
    monkeypatch.setattr(chunk_evaluation, "build_index", lambda chunks, name, embeddings: FakeStore(list(chunks)))
    questions = [question("q1", "?", ["adds hybrid search"]), question("z1", "?", ["取前八名"], language="zh")]
    rows = compare_strategy(run, documents, questions, [[0.0], [0.0]], k=3)
    assert [row["language"] for row in rows] == ["en", "zh"]
    english, chinese = rows
    assert english["chunks"] + chinese["chunks"] == len(run.chunks)
    assert english["hit@3"] == 1.0 and chinese["hit@3"] == 0.0
    assert english["tables+code intact %"] == 50.0 and math.isnan(chinese["tables+code intact %"])
    assert isinstance(run, StrategyRun) and run.returned is run.chunks


def finding_row(strategy, language="en", hit=0.5, mrr=0.4, questions=10, returned=500.0, split=0.0, clean=90.0):
    return {
        "strategy": strategy,
        "language": language,
        "chunks": 10,
        "median chars": returned,
        "median returned chars": returned,
        "max chars": 2 * returned,
        "clean end %": clean,
        "quotes split %": split,
        "tables+code intact %": 80.0,
        "hit@5": hit,
        "MRR@5": mrr,
        "questions": questions,
    }


def test_findings_follow_the_measured_sign():
    rows = [
        finding_row("base"),
        finding_row("better", hit=0.7, mrr=0.6, returned=1000.0),
        finding_row("worse", hit=0.4, mrr=0.3, clean=40.0),
    ]
    text = comparison_findings(rows, baseline="base", k=5)
    assert "better finds evidence in the top 5 for 2 questions more than base" in text
    assert "ranks it higher (MRR +0.20)" in text and "(2.0× the baseline's)" in text
    assert "worse finds evidence in the top 5 for 1 question fewer than base (one question: read it as a tie)" in text
    assert "ranks it lower (MRR -0.10)" in text
    assert "from 40 (worse) to 90 (base, better)" in text
    assert "No strategy returned a gold evidence quote cut in two" in text
    assert "**better** has the highest hit@5 and MRR@5 in every language" in text
    assert "one question moves hit@5 by 0.10" in text


def test_findings_say_when_no_strategy_wins_everywhere_and_when_quotes_are_cut():
    rows = [
        finding_row("base", hit=0.8, mrr=0.7, split=5.0),
        finding_row("other", hit=0.6, mrr=0.5),
        finding_row("base", "zh", hit=0.2, mrr=0.1, questions=5),
        finding_row("other", "zh", hit=0.6, mrr=0.5, questions=5),
    ]
    text = comparison_findings(rows, baseline="base")
    assert "No strategy has the highest hit@5 and MRR@5 in every language" in text
    assert "**Chinese** (5 questions" in text and "other finds evidence in the top 5 for 2 questions more" in text
    assert "quotes split %" in text and "from 0.0 (other) to 5.0 (base)" in text
    assert "as many questions as" not in text


def test_findings_need_the_baseline_among_the_rows():
    with pytest.raises(ValueError, match="add it to STRATEGIES"):
        comparison_findings([finding_row("other")], baseline="base")


def test_embed_questions_batches_and_matches_embed_query():
    from lessons.core.embeddings import get_embeddings

    embeddings = get_embeddings()
    texts = ["Which port does Atlas Server listen on?", "Atlas 用什么做中文分词？"]
    vectors = embed_questions([question("q1", texts[0], ["port 7420"]), texts[1]], embeddings)
    assert len(vectors) == 2 and embed_questions([], embeddings) == []
    for vector, text in zip(vectors, texts, strict=True):
        assert max(abs(a - b) for a, b in zip(vector, embeddings.embed_query(text), strict=True)) < 1e-5


def test_embed_questions_falls_back_to_one_query_at_a_time():
    class OneAtATime:
        def embed_query(self, text):
            return [float(len(text))]

    assert embed_questions(["ab", "abc"], OneAtATime()) == [[2.0], [3.0]]
