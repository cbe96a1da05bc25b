"""Metadata filters built from the question ("self-query"): the chat model reads the question and the knowledge base's
list of documents and fills a typed filter — document, document type, language, section — that narrows retrieval to
the chunks whose metadata match.

Introduced in notebook 09 (routing, metadata filters and a semantic cache). What keeps it honest:

- The model chooses from what exists: the document, its type and the language are `Literal` choices built from the
  chunks' own metadata (`FilterChoice` per knowledge base, `filter_schema`), "any" when the question names none; the
  section is free text, resolved to the sections whose title contains it.
- `validate_filter` checks every condition against the chunks: a condition no chunk meets, or one that together with
  the conditions kept before it would match nothing, is **dropped**, and the result says which and why — a filter
  never silently empties the retrieval.
- Retrieval with a filter is the course's one reranked hybrid (`reranked_hybrid`, notebook 02) over the chunks that
  match: BM25 over them, Chroma's dense search with the same conditions as its `where` clause.

`named_documents` says which documents a question names (a file's name, or a title in `DOCUMENT_NAMES`): notebook 09
measures filters on the gold questions that name one, against the unfiltered reranked hybrid.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field, create_model

from lessons.core.i18n import t
from lessons.core.structured import invoke_structured
from lessons.text.normalise import fold_width

ANY = "any"
# The metadata fields a filter may set, in the order `validate_filter` keeps them (the most specific first).
FIELDS = ("source", "format", "language", "section")
# How the course's documents are called in a question, besides their file name (packages: the package's name).
DOCUMENT_NAMES = {
    "atlas_admin_guide.md": ("admin guide", "administrator guide", "管理员指南"),
    "atlas_whitepaper.pdf": ("white paper", "whitepaper", "白皮书"),
    "employee_handbook.docx": ("employee handbook", "handbook", "员工手册"),
    "release_notes.md": ("release notes", "发布说明"),
    "support_faq.html": ("support faq",),
    "faq_zh.html": ("常见问题",),
    "meeting_notes_2026_09.txt": ("meeting notes", "september 2026 meetings"),
    "weekly_meeting_zh.txt": ("周会",),
    "q3_2026_business_review.pptx": ("business review", "业务回顾"),
    "rag_techniques_note_zh.md": ("技术笔记",),
    "data_security_policy_zh.docx": ("数据安全与合规制度", "data security policy"),
    "customer_cases_zh.docx": ("客户案例",),
}
_SEPARATORS = re.compile(r"[\s_\-]+")


def _folded(text: str) -> str:
    return " " + _SEPARATORS.sub(" ", fold_width(text).casefold()).strip() + " "


def document_names(source: str) -> tuple[str, ...]:
    """The names a question may call a document by: its file name without the extension (separators as spaces:
    "langchain-text-splitters" is also "LangChain Text Splitters") and its titles in `DOCUMENT_NAMES`."""
    stem = source.rsplit(".", 1)[0]
    return (stem, *DOCUMENT_NAMES.get(source, ()))


def named_documents(question: str, sources: Sequence[str]) -> list[str]:
    """The documents among `sources` that `question` names (whole words in English, any substring in Chinese)."""
    asked = _folded(question)
    found = []
    for source in sources:
        for name in document_names(source):
            folded = _folded(name)
            if folded in asked or (not name.isascii() and folded.strip() in asked):
                found.append(source)
                break
    return found


def metadata_values(chunks: Sequence[Document]) -> dict[str, list[str]]:
    """Every value each filter field takes in `chunks` (sorted; empty sections left out)."""
    values: dict[str, set[str]] = {name: set() for name in FIELDS}
    for chunk in chunks:
        for name in FIELDS:
            value = chunk.metadata.get(name)
            if value:
                values[name].add(str(value))
    return {name: sorted(found) for name, found in values.items()}


def filter_schema(chunks: Sequence[Document]) -> type[BaseModel]:
    """The typed filter the chat model fills for these chunks: each choice is a value that exists, or "any"."""
    values = metadata_values(chunks)

    def choice(name: str):
        return Literal[(*values[name], ANY)] if values[name] else Literal[ANY]

    return create_model(
        "FilterChoice",
        __doc__="Which chunks can hold the answer: set a field only when the question names it.",
        source=(choice("source"), Field(description="the document the question names, or 'any'")),
        format=(choice("format"), Field(description="the document type the question names (pdf, docx, …), or 'any'")),
        language=(
            choice("language"),
            Field(description="the language of the documents the question asks about, or 'any'"),
        ),
        section=(str, Field(description="words of the section title the question names, or an empty string")),
    )


FILTER_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            (
                "You narrow a search to the documents a question is about. The documents (file, type, language, "
                "title):\n"
                "{documents}\nSet source only when the question names that document (its title, its file or its "
                "package); set format or language only when the question asks for documents of that type or in that "
                "language — a question written in Chinese may ask about an English document; set section only when the "
                "question names a section. Otherwise answer 'any' (section: an empty string)."
            ),
        ),
        ("human", "Question: {question}"),
    ]
)


def document_list(chunks: Sequence[Document]) -> str:
    """One line per document for the prompt: its file, type, language and title (its first heading)."""
    seen: dict[str, str] = {}
    for chunk in chunks:
        source = chunk.metadata.get("source", "")
        if source and source not in seen:
            title = str(chunk.metadata.get("section_path") or "").split(" > ")[0]
            meta = chunk.metadata
            seen[source] = f"- {source} ({meta.get('format', '?')}, {meta.get('language', '?')}): {title}".rstrip(": ")
    return "\n".join(seen.values())


def matches(metadata: Mapping[str, Any], where: Mapping[str, Sequence[str]]) -> bool:
    """Whether a chunk's metadata meet every condition of `where` (field → allowed values)."""
    return all(str(metadata.get(name, "")) in allowed for name, allowed in where.items())


