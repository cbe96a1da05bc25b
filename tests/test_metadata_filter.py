"""Metadata filters from the question: the typed choice offers only values that exist, validation drops what would
match nothing (and says why), the documents a question names, and filtered retrieval through the course's factory."""

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from lessons.core.fakes import ScriptedChatModel
from lessons.retrieval.metadata_filter import (
    ChunkFilter,
    FilterBuilder,
    filter_schema,
    matches,
    named_documents,
    validate_filter,
)


def chunk(source, fmt, language, section, text="text"):
    meta = {"source": source, "format": fmt, "language": language, "section": section, "section_path": f"T > {section}"}
    return Document(page_content=f"{text} {source} {section}", metadata=meta)


CHUNKS = [
    chunk("release_notes.md", "md", "en", "Atlas 4.2.1"),
    chunk("release_notes.md", "md", "en", "Atlas 4.1.0"),
    chunk("employee_handbook.docx", "docx", "en", "Annual leave"),
    chunk("faq_zh.html", "html", "zh", "部署"),
]


def test_the_schema_offers_only_values_that_exist():
    schema = filter_schema(CHUNKS)
    assert schema(source="faq_zh.html", format="any", language="zh", section="").source == "faq_zh.html"
    with pytest.raises(ValidationError):
        schema(source="pricing.pdf", format="any", language="any", section="")
    with pytest.raises(ValidationError):
        schema(source="any", format="pdf", language="any", section="")


def test_validation_keeps_conditions_that_match_and_drops_the_others_with_a_reason():
    kept = validate_filter({"source": "release_notes.md", "section": "4.2"}, CHUNKS)
    assert kept.where == {"source": ["release_notes.md"], "section": ["Atlas 4.2.1"]}
    assert kept.matching == 1 and not kept.dropped
    # each condition exists, but together with the document the language matches nothing: dropped, said so
    clash = validate_filter({"source": "release_notes.md", "language": "zh"}, CHUNKS)
    assert clash.where == {"source": ["release_notes.md"]} and clash.matching == 2
    assert [(d.field, d.value) for d in clash.dropped] == [("language", "zh")]
    assert "no chunk would match" in clash.dropped[0].reason
    # a section no chunk has
    missing = validate_filter({"section": "Pricing"}, CHUNKS)
    assert not missing and missing.matching == len(CHUNKS) and missing.dropped[0].field == "section"
    assert validate_filter({"source": "any", "format": "any", "language": "any", "section": ""}, CHUNKS).where == {}


def test_chroma_where_clause_and_matches_agree():
    single = ChunkFilter({"source": ["faq_zh.html"]})
    assert single.chroma_where() == {"source": {"$in": ["faq_zh.html"]}}
    both = ChunkFilter({"source": ["release_notes.md"], "section": ["Atlas 4.2.1", "Atlas 4.1.0"]})
    assert both.chroma_where() == {
        "$and": [{"source": {"$in": ["release_notes.md"]}}, {"section": {"$in": ["Atlas 4.2.1", "Atlas 4.1.0"]}}]
    }
    assert [matches(c.metadata, both.where) for c in CHUNKS] == [True, True, False, False]
    assert ChunkFilter().chroma_where() is None and ChunkFilter().describe() == "no filter"


def test_the_builder_validates_what_the_model_chose():
    model = ScriptedChatModel(responses=[{"source": "faq_zh.html", "format": "any", "language": "en", "section": ""}])
    built = FilterBuilder(model, CHUNKS).build("常见问题里怎么部署？")
    assert built.where == {"source": ["faq_zh.html"]}
    assert [d.field for d in built.dropped] == ["language"]
    assert "release_notes.md (md, en): T" in model.calls[0]["messages"][0].content
    with pytest.raises(ValueError, match="no chunks"):
        FilterBuilder(model, [])


def test_named_documents_reads_file_names_and_titles_in_both_languages():
    sources = ["langchain-text-splitters.md", "langchain-core.md", "atlas_whitepaper.pdf", "weekly_meeting_zh.txt"]
    assert named_documents("Which command does the LangChain Text Splitters README give?", sources) == [
        "langchain-text-splitters.md"
    ]
    assert named_documents("What does the white paper recommend?", sources) == ["atlas_whitepaper.pdf"]
    assert named_documents("9 月 17 日周会的结论是什么？", sources) == ["weekly_meeting_zh.txt"]
    assert named_documents("How does langchain work?", sources) == []


def test_filtered_retrieval_returns_only_matching_chunks(tmp_path, monkeypatch):
    from lessons.retrieval.document_processor import reranked_hybrid
    from lessons.retrieval.metadata_filter import filtered_retriever

    calls = {}

    def fake_factory(chunks, store, k=4, **options):
        calls.update(chunks=list(chunks), store=store, k=k, **options)
        return "retriever"

    monkeypatch.setattr("lessons.retrieval.document_processor.reranked_hybrid", fake_factory)
    assert filtered_retriever(CHUNKS, "store", ChunkFilter({"source": ["release_notes.md"]}), k=2) == "retriever"
    assert [c.metadata["source"] for c in calls["chunks"]] == ["release_notes.md", "release_notes.md"]
    assert calls["where"] == {"source": {"$in": ["release_notes.md"]}} and calls["k"] == 2
    calls.clear()
    filtered_retriever(CHUNKS, "store", ChunkFilter(), k=2)
    assert len(calls["chunks"]) == len(CHUNKS) and "where" not in calls
    assert reranked_hybrid is not fake_factory


def test_the_filtered_pipeline_searches_what_the_model_chose_and_reuses_one_retriever_per_filter(monkeypatch):
    from langchain_core.retrievers import BaseRetriever

    from lessons.agents.pipelines import PIPELINES, Resources, filtered_retrieval
    from lessons.retrieval import metadata_filter

    class Fixed(BaseRetriever):
        docs: list

        def _get_relevant_documents(self, query, *, run_manager=None):
            return list(self.docs)

    built = []

    def fake_retriever(chunks, store, chunk_filter, k=4, **options):
        built.append((chunk_filter.where, k, options["candidates"]))
        return Fixed(docs=[c for c in chunks if metadata_filter.matches(c.metadata, chunk_filter.where)][:k])

    monkeypatch.setattr(metadata_filter, "filtered_retriever", fake_retriever)
    handbook = {"source": "employee_handbook.docx", "format": "any", "language": "any", "section": ""}
    nowhere = {"source": "any", "format": "any", "language": "any", "section": "no such section"}
    model = ScriptedChatModel(responses=[handbook, nowhere, handbook])
    resources = Resources(chunks=CHUNKS, store=None, llm=model, rank_k=2, rerank_candidates=6)
    retrieve = filtered_retrieval(resources)
    assert retrieve("How many leave days does the handbook give?") == [CHUNKS[2]]
    assert retrieve("What changed?") == CHUNKS[:2]  # the section matches nothing: dropped, searched unfiltered
    assert retrieve("And the handbook's sick leave?") == [CHUNKS[2]]
    assert built == [({"source": ["employee_handbook.docx"]}, 2, 6), ({}, 2, 6)]  # the handbook's retriever reused
    assert len(model.calls) == 3  # one structured call per question
    assert PIPELINES["filtered+rerank"].notebook == "09" and PIPELINES["filtered+rerank"].retrieval is None
