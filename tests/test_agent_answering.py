"""The pieces the answering agents share (`lessons.agents.answering`), and that each agent uses them."""

from dataclasses import asdict

from langchain_core.documents import Document

from lessons.agents import answering, deep_research, grading, three_agents
from lessons.agents.answering import (
    Citation,
    abstain_message,
    citation_of,
    cited_documents,
    format_context,
    not_in_documents_answer,
    not_in_kb_answer,
)

DOCS = [
    Document("Port 7420 is the default.", metadata={"source": "guide.md", "chunk_id": "c1"}),
    Document(
        "默认端口是 7420。" * 3, metadata={"source": "handbook.pdf", "page": 3, "chunk_id": "c2", "document_id": "d2"}
    ),
]


def test_format_context_numbers_chunks_with_source_and_page_and_cuts_them():
    text = format_context(DOCS, max_chars=10)
    assert text.count("<document") == 2 and 'number="1"' in text and 'number="2"' in text
    assert 'source="guide.md"' in text and 'source="handbook.pdf, page 3"' in text
    assert "Port 7420 " in text and "is the default" not in text  # cut to 10 characters


def test_format_context_for_the_grading_loop_keeps_whole_chunks_and_the_bare_source():
    text = format_context(DOCS, max_chars=None, pages=False)
    assert "Port 7420 is the default." in text and "默认端口是 7420。" * 3 in text
    assert 'source="handbook.pdf"' in text and "page 3" not in text
    assert format_context(DOCS) != text


def test_abstain_messages_follow_the_question_language_and_the_kind():
    assert abstain_message("Who is the CFO?") == not_in_documents_answer("Who is the CFO?")
    assert not_in_documents_answer("Who is the CFO?") == answering.NOT_IN_DOCUMENTS["en"]
    assert not_in_kb_answer("谁是首席财务官？") == answering.NOT_IN_KB["zh"]
    assert abstain_message("谁是首席财务官？", "not_in_kb") == "知识库中没有关于这个问题的信息。"


def test_cited_documents_keep_the_cited_order_once_and_drop_numbers_outside():
    assert cited_documents([2, 2, 0, 5, 1], DOCS) == [DOCS[1], DOCS[0]]
    assert cited_documents([], DOCS) == []


def test_a_citation_names_the_chunk_or_only_the_page():
    assert citation_of(DOCS[1]) == Citation("handbook.pdf", 3, "c2")
    assert citation_of(DOCS[1], chunk=False) == Citation("handbook.pdf", 3)
    assert citation_of(DOCS[0]) == Citation("guide.md", None, "c1")


def test_every_agent_uses_the_one_module():
    assert three_agents.Citation is deep_research.Citation is Citation
    assert three_agents.format_context is deep_research.format_context is format_context
    assert three_agents.RESEARCH_PROMPT is deep_research.RESEARCH_PROMPT is answering.RESEARCH_PROMPT
    assert grading.ANSWER_PROMPT is answering.ANSWER_PROMPT and grading.not_in_kb_answer is answering.not_in_kb_answer
    assert three_agents.citations_for([2, 1], DOCS) == [
        Citation("handbook.pdf", 3, "c2"),
        Citation("guide.md", None, "c1"),
    ]
    assert deep_research.citations_from([2, 2], DOCS) == [Citation("handbook.pdf", 3)]


def test_the_service_citation_is_the_course_citation_with_what_the_api_returns():
    from service.pipeline import Citation as ServiceCitation

    cited = ServiceCitation(**asdict(citation_of(DOCS[1])), document_id="d2", text="默认端口")
    assert isinstance(cited, Citation)
    assert list(asdict(cited)) == ["source", "page", "chunk_id", "document_id", "text"]  # the API's JSON fields
