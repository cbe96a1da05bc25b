"""What the course's answering agents share: the answer prompts, how context is shown to the model,
the honest "not in the documents" answers, and citations.

Introduced in notebook 04 (grading loop) and notebook 05 (three-agent verification); notebook 07's
deep-research agent and the service (notebook 08) answer with the same pieces.

- `format_context`: numbered chunks as delimited data (`lessons.core.prompt_safety.as_data`); every
  prompt that carries them also carries `DATA_RULE`.
- `ANSWER_PROMPT` (the grading loop's answer step, `DraftAnswer`) and `RESEARCH_PROMPT` (the research
  agent's cited answer, `ResearchDraft`).
- `NOT_IN_KB` / `NOT_IN_DOCUMENTS` and `abstain_message`: the abstain answers, in the question's language.
- `Citation` and `cited_documents`: the chunks behind the numbers an answer cites.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.documents import Document

from lessons.core.prompt_safety import DATA_RULE, as_data
from lessons.text.language import detect_language

CONTEXT_CHARS = 700  # each chunk is cut to this many characters in the prompts (reading is most of the cost)


# ---------------------------------------------------------------- abstaining

NOT_IN_KB = {  # the grading loop (notebook 04): nothing relevant was found
    "en": "The knowledge base has no information on this question.",
    "zh": "知识库中没有关于这个问题的信息。",
}
NOT_IN_DOCUMENTS = {  # the three agents (notebook 05): the documents hold no answer
    "en": "These documents do not contain the answer to this question.",
    "zh": "这些文档中没有这个问题的答案。",
}
ABSTAIN_MESSAGES = {"not_in_kb": NOT_IN_KB, "not_in_documents": NOT_IN_DOCUMENTS}


def abstain_message(question: str, kind: Literal["not_in_kb", "not_in_documents"] = "not_in_documents") -> str:
    """The honest answer when there is none, in the question's language (`kind` picks the wording)."""
    return ABSTAIN_MESSAGES[kind][detect_language(question)]


def not_in_kb_answer(question: str) -> str:
    """The honest answer when the knowledge base has nothing, in the question's language."""
    return abstain_message(question, "not_in_kb")


def not_in_documents_answer(question: str) -> str:
    """The honest answer when the documents do not hold one, in the question's language. Introduced in notebook 05 (three-agent verification)."""
    return abstain_message(question, "not_in_documents")


# ---------------------------------------------------------------- answer prompts

ANSWER_PROMPT = """Answer the question using ONLY the documents below. Do not use anything you know from elsewhere.
If the documents do not contain the answer, set found to "no". Answer in the question's language, in one to
three sentences. <<DATA_RULE>>

Question: {question}

Documents:
{documents}""".replace("<<DATA_RULE>>", DATA_RULE)

RESEARCH_PROMPT = """Answer the question using ONLY the numbered context chunks. Do not use anything you know from
elsewhere. Cite the numbers of the chunks you used. If the chunks disagree, say so and give each source's value.
If the context does not contain the answer, set found to "no". Answer in the question's language, in one to three
sentences. <<DATA_RULE>>{feedback}

Question: {question}

Context:
{context}""".replace("<<DATA_RULE>>", DATA_RULE)

# ---------------------------------------------------------------- context and citations


def format_context(documents: Sequence[Document], max_chars: int | None = CONTEXT_CHARS, *, pages: bool = True) -> str:
    """Numbered chunks, each with its source and page, cut to `max_chars` characters, as delimited data.

    Introduced in notebook 05 (three-agent verification). Each chunk is a `<document number="1"
    source="guide.md, page 2">` … `</document>` block (`lessons.core.prompt_safety.as_data`); a prompt that
    carries them also carries `DATA_RULE`. The grading loop (notebook 04) shows whole chunks with their
    source only: `format_context(documents, max_chars=None, pages=False)`.
    """
    blocks = []
    for number, doc in enumerate(documents, 1):
        if pages:
            where = str(doc.metadata.get("source", "?"))
            if doc.metadata.get("page") is not None:
                where += f", page {doc.metadata['page']}"
        else:
            where = doc.metadata.get("source")
        text = doc.page_content if max_chars is None else doc.page_content[:max_chars]
        blocks.append(as_data(text, number=number, source=where))
    return "\n\n".join(blocks)


@dataclass(frozen=True)
class Citation:
    """A chunk or page an answer cites: its file, page (None for unpaged formats) and chunk id. Introduced in notebook 05 (three-agent verification)."""

    source: str
    page: int | None
    chunk_id: str = ""  # empty for a page citation (notebook 07 cites pages)


def cited_documents(cited: Sequence[int], documents: Sequence[Document]) -> list[Document]:
    """The documents behind the cited numbers (1-based, in the order cited, each once); numbers outside are dropped."""
    picked, seen = [], set()
    for number in cited:
        if 1 <= number <= len(documents) and number not in seen:
            seen.add(number)
            picked.append(documents[number - 1])
    return picked


def citation_of(document: Document, *, chunk: bool = True) -> Citation:
    """A document's citation: its source, page and (with `chunk`) chunk id; `chunk=False` cites the page only."""
    meta = document.metadata
    return Citation(str(meta.get("source", "")), meta.get("page"), str(meta.get("chunk_id", "")) if chunk else "")
