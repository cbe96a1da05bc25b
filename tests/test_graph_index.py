"""Graph RAG helpers: name normalisation, bounded cached extraction, the graph, and graph expansion."""

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from lessons.core.fakes import ScriptedChatModel, always
from lessons.core.llm_cache import SQLiteLLMCache
from lessons.retrieval.graph_index import (
    GRAPH,
    EntityGraph,
    Extraction,
    GraphExpansionRetriever,
    entity_forms,
    entity_key,
    extract_graph,
)


def chunk(cid: str, text: str = "") -> Document:
    return Document(page_content=text or f"text of {cid}", metadata={"chunk_id": cid, "section": "S", "source": "d.md"})


class Fixed(BaseRetriever):
    documents: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return list(self.documents)


def test_entity_keys_fold_case_width_space_quotes_and_the():
    assert entity_key("  The  Atlas   Server ") == entity_key("atlas server") == "atlas server"
    assert entity_key("ＡＴＬＡＳ Guard") == entity_key("“Atlas Guard”") == "atlas guard"
    assert entity_key("Atlas 服务器") == entity_key("Atlas服务器")
    assert entity_key("—") == ""


def test_a_name_with_its_other_language_form_in_brackets_gives_both_keys():
    assert entity_forms("守护模块（Atlas Guard）") == ["守护模块", "atlas guard"]
    assert entity_forms("Atlas Guard (守护模块)") == ["atlas guard", "守护模块"]
    assert entity_forms("Atlas Guard") == ["atlas guard"]


def test_extraction_is_one_call_per_chunk_bounded_and_cached(tmp_path):
    replies = [
        {
            "entities": ["Atlas Guard"],
            "relations": [{"source": "Atlas Guard", "relation": "checks", "target": "claims"}],
        },
        {"entities": ["Atlas Server"], "relations": []},
    ]
    model = ScriptedChatModel(responses=replies, cache=SQLiteLLMCache(tmp_path / "llm.sqlite"))
    chunks = [chunk("a"), chunk("b"), chunk("c")]
    first = extract_graph(model, chunks, max_chunks=2)
    assert len(model.calls) == 2 and first.skipped == 1 and first.chunks == 2
    assert first.entities == {"a": ["Atlas Guard"], "b": ["Atlas Server"]}
    assert first.relations["a"] == [("Atlas Guard", "checks", "claims")]
    again = extract_graph(model, chunks, max_chunks=2)
    assert len(model.calls) == 2, "a re-run is served by the LLM cache"
    assert again.entities == first.entities


def test_the_schema_bounds_the_entities_and_an_unusable_answer_is_recorded():
    too_many = {"entities": [f"e{i}" for i in range(7)], "relations": []}
    model = ScriptedChatModel(default=always(too_many))
    result = extract_graph(model, [chunk("a")], max_entities=5)
    assert result.entities == {"a": []} and "a" in result.failures
    tools = model.calls[0]["tools"]
    assert tools, "the extraction is a structured (tool) call"


def graph_of(entities: dict[str, list[str]], relations=None) -> EntityGraph:
    return EntityGraph.from_extraction(Extraction(entities=entities, relations=relations or {}))


def test_graph_merges_aliases_and_links_chunks_through_shared_entities():
    graph = graph_of({"a": ["Atlas Guard (守护模块)"], "b": ["守护模块"], "c": ["atlas  guard"], "d": ["Tidewell"]})
    (guard,) = graph.chunk_entities["a"]
    assert graph.entity_chunks[guard] == {"a", "b", "c"}
    assert {key for key, _, _ in graph.related_chunks(["a"], max_share=1.0)} == {"b", "c"}


def test_relations_reach_further_at_lower_weight_and_hubs_link_nothing():
    entities = {"a": ["Guard", "Atlas"], "b": ["Strict mode", "Atlas"], "c": ["Atlas"], "d": ["Atlas"], "e": ["Atlas"]}
    relations = {"a": [("Guard", "has", "Strict mode")]}
    graph = graph_of(entities, relations)
    assert graph.names[next(iter(graph.hubs(max_share=0.5)))] == "Atlas"
    related = graph.related_chunks(["a"], max_share=0.5)
    assert [key for key, _, _ in related] == ["b"], "b is reached through the relation Guard → Strict mode"
    assert related[0][2] == ["Strict mode"]


def test_graph_expansion_brings_in_the_chunk_that_shares_an_entity_with_the_top_hit():
    chunks = [chunk(c) for c in "abcdefgh"] + [chunk("z", "the second hop")]
    graph = graph_of({"a": ["Atlas Guard"], "z": ["atlas guard", "Tidewell"], "b": ["Tidewell"], "c": []})
    first = Fixed(documents=chunks[:8])  # z is not in the first stage's list
    retriever = GraphExpansionRetriever.over(first, graph, chunks, seeds=1, k=5)
    found = retriever.invoke("q")
    ids = [d.metadata["chunk_id"] for d in found]
    assert "z" in ids[:3] and ids[0] == "a"
    assert found[ids.index("z")].metadata[GRAPH] == ["Atlas Guard"]
    assert len(found) == 5


def test_without_graph_neighbours_the_first_stage_order_is_kept():
    chunks = [chunk(c) for c in "abc"]
    retriever = GraphExpansionRetriever.over(Fixed(documents=chunks), graph_of({"a": ["X"]}), chunks, k=2)
    assert [d.metadata["chunk_id"] for d in retriever.invoke("q")] == ["a", "b"]


def test_summary_counts_the_graph():
    graph = graph_of({"a": ["X", "Y"], "b": ["X"]}, {"a": [("X", "is", "Y")]})
    assert graph.summary(max_share=1.0) == {"chunks": 2, "entities": 2, "related pairs": 1, "hubs": 0}


def test_the_seeds_keep_their_ranks_above_hits_the_graph_also_reaches():
    chunks = [chunk(c) for c in "abcd"]
    graph = graph_of({"a": ["Hangzhou"], "d": ["Hangzhou"], "b": [], "c": []})
    retriever = GraphExpansionRetriever.over(Fixed(documents=chunks), graph, chunks, seeds=2, k=4)
    assert [d.metadata["chunk_id"] for d in retriever.invoke("q")] == ["a", "b", "d", "c"]
