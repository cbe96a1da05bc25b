"""The summary tree (RAPTOR): deterministic bounded clusters, one summary per cluster in its language, bounded prompts,
answers from the LLM cache on a re-run, and summaries that always map back to their member chunks."""

import numpy as np
import pytest
from fakes import KeywordEmbeddings
from fakes import memory_store as fake_store
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from lessons.core.fakes import ScriptedChatModel
from lessons.core.llm_cache import SQLiteLLMCache
from lessons.core.vectorstore import index_documents
from lessons.retrieval.summary_tree import (
    MAX_MEMBERS,
    MAX_PROMPT_CHARS,
    MEMBERS,
    SummaryTree,
    SummaryTreeRetriever,
    build_summary_tree,
    cluster_vectors,
    is_summary,
    summary_document,
    summary_prompt,
    summary_tree_retriever,
)

TOPICS = ("port", "leave", "backup", "price", "端口", "年假", "overview")  # one axis per topic word


def topic_embeddings():
    """Chunks about the same topic are neighbours."""
    return KeywordEmbeddings(TOPICS)


def chunk(text, source, index, language="en"):
    meta = {"source": source, "chunk_index": index, "chunk_id": f"{source}:{index}", "language": language}
    return Document(page_content=text, metadata=meta)


CHUNKS = [
    chunk("Atlas Server listens on port 7420.", "admin.md", 0),
    chunk("Open port 7420 in the firewall.", "install.md", 3),
    chunk("The port can be changed in atlas.yaml.", "admin.md", 5),
    chunk("Employees get 27 days of annual leave.", "handbook.docx", 1),
    chunk("Unused leave carries over until March.", "handbook.docx", 2),
    chunk("服务器默认使用端口 7420。", "faq_zh.html", 0, "zh"),
    chunk("端口可以在配置文件中修改。", "faq_zh.html", 1, "zh"),
    chunk("员工每年有二十七天年假。", "handbook_zh.md", 0, "zh"),
    chunk("未休年假可以顺延到三月。", "handbook_zh.md", 1, "zh"),
]


def memory_store():
    return fake_store(topic_embeddings())


def numbered_summaries(messages, tools):
    """A summary that names the cluster's first passage, so each cluster gets a text of its own."""
    passages = str(messages[-1].content)
    return "Summary: " + passages.split(">", 1)[1].strip().split("\n", 1)[0]


def test_clusters_follow_the_vectors_are_bounded_and_deterministic():
    rng = np.random.default_rng(0)
    groups = [rng.normal(size=(4, 8)) * 0.05 + center for center in np.eye(8)[:3] * 3]
    vectors = np.vstack([*groups, np.eye(8)[7:8] * 3])  # three tight groups of 4, and one outlier
    clusters = cluster_vectors(vectors, max_size=4)
    assert clusters == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]  # the outlier alone gets no summary
    assert cluster_vectors(vectors, max_size=4) == clusters
    many = rng.normal(size=(40, 8))
    capped = cluster_vectors(many, max_size=5)
    assert all(2 <= len(c) <= 5 for c in capped)
    assert len({i for c in capped for i in c}) == sum(len(c) for c in capped)  # no row in two clusters
    assert cluster_vectors(many[:1]) == []


def test_one_summary_per_cluster_per_language_asked_in_that_language():
    model = ScriptedChatModel(default=numbered_summaries)
    tree = build_summary_tree(CHUNKS, model, topic_embeddings(), max_members=3)
    assert len(model.calls) == len(tree.summaries) == sum(tree.clusters.values()) == 4
    assert tree.clusters == {"1-en": 2, "1-zh": 2}
    for call in model.calls:
        system, human = (str(m.content) for m in call["messages"])
        chinese = "摘要" in system
        assert chinese == ("端口" in human or "年假" in human)  # a Chinese cluster is asked in Chinese
        assert not (chinese and "port" in human.replace("端口", ""))  # and holds no English chunk
    for summary in tree.summaries:
        members = tree.leaves_of(summary)
        assert {m.metadata["language"] for m in members} == {summary.metadata["language"]}
        assert len(members) >= 2


