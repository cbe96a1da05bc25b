"""The chunking measures: clean ends, split quotes, intact blocks, retrieval scores, one row per language."""

import math

import pytest
from langchain_core.documents import Document

from lessons import chunk_evaluation
from lessons.chunk_evaluation import (
    StrategyRun,
    block_body,
    boundary_share,
    compare_strategy,
    ends_at_boundary,
    findable_quotes,
    index_name,
    intact_share,
    retrieval_scores,
    retrieve,
    run_parent_child,
    run_strategy,
    split_quote_share,
)
from lessons.chunking import parent_child_chunks, recursive_chunker
from lessons.corpus import GoldQuestion
from lessons.markdown_blocks import atomic_blocks

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
    assert retrieval_scores(ranked, questions, k=2) == {"hit_rate": 0.5, "mrr": 0.25}
    with pytest.raises(ValueError, match="once per question"):
        retrieval_scores(ranked[:1], questions, k=2)


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