@dataclass(frozen=True)
class Dropped:
    """A condition the model asked for that `validate_filter` left out, and why."""

    field: str
    value: str
    reason: str


@dataclass(frozen=True)
class ChunkFilter:
    """A validated filter: field → allowed values (empty: no filter), what was dropped, and how many chunks match."""

    where: dict[str, list[str]] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)
    matching: int = 0

    def __bool__(self) -> bool:
        return bool(self.where)

    def chroma_where(self) -> dict | None:
        """The same conditions as a Chroma `where` clause (None without conditions)."""
        clauses = [{name: {"$in": list(values)}} for name, values in self.where.items()]
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def describe(self) -> str:
        """The filter in a line: "source = release_notes.md; section ∈ {…}", or "no filter"."""
        if not self.where:
            return t("no filter")
        return "; ".join(f"{name} = {values[0]}" if len(values) == 1 else f"{name} ∈ {{{', '.join(values)}}}"
                         for name, values in self.where.items())  # fmt: skip


def resolve(name: str, value: str, values: Sequence[str]) -> list[str]:
    """The existing values a model's `value` for field `name` stands for: the equal one, or for a section every
    section title that contains it (case and width folded)."""
    wanted = fold_width(value).casefold().strip()
    if name == "section":
        return [v for v in values if wanted and wanted in fold_width(v).casefold()]
    return [v for v in values if fold_width(v).casefold() == wanted]


def validate_filter(choice: Mapping[str, str] | BaseModel, chunks: Sequence[Document]) -> ChunkFilter:
    """Keep each condition of the model's `choice` that some chunk meets together with those kept before it
    (in `FIELDS` order); drop the others, each with its reason."""
    asked = choice.model_dump() if isinstance(choice, BaseModel) else dict(choice)
    values = metadata_values(chunks)
    where: dict[str, list[str]] = {}
    dropped: list[Dropped] = []
    for name in FIELDS:
        value = str(asked.get(name) or "").strip()
        if not value or value == ANY:
            continue
        allowed = resolve(name, value, values[name])
        if not allowed:
            dropped.append(Dropped(name, value, t("no chunk has this value")))
            continue
        trial = {**where, name: allowed}
        if not any(matches(chunk.metadata, trial) for chunk in chunks):
            dropped.append(Dropped(name, value, t("with the conditions before it, no chunk would match")))
            continue
        where = trial
    return ChunkFilter(where, dropped, sum(matches(chunk.metadata, where) for chunk in chunks))


class FilterBuilder:
    """The chat model turns a question into a `ChunkFilter` for `chunks`: one forced structured call, then
    `validate_filter`. Introduced in notebook 09 (routing, metadata filters and a semantic cache)."""

    def __init__(self, model: BaseChatModel, chunks: Sequence[Document]) -> None:
        if not chunks:
            raise ValueError(t("the knowledge base has no chunks: there is nothing a filter could select"))
        self.model, self.chunks = model, list(chunks)
        self.schema = filter_schema(self.chunks)
        self.documents = document_list(self.chunks)

    def choose(self, question: str) -> BaseModel:
        """The model's raw choice, before validation."""
        prompt = FILTER_PROMPT.invoke({"documents": self.documents, "question": question})
        return invoke_structured(self.model, self.schema, prompt)

    def build(self, question: str) -> ChunkFilter:
        return validate_filter(self.choose(question), self.chunks)


def filtered_retriever(chunks: Sequence[Document], store, chunk_filter: ChunkFilter, k: int = 4, **options):
    """The course's reranked hybrid (`reranked_hybrid`) over the chunks `chunk_filter` lets through: BM25 over them,
    the dense search with the same `where` clause. Without conditions it is the unfiltered reranked hybrid."""
    from lessons.retrieval.document_processor import reranked_hybrid

    if not chunk_filter:
        return reranked_hybrid(chunks, store, k=k, **options)
    subset = [chunk for chunk in chunks if matches(chunk.metadata, chunk_filter.where)]
    return reranked_hybrid(subset, store, k=k, where=chunk_filter.chroma_where(), **options)