def test_a_summary_prompt_reads_at_most_k_passages_and_c_characters():
    long = [chunk("port " * 2000, "big.md", i) for i in range(MAX_MEMBERS + 3)]
    messages = summary_prompt(long, "en")
    human = str(messages[-1].content)
    assert human.count("<document") == MAX_MEMBERS
    assert sum(len(block.split(">", 1)[1]) for block in human.split("</document>")[:-1]) <= MAX_PROMPT_CHARS + 40


def test_a_rebuild_is_answered_by_the_llm_cache(tmp_path):
    cache = SQLiteLLMCache(tmp_path / "llm.sqlite")
    first_model = ScriptedChatModel(default=numbered_summaries, cache=cache)
    first = build_summary_tree(CHUNKS, first_model, topic_embeddings(), max_members=3)
    again_model = ScriptedChatModel(default=numbered_summaries, cache=cache)
    again = build_summary_tree(CHUNKS, again_model, topic_embeddings(), max_members=3)
    assert len(first_model.calls) == 4 and again_model.calls == []
    assert [s.metadata["chunk_id"] for s in again.summaries] == [s.metadata["chunk_id"] for s in first.summaries]


def overview_of_the_port(messages, tools):
    """Only the English port cluster's summary says "overview": the one word a question can match it by."""
    return "Overview of the port settings." if "7420" in str(messages[-1].content) else "Summary."


def test_a_summary_hit_from_the_index_comes_back_as_its_member_chunks_never_as_itself():
    tree = build_summary_tree(
        CHUNKS, ScriptedChatModel(default=overview_of_the_port), topic_embeddings(), max_members=3
    )
    store = memory_store()
    index_documents(store, tree.documents())
    retriever = summary_tree_retriever(tree, store, k=3, candidates=3, reranker=None)
    fused = retriever.first_stage.invoke("port overview")
    assert len(fused) == 3
    assert is_summary(fused[0]) and fused[0].page_content.startswith("Overview")  # read back from Chroma
    members = [c.metadata["chunk_id"] for c in CHUNKS[:3]]  # the English port cluster
    assert fused[0].metadata[MEMBERS].split(",") == members
    found = retriever.invoke("port overview")
    assert [d.metadata["chunk_id"] for d in found] == members  # the summary's place, taken by its chunks
    assert not any(is_summary(d) for d in found)


def test_expansion_puts_members_in_the_summarys_place_and_fails_loudly_when_members_are_lost():
    a, b, c = CHUNKS[0], CHUNKS[1], CHUNKS[3]
    summary = summary_document("about the port", [a, b], level=1, language="en")
    tree = SummaryTree(leaves=[a, b, c], summaries=[summary])
    ranked = SummaryTreeRetriever(first_stage=RunnableLambda(lambda q: [c, summary, a]), tree=tree, k=3).invoke("q")
    assert ranked == [c, a, b]
    lost = Document(page_content=summary.page_content, metadata={**summary.metadata, MEMBERS: ""})
    with pytest.raises(ValueError, match="rebuild"):
        tree.expand([lost])
    with pytest.raises(ValueError, match="rebuild"):
        SummaryTree(leaves=[c], summaries=[summary])  # its members are not in the tree


def test_a_second_level_summarises_summaries_and_expands_to_chunks():
    model = ScriptedChatModel(default=numbered_summaries)
    tree = build_summary_tree(CHUNKS, model, topic_embeddings(), levels=2, max_members=3)
    top = [s for s in tree.summaries if s.metadata["level"] == 2]
    assert top and len(model.calls) == len(tree.summaries)
    for summary in top:
        leaves = tree.leaves_of(summary)
        assert leaves and all(leaf in CHUNKS for leaf in leaves)


def test_members_can_take_the_summarys_place_nearest_to_the_question_first():
    leave, port = CHUNKS[3], CHUNKS[0]
    summary = summary_document("leave and port", [leave, port], level=1, language="en")
    tree = SummaryTree(leaves=[leave, port], summaries=[summary])
    store = memory_store()
    index_documents(store, tree.documents())
    first_stage = RunnableLambda(lambda q: [summary])
    in_document_order = SummaryTreeRetriever(first_stage=first_stage, tree=tree, k=2).invoke("port")
    by_question = SummaryTreeRetriever(first_stage=first_stage, tree=tree, k=2, members="question", store=store)
    assert in_document_order == [leave, port]
    assert by_question.invoke("port") == [port, leave] and by_question.invoke("leave") == [leave, port]
