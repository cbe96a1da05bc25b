"""A deep-research sub-agent that reads pages, not just chunks, behind a main conversational agent.

Introduced in notebook 07 (deep-research agent). Two agents with **isolated contexts**:

    user turn ─→ main agent ─ (mode "decide": does this turn need the documents? no → reply from the chat)
                     │ rewrites the turn into a standalone question (the chat history stays here)
                     ↓
                 sub-agent: search_chunks(question) → decide ─ search ─→ search_chunks(query) ─┐
                                                      ↑    ├ read_page ─→ read_page(source, page) ─┤
                                                      └────┼────────────────────────────────────────┘
                                                           └ answer (or the step cap) → answer + citations
                     ↓ only the answer and its citations come back (never the scratchpad)
                 main agent replies

- **Pages.** `PageStore` holds the converted documents as pages a reader would turn: the real pages
  of a PDF or PPTX, and for other formats the Markdown sections (a long section is paginated).
  `read_page(source_id, page_index)` returns one; a bad source or page number is an observation the
  agent can act on ("… has pages 1–7"), never a crash.
- **Decisions.** The local model emits no free tool calls, so every step is a forced structured
  choice, `ResearchDecision` (`reason`, `action` ∈ search | read_page | answer, `query`,
  `source_id`, `page_index`), through `invoke_structured`; with DeepSeek the same loop runs unchanged.
- **A loop that ends.** The tool-call counter lives in the graph's state and is advanced by the tool
  steps; at the cap the decide step does not ask the model, it answers — so the loop ends by construction.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START
from pydantic import BaseModel, Field

from lessons.agents.answerability import AnswerabilityCheck
from lessons.agents.answering import (
    RESEARCH_PROMPT,
    Citation,
    citation_of,
    format_context,
    not_in_documents_answer,
)
from lessons.agents.graphs import compile_graph
from lessons.agents.three_agents import ResearchDraft
from lessons.chunking.base import BILINGUAL_SEPARATORS
from lessons.core.i18n import N_, ReaderText, for_reader, t, t_marked
from lessons.core.prompt_safety import DATA_RULE, as_data
from lessons.core.structured import invoke_structured
from lessons.ingest.files import PAGED_FORMATS, split_sections
from lessons.retrieval.context_expansion import ChunkNeighbours, expand_hits

PAGE_CHARS = 1800  # a section longer than this is paginated (unpaged formats)
DEFAULT_MAX_STEPS = 4  # tool calls per question, the first search included

_WHITESPACE = re.compile(r"\s+")


def _collapse(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


# ---------------------------------------------------------------- pages


@dataclass(frozen=True)
class Page:
    """One page of a source: a real page (PDF, PPTX) or a section or part of one. Introduced in notebook 07 (deep-research agent)."""

    source: str
    index: int  # 1-based: the page number of a PDF/PPTX, the section (part) number otherwise
    title: str
    text: str


class PageNotFound(LookupError):
    """`read_page` was asked for a source or page that does not exist; the message names what does. Introduced in notebook 07 (deep-research agent).

    `message` (and `str(error)`) is the English the agent's model reads; `shown` is the same message in the course
    language, for the reader (`lessons.core.i18n.ReaderText`).
    """

    def __init__(self, message: str):
        super().__init__(message)
        self.message, self.shown = message, for_reader(message)


UNKNOWN_SOURCE = N_(
    "unknown source_id {source}: use a source name exactly as the search results show it, one of {sources}"
)
NO_SUCH_PAGE = N_("{source} has no page {page}: its pages are {first}–{last}")


def _not_found(message: str, **values: object) -> PageNotFound:
    """The error in English for the model, and in the course language for the reader."""
    return PageNotFound(ReaderText(message, **values))


def paginate(text: str, page_chars: int = PAGE_CHARS) -> list[str]:
    """`text` in parts of at most `page_chars` characters, cut at paragraph, line or sentence ends (both languages). Introduced in notebook 07 (deep-research agent)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    if len(text) <= page_chars:
        return [text]
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=page_chars, chunk_overlap=0, separators=BILINGUAL_SEPARATORS, keep_separator="end"
    )
    return splitter.split_text(text)


def pages_from_documents(documents: Sequence[Document], page_chars: int = PAGE_CHARS) -> list[Page]:
    """Pages of converted documents (`lessons.ingest.corpus.load_documents()`): PDF/PPTX pages as they are,
    other formats cut at their Markdown headings and long sections paginated. Introduced in notebook 07 (deep-research agent)."""
    pages: list[Page] = []
    for document in documents:
        if document.metadata.get("format") in PAGED_FORMATS:
            number = int(document.metadata["page"])
            pages.append(Page(str(document.metadata["source"]), number, f"page {number}", document.page_content))
    counters: dict[str, int] = {}
    unpaged = [d for d in documents if d.metadata.get("format") not in PAGED_FORMATS]
    for section in split_sections(unpaged):
        source = str(section.metadata["source"])
        title = section.metadata.get("section_path") or section.metadata.get("section") or source
        parts = paginate(section.page_content, page_chars)
        for number, part in enumerate(parts, 1):
            counters[source] = counters.get(source, 0) + 1
            suffix = f" (part {number}/{len(parts)})" if len(parts) > 1 else ""
            pages.append(Page(source, counters[source], title + suffix, part))
    return pages


_DECORATION = re.compile(r",\s*page\s*\d+\s*$")


def clean_source_id(source_id: str) -> str:
    """A source id without the brackets, quotes and ", page N" a model copies from the notes. Introduced in notebook 07 (deep-research agent)."""
    text = str(source_id).strip().strip("()[]'\"` ").strip()
    return _DECORATION.sub("", text).strip()


def page_address(source_id: str, page_index: Any) -> tuple[str, Any]:
    """(source, page) from what the model wrote: the source cleaned, and the page copied inside the source id
    ("(faq.html, page 3)") when `page_index` is 0 or not a number. Introduced in notebook 07 (deep-research agent)."""
    copied = _DECORATION.search(str(source_id).strip().strip("()[]'\"` ").strip())
    if copied and (not isinstance(page_index, int) or page_index < 1):
        page_index = int(re.sub(r"\D", "", copied.group()))
    return clean_source_id(source_id), page_index


class PageStore:
    """The pages of a document collection, addressed by (source_id, page_index). Introduced in notebook 07 (deep-research agent)."""

    def __init__(self, pages: Sequence[Page]):
        self._pages: dict[str, dict[int, Page]] = {}
        for page in pages:
            self._pages.setdefault(page.source, {})[page.index] = page
        self._collapsed = {(p.source, p.index): _collapse(p.text) for p in pages}

    @classmethod
    def from_documents(cls, documents: Sequence[Document], page_chars: int = PAGE_CHARS) -> PageStore:
        """Pages of converted documents, see `pages_from_documents`."""
        return cls(pages_from_documents(documents, page_chars))

    @property
    def sources(self) -> list[str]:
        return sorted(self._pages)

    def page_numbers(self, source: str) -> list[int]:
        return sorted(self._pages.get(source, {}))

    def __len__(self) -> int:
        return sum(len(pages) for pages in self._pages.values())

    def read(self, source_id: str, page_index: int) -> Page:
        """The page, or `PageNotFound` naming the known sources or the valid page range.

        A source id copied with the notes' decoration ("(faq.html, page 3)") is read as "faq.html".
        """
        source_id = clean_source_id(source_id)
        if source_id not in self._pages:
            raise _not_found(UNKNOWN_SOURCE, source=repr(source_id), sources=", ".join(self.sources))
        numbers = self.page_numbers(source_id)
        try:
            index = int(page_index)
        except (TypeError, ValueError):
            index = None
        if index not in self._pages[source_id]:
            raise _not_found(NO_SUCH_PAGE, source=source_id, page=repr(page_index), first=numbers[0], last=numbers[-1])
        return self._pages[source_id][index]

    def locate(self, chunk: Document) -> int | None:
        """The page index of a chunk of the same collection: its page for PDF/PPTX, otherwise the section
        part that contains its text (the one with the chunk's section title first); None if no page holds it."""
        source = str(chunk.metadata.get("source", ""))
        if chunk.metadata.get("page") is not None and chunk.metadata.get("format") in PAGED_FORMATS:
            return int(chunk.metadata["page"])
        text = _collapse(chunk.page_content)
        candidates: list[int] = []
        # the whole chunk; else (a chunk across two parts of a long section) its opening, its end, its first words
        for probe in (text, text[:80], text[-80:], text[:30]):
            candidates = [i for i in self.page_numbers(source) if probe and probe in self._collapsed[(source, i)]]
            if candidates:
                break
        section = chunk.metadata.get("section_path")
        preferred = [i for i in candidates if section and self._pages[source][i].title.startswith(section)]
        return (preferred or candidates or [None])[0]


# ---------------------------------------------------------------- the two tools


@dataclass(frozen=True)
class Observation:
    """What one tool call showed the sub-agent: a header line and numbered evidence (or an error). Introduced in notebook 07 (deep-research agent).

    `error` is what the model reads (English, like every prompt); `error_for_reader` is what a notebook or trace
    shows: the same error in the course language when it is a `lessons.core.i18n.ReaderText`.
    """

    action: str  # "search" or "read_page"
    header: str
    evidence: tuple[Document, ...] = ()
    error: str = ""

    @property
    def error_for_reader(self) -> str:
        """The error in the course language (a `ReaderText`), else as the model read it."""
        return for_reader(self.error)


def _error_observation(action: str, header: str, message: str) -> Observation:
    """An observation whose error is `message` (marked with N_): English for the model, translated for the reader."""
    return Observation(action, header, error=ReaderText(message))


def read_page(pages: PageStore, source_id: str, page_index: int, max_chars: int = 1500) -> Observation:
    """The `read_page` tool: the whole page (cut to `max_chars`), or an error the agent reads as an observation.

    Introduced in notebook 07 (deep-research agent).
    """
    source_id, page_index = page_address(source_id, page_index)
    try:
        page = pages.read(source_id, page_index)
    except PageNotFound as error:
        return Observation("read_page", f"read_page({source_id!r}, {page_index!r})", error=error.message)
    text = (
        page.text
        if len(page.text) <= max_chars
        else page.text[:max_chars] + f" […{len(page.text) - max_chars} more characters]"
    )
    document = Document(text, metadata={"source": page.source, "page": page.index, "title": page.title, "kind": "page"})
    return Observation("read_page", f"read_page({page.source!r}, {page.index}) — {page.title}", (document,))


class ChunkSearch:
    """The `search_chunks` tool: hybrid top-`candidates`, neighbour expansion, top `top`, optional rerank.

    Introduced in notebook 07 (deep-research agent). `retriever` is a hybrid retriever returning at
    least `candidates` chunks (`lessons.retrieval.document_processor.hybrid_over(chunks, store, k=20)`). The
    hits are expanded with their neighbours (`lessons.retrieval.context_expansion.expand_hits`; a hit inside a
    better block joins it) and the best `top` blocks are reranked as whole passages by `reranker`, any
    LangChain document compressor — in the notebook `lessons.retrieval.rerank.default_reranker(top)` (the
    cross-encoder for English questions, the routed choice for Chinese). The sub-agent is shown the first `shown`
    hits' own chunks, cut to `snippet_chars`, with the page each sits on — to read more, it reads the page.
    """

    def __init__(
        self,
        retriever: Any,
        chunks: Sequence[Document],
        pages: PageStore,
        *,
        reranker: Any = None,
        candidates: int = 20,
        top: int = 10,
        shown: int = 4,
        snippet_chars: int = 300,
        max_neighbours: int = 2,
        max_block_chars: int = 1200,
    ):
        self.retriever, self.pages, self.reranker = retriever, pages, reranker
        self.neighbours = ChunkNeighbours(chunks)
        self.candidates, self.top, self.shown, self.snippet_chars = candidates, top, shown, snippet_chars
        self.max_neighbours, self.max_block_chars = max_neighbours, max_block_chars

    def ranked_hits(self, query: str) -> list[Document]:
        """The best `top` hits (the chunks themselves), after expansion and the optional rerank of their blocks."""
        hits = list(self.retriever.invoke(query))[: self.candidates]
        blocks = expand_hits(hits, self.neighbours, self.max_neighbours, self.max_block_chars)[: self.top]
        if self.reranker is not None and blocks:
            blocks = list(self.reranker.compress_documents(blocks, query))
        by_position = {(h.metadata["source"], h.metadata["chunk_index"]): h for h in hits}
        return [by_position[(b.metadata["source"], b.metadata["hit_chunk_index"])] for b in blocks[: self.top]]

    def __call__(self, query: str) -> Observation:
        query = (query or "").strip()
        if not query:
            return _error_observation("search", "search('')", EMPTY_SEARCH)
        evidence = []
        for hit in self.ranked_hits(query)[: self.shown]:
            text = (
                hit.page_content
                if len(hit.page_content) <= self.snippet_chars
                else hit.page_content[: self.snippet_chars] + " […]"
            )
            evidence.append(
                Document(
                    text,
                    metadata={
                        "source": hit.metadata["source"],
                        "page": self.pages.locate(hit),
                        "title": hit.metadata.get("section_path", ""),
                        "kind": "chunk",
                        FULL_TEXT: hit.page_content,
                    },
                )
            )
        return Observation("search", f"search({query!r})", tuple(evidence))


RERANKERS = ("default", "llm", "none")


def search_reranker(name: str, llm: BaseChatModel | None = None, top_n: int = 10) -> Any:
    """The search tool's reranker by name. Introduced in notebook 07 (deep-research agent).

    - "default": `lessons.retrieval.rerank.default_reranker(top_n, llm)` — the relevance model (the cross-encoder)
      for English questions and the course's routed choice for Chinese ones;
    - "llm": the chat model's P(yes) blended with the first stage (notebook 02), kept as a measured
      comparison — `top_n` model calls per search;
    - "none": no reranker (the first stage's order).
    """
    if name in RERANKERS:
        from lessons.retrieval.rerank import reranker_by_name

        return reranker_by_name(name, top_n=top_n, llm=llm)
    raise ValueError(
        f"unknown reranker {name!r}: use one of {', '.join(map(repr, RERANKERS))} "
        "(the RERANKER parameter of notebook 07)"
    )


# ---------------------------------------------------------------- the sub-agent's typed decision


class ResearchDecision(BaseModel):
    """The next step of the research: search again, read a page, or answer."""

    # (Introduced in notebook 07. A schema's docstring is sent to the model; course notes go in
    # comments.) `reason` comes first: the model names the missing part before it picks the action.
    # Every field is required (empty or 0 when it does not apply): a small model skips optional ones.

    reason: str = Field(
        description="the part of the question the notes do not answer yet, in a few words; "
        "'nothing' if they answer every part"
    )
    action: Literal["search", "read_page", "answer"] = Field(
        description="search: look for the missing part; read_page: read the whole page of a promising result; "
        "answer: the notes answer every part of the question"
    )
    query: str = Field(
        description="for search: a few keywords for the missing part only, not the whole question; otherwise empty"
    )
    source_id: str = Field(
        description="for read_page: the source file name exactly as shown in the notes; otherwise empty"
    )
    page_index: int = Field(description="for read_page: the page number shown next to that source; otherwise 0")


# Without worked examples the 1.5B model searched for the whole question again at every step (probe,
# notebook 07); examples about this company's products were copied word for word into Chinese questions'
# queries, so the examples are about something else entirely.
DECIDE_PROMPT = """You research a question in a document collection, one step at a time. First find which part of
the question the notes below do not answer yet. Then choose the next step:
- search: look for that missing part with a short new query (keywords, not the whole question again);
- read_page: read the whole page a search result comes from, when a result looks promising but is cut off
  (give its source file and page number exactly as its source="…" label shows them);
- answer: when the notes answer every part of the question.

Two examples of good steps, from other documents (never copy their words):
- Question "Which cakes use honey, and who wrote their recipes?"; the notes name the cakes but no author
  → reason "authors of the honey cake recipes", action "search", query "honey cake recipe author".
- Question "How long does the lemon tart bake?"; a result shows the start of the tart recipe, cut off ("[…]")
  before the baking step → reason "baking time of the lemon tart", action "read_page", and the source_id and
  page_index from that result's source="…" label.
Use only sources and pages that appear in the notes below. <<DATA_RULE>>

Question: {question}

Notes so far:
{notes}

Searches done (do not repeat them): {searches}
Pages you can read: {readable}
{steps_left} step(s) left. Choose the next step.""".replace("<<DATA_RULE>>", DATA_RULE)

FORCED_ANSWER_REASON = N_("step cap reached: answer from the notes")
FULL_TEXT = "full_text"  # metadata key: the whole chunk behind a search snippet
REPEATED_SEARCH = N_("already searched (see the notes above): choose another query or page, or answer")
FIRST_SEARCH_REASON = N_("first step: search for the question itself")
ALREADY_READ = N_("already read (see the notes above): choose another page or query, or answer")
EMPTY_SEARCH = N_("search needs a query: write the words to look for")
# The tool's messages above are what the model reads (English); the trace and the notebook show them translated.
_CODE_REASONS = (FIRST_SEARCH_REASON, FORCED_ANSWER_REASON)  # reasons the code writes, not the model


def where(document: Document) -> str:
    """'source, page N' for a piece of evidence (page unknown: the source alone). Introduced in notebook 07 (deep-research agent)."""
    page = document.metadata.get("page")
    return str(document.metadata.get("source", "?")) + ("" if page is None else f", page {page}")


def render_notes(observations: Sequence[Observation], max_chars: int = 3500) -> str:
    """The scratchpad as the sub-agent reads it: every step, its evidence numbered [1], [2], … across steps.

    Introduced in notebook 07 (deep-research agent). Each piece of evidence is document text, so it is
    quoted as a delimited data block (`lessons.core.prompt_safety.as_data`: `<document number="1"
    source="guide.md, page 2">` … `</document>`; `DECIDE_PROMPT` carries `DATA_RULE`). Newest steps are
    shown in full; when the notes exceed `max_chars`, older steps keep only their header and sources
    (a small model's window is small).
    """
    blocks, number = [], 0
    for step, observation in enumerate(observations, 1):
        lines = [f"Step {step}: {observation.header}"]
        brief = [f"Step {step}: {observation.header}"]
        if observation.error:
            lines.append(f"  ERROR: {observation.error}")
            brief.append(f"  ERROR: {observation.error}")
        for document in observation.evidence:
            number += 1
            lines.append(as_data(_collapse(document.page_content), number=number, source=where(document)))
            brief.append(f"  [{number}] ({where(document)}) …")
        blocks.append(("\n".join(lines), "\n".join(brief)))
    shown = [full for full, _ in blocks]
    for i in range(len(blocks)):  # shorten from the oldest until the notes fit
        if sum(len(b) for b in shown) <= max_chars:
            break
        shown[i] = blocks[i][1]
    return "\n".join(shown) if shown else "(none yet)"


def all_evidence(observations: Sequence[Observation]) -> list[Document]:
    """Every piece of evidence the sub-agent was shown, in the order of the notes' numbers. Introduced in notebook 07 (deep-research agent)."""
    return [document for observation in observations for document in observation.evidence]


def decide_prompt(question: str, observations: Sequence[Observation], steps_left: int, notes_chars: int = 3500) -> str:
    """What the sub-agent reads before each decision: the question, its notes, the searches done, the pages it can read.

    Introduced in notebook 07 (deep-research agent).
    """
    searches = [
        o.header.removeprefix("search(").removesuffix(")") for o in observations if o.action == "search" and not o.error
    ]
    readable = dict.fromkeys(
        f"{d.metadata['source']} page {d.metadata['page']}"
        for d in all_evidence(observations)
        if d.metadata.get("kind") == "chunk" and d.metadata.get("page") is not None
    )
    return DECIDE_PROMPT.format(
        question=question,
        notes=render_notes(observations, notes_chars),
        searches=", ".join(searches) or "none",
        readable="; ".join(readable) or "none yet",
        steps_left=steps_left,
    )


def decide(
    model: BaseChatModel, question: str, observations: Sequence[Observation], steps_left: int, notes_chars: int = 3500
) -> ResearchDecision:
    """One forced structured decision of the sub-agent. Introduced in notebook 07 (deep-research agent)."""
    return invoke_structured(model, ResearchDecision, decide_prompt(question, observations, steps_left, notes_chars))


def whole_chunk(document: Document) -> Document:
    """The whole chunk behind a search snippet (the notes show the first `snippet_chars` characters only).

    Introduced in notebook 07 (deep-research agent). Other evidence is returned as it is.
    """
    full = document.metadata.get(FULL_TEXT)
    if full is None:
        return document
    return Document(full, metadata={k: v for k, v in document.metadata.items() if k != FULL_TEXT})


def answer_context(observations: Sequence[Observation], max_chars: int = 4000) -> list[Document]:
    """The evidence the final answer is written from: pages read first, then the whole chunks of the search
    results not inside a page already read, until `max_chars`. Introduced in notebook 07 (deep-research agent).

    The notes cut each search result short to keep the decision prompt small; the answer reads the whole
    chunk (the first full run answered table questions from 300-character snippets and missed the rows).
    """
    evidence = all_evidence(observations)
    pages = [d for d in evidence if d.metadata.get("kind") == "page"]
    read_text = " ".join(_collapse(p.page_content) for p in pages)
    chunks = [whole_chunk(d) for d in evidence if d.metadata.get("kind") != "page"]
    chunks = [d for d in chunks if _collapse(d.page_content).removesuffix(" […]") not in read_text]
    chosen, used = [], 0
    for document in _unique(pages + chunks):
        if used + len(document.page_content) > max_chars and chosen:
            continue
        chosen.append(document)
        used += len(document.page_content)
    return chosen


def _unique(documents: Sequence[Document]) -> list[Document]:
    seen, kept = set(), []
    for document in documents:
        key = (document.metadata.get("source"), document.metadata.get("page"), document.page_content)
        if key not in seen:
            seen.add(key)
            kept.append(document)
    return kept


# ---------------------------------------------------------------- the sub-agent as a graph


@dataclass(frozen=True)
class ResearchStep:
    """One row of the sub-agent's trace: the decision, the tool call and what it returned. Introduced in notebook 07 (deep-research agent)."""

    step: int
    action: str
    argument: str
    reason: str
    result: str
    seconds: float = 0.0  # the decision and the tool call (or the answer) together


@dataclass
class ResearchResult:
    """What the sub-agent hands back (`answer`, `citations`) and what only the notebook looks at (the rest). Introduced in notebook 07 (deep-research agent)."""

    question: str
    answer: str
    found: bool
    citations: list[Citation]
    outcome: str  # "answered", "answered at the cap", "not found" (marked with N_: show it with t_marked)
    at_cap: bool  # the step cap ended the research (the model did not choose to answer)
    tool_calls: int
    decisions: int  # decisions the model made (the first search and the forced answer are not asked)
    pages_read: list[tuple[str, int]]
    observations: list[Observation]
    trace: list[ResearchStep]
    context: list[Document]
    seconds: float = 0.0

    @property
    def evidence(self) -> list[Document]:
        """Everything the sub-agent was shown (what evidence recall is measured on)."""
        return all_evidence(self.observations)


class ResearchState(TypedDict, total=False):
    """The sub-agent's state (introduced in notebook 07); `tool_calls` is advanced by the tool steps only."""

    question: str
    decision: ResearchDecision
    searched: list[str]
    decision_seconds: float
    decisions: int
    tool_calls: int
    observations: list[Observation]
    trace: list[ResearchStep]
    draft: ResearchDraft
    context: list[Document]


def query_key(query: str) -> str:
    """A query as compared with earlier ones: without case, spaces and punctuation. Introduced in notebook 07 (deep-research agent)."""
    return re.sub(r"[\W_]+", "", query.lower())


def choose_query(decision: ResearchDecision, searched: Sequence[str]) -> str | None:
    """The query to run: the model's; if it is empty or repeats an earlier search, the missing part the model
    named (`reason`); None when both were searched already. Introduced in notebook 07 (deep-research agent).

    In the probe the 1.5B model often searched for the question again while its `reason` named the
    missing part well ("用户数", "release date of Atlas Guard"): the reason is the better query then.
    """
    done = {query_key(q) for q in searched}
    for candidate in (decision.query, decision.reason):
        key = query_key(candidate)
        if key and key not in done and key != "nothing":
            return candidate.strip()
    return None


def route_decision(decision: ResearchDecision) -> str:
    """The node a decision leads to. Introduced in notebook 07 (deep-research agent)."""
    return {"search": "search", "read_page": "read_page", "answer": "answer"}[decision.action]


def _summary(observation: Observation) -> str:
    """The trace's result column, for the reader (the model reads `render_notes`)."""
    if observation.error:
        return t("ERROR: ") + observation.error_for_reader
    shown = [
        t("{source}, page {page}", source=d.metadata.get("source", "?"), page=d.metadata["page"])
        if d.metadata.get("page") is not None
        else str(d.metadata.get("source", "?"))
        for d in observation.evidence
    ]
    return "; ".join(shown) or t("nothing found")


def build_research_graph(agent: DeepResearchAgent):
    """The sub-agent's compiled LangGraph graph, built from `agent`'s settings; invoke it with `{"question": ...}`.

    Introduced in notebook 07 (deep-research agent). `max_steps` counts tool calls, the first search
    included. The decide step asks the model only while tool calls remain; at the cap it answers. With
    `answerability` (`lessons.agents.answerability.AnswerabilityCheck`), the decision to stop and answer is
    checked: when the evidence gathered does not state what the question asks for, the agent says "not in the
    documents" without writing a draft.
    """
    model, search, pages, max_steps = agent.model, agent.search, agent.pages, agent.max_steps
    page_chars, notes_chars, answer_chars = agent.page_chars, agent.notes_chars, agent.answer_chars
    answerability = agent.answerability

    def decide_step(state: ResearchState) -> dict[str, Any]:
        calls, observations = state.get("tool_calls", 0), state.get("observations", [])
        if calls == 0:
            decision = ResearchDecision(
                reason=FIRST_SEARCH_REASON, action="search", query=state["question"], source_id="", page_index=0
            )
            return {
                "decision": decision,
                "decisions": 0,
                "tool_calls": 0,
                "observations": [],
                "trace": [],
                "searched": [],
                "decision_seconds": 0.0,
            }
        if calls >= max_steps:
            decision = ResearchDecision(
                reason=FORCED_ANSWER_REASON, action="answer", query="", source_id="", page_index=0
            )
            return {"decision": decision, "decision_seconds": 0.0}
        started = time.perf_counter()
        decision = decide(model, state["question"], observations, max_steps - calls, notes_chars)
        return {
            "decision": decision,
            "decisions": state.get("decisions", 0) + 1,
            "decision_seconds": time.perf_counter() - started,
        }

    def run_tool(state: ResearchState, observation_of: Callable[[ResearchDecision], Observation], argument: str):
        started = time.perf_counter()
        decision = state["decision"]
        observation = previously(state, decision) or observation_of(decision)
        calls = state.get("tool_calls", 0) + 1
        row = ResearchStep(
            calls,
            decision.action,
            argument,
            decision.reason,
            _summary(observation),
            state.get("decision_seconds", 0.0) + time.perf_counter() - started,
        )
        return {
            "tool_calls": calls,
            "observations": [*state.get("observations", []), observation],
            "trace": [*state.get("trace", []), row],
        }

    def search_step(state: ResearchState) -> dict[str, Any]:
        decision, searched = state["decision"], state.get("searched", [])
        query = choose_query(decision, searched)
        if query is None:
            update = run_tool(
                state,
                lambda d: _error_observation("search", f"search({d.query.strip()!r})", REPEATED_SEARCH),
                decision.query,
            )
            return {**update, "searched": searched}
        argument = (
            query
            if query == decision.query.strip()
            else t(
                "{query}  (its reason: the query {previous} was empty or done)",
                query=query,
                previous=repr(decision.query),
            )
        )
        return {**run_tool(state, lambda d: search(query), argument), "searched": [*searched, query]}

    def read_page_step(state: ResearchState) -> dict[str, Any]:
        decision = state["decision"]
        return run_tool(
            state,
            lambda d: read_page(pages, d.source_id, d.page_index, page_chars),
            t("{source}, page {page}", source=decision.source_id, page=decision.page_index),
        )

    def previously(state: ResearchState, decision: ResearchDecision) -> Observation | None:
        """A page read again is not run again: the agent is told to choose something else (searches: `choose_query`)."""
        for observation in state.get("observations", []):
            if (
                decision.action == "read_page"
                and observation.action == "read_page"
                and not observation.error
                and (observation.evidence[0].metadata["source"], observation.evidence[0].metadata["page"])
                == page_address(decision.source_id, decision.page_index)
            ):
                return _error_observation(decision.action, observation.header, ALREADY_READ)
        return None

    def answer_step(state: ResearchState) -> dict[str, Any]:
        started = time.perf_counter()
        context = answer_context(state.get("observations", []), answer_chars)
        verdict = answerability(state["question"], context) if answerability is not None and context else None
        if verdict is not None and not verdict.answerable:
            draft = ResearchDraft(answer="", cited_chunks=[], found="no")
        elif context:
            prompt = RESEARCH_PROMPT.format(
                question=state["question"], context=format_context(context, page_chars), feedback=""
            )
            draft = invoke_structured(model, ResearchDraft, prompt)
        else:
            draft = ResearchDraft(answer="", cited_chunks=[], found="no")
        decision = state["decision"]
        row = ResearchStep(
            state.get("tool_calls", 0) + 1,
            "answer",
            "",
            decision.reason,
            f"found={draft.found}: {draft.answer}"
            + (f" (answerability check: {verdict.reason})" if verdict is not None else ""),
            state.get("decision_seconds", 0.0) + time.perf_counter() - started,
        )
        return {"draft": draft, "context": context, "trace": [*state.get("trace", []), row]}

    return compile_graph(
        ResearchState,
        nodes={"decide": decide_step, "search": search_step, "read_page": read_page_step, "answer": answer_step},
        edges={
            START: "decide",
            "decide": (lambda s: route_decision(s["decision"]), ["search", "read_page", "answer"]),
            "search": "decide",
            "read_page": "decide",
            "answer": END,
        },
    )


def citations_from(cited: Sequence[int], context: Sequence[Document]) -> list[Citation]:
    """The pages behind the cited evidence numbers (1-based, of the answer's context); others are dropped. Introduced in notebook 07 (deep-research agent)."""
    citations: list[Citation] = []
    for number in cited:
        if 1 <= number <= len(context):
            citation = citation_of(context[number - 1], chunk=False)
            if citation not in citations:
                citations.append(citation)
    return citations


@dataclass(frozen=True, eq=False)
class DeepResearchAgent:
    """The knowledge sub-agent: `research(question)` → `ResearchResult`. Sees the standalone question only.

    Introduced in notebook 07 (deep-research agent). Its settings are declared here once and frozen;
    `build_research_graph` builds `graph` from them (`max_steps` counts tool calls, the first search included; `page_chars`, `notes_chars`
    and `answer_chars` bound a page read, the notes the model decides on and the answer's context).
    """

    model: BaseChatModel = field(repr=False)
    search: Callable[[str], Observation] = field(repr=False)
    pages: PageStore = field(repr=False)
    _: KW_ONLY
    max_steps: int = DEFAULT_MAX_STEPS
    page_chars: int = 1500
    notes_chars: int = 3500
    answer_chars: int = 4000
    answerability: AnswerabilityCheck | None = None
    graph: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        object.__setattr__(self, "graph", build_research_graph(self))  # frozen: the graph keeps these settings

    def research(self, question: str) -> ResearchResult:
        started = time.perf_counter()
        state = self.graph.invoke({"question": question}, config={"recursion_limit": 2 * self.max_steps + 10})
        draft, context = state["draft"], state.get("context", [])
        found = draft.found == "yes" and bool(draft.answer.strip())
        observations = list(state.get("observations", []))
        at_cap = state["decision"].reason == FORCED_ANSWER_REASON
        return ResearchResult(
            question=question,
            answer=draft.answer.strip() if found else not_in_documents_answer(question),
            found=found,
            citations=citations_from(draft.cited_chunks, context) if found else [],
            outcome=N_("not found") if not found else (N_("answered at the cap") if at_cap else N_("answered")),
            at_cap=at_cap,
            tool_calls=state.get("tool_calls", 0),
            decisions=state.get("decisions", 0),
            pages_read=[
                (o.evidence[0].metadata["source"], o.evidence[0].metadata["page"])
                for o in observations
                if o.action == "read_page" and o.evidence
            ],
            observations=observations,
            trace=list(state.get("trace", [])),
            context=list(context),
            seconds=time.perf_counter() - started,
        )


def last_decision_prompt(result: ResearchResult, max_steps: int, notes_chars: int = 3500) -> str | None:
    """The prompt of the model's last decision in `result`, rebuilt exactly; None when the model decided nothing.

    Introduced in notebook 07 (deep-research agent).
    """
    if result.decisions == 0:
        return None
    seen = result.observations[:-1] if result.at_cap else result.observations
    return decide_prompt(result.question, seen, max_steps - len(seen), notes_chars)


def trace_rows(result: ResearchResult, width: int = 120) -> list[dict[str, Any]]:
    """The sub-agent's trace as table rows (step, action, argument, reason, result, seconds). Introduced in notebook 07 (deep-research agent)."""
    return [
        {
            "step": s.step,
            "action": s.action,
            "argument": s.argument,
            "reason": (t_marked(s.reason) if s.reason in _CODE_REASONS else s.reason)[:width],
            "result": s.result[:width],
            "seconds": round(s.seconds, 1),
        }
        for s in result.trace
    ]


# ---------------------------------------------------------------- the main agent


class StandaloneQuestion(BaseModel):
    """The user's last message rewritten as a question that is clear without the conversation."""

    question: str = Field(
        description="the question, with every 'it', 'that', 'and in 2023?' replaced by what it refers to"
    )


class TurnDecision(BaseModel):
    """Whether the user's message needs the documents, or can be answered from the conversation alone."""

    needs_documents: Literal["yes", "no"] = Field(
        description="'yes' if the message asks for a fact about the company, its products, people, policies or figures; "
        "'no' for greetings, thanks, or a question about the conversation itself"
    )
    reply: str = Field(description="if needs_documents is 'no': your short reply to the user; otherwise empty")


STANDALONE_PROMPT = """Rewrite the user's last message as one standalone question that a person who has not seen the
conversation understands: replace every pronoun and reference ("it", "that plan", "and in 2023?", "what about
Lisbon?") with what it refers to in the conversation. Keep the user's language. Do not answer the question.

Conversation:
{history}

Last message: {turn}"""

TURN_PROMPT = """You are the assistant in a chat about the documents of the company Tidewell Analytics. You cannot
see the documents; a research colleague looks facts up in them for you. Decide whether the user's new message needs
the documents. Greetings, thanks, and questions about what was already said in this conversation do not.

Conversation:
{history}

New message: {turn}"""

History = Sequence[tuple[str, str]]


def format_history(history: History, max_chars: int = 2000) -> str:
    """'user: …' / 'assistant: …' lines, the most recent `max_chars` characters. Introduced in notebook 07 (deep-research agent)."""
    text = "\n".join(f"{role}: {_collapse(message)}" for role, message in history)
    return text if len(text) <= max_chars else "…" + text[-max_chars:]


def standalone_question(model: BaseChatModel, history: History, user_turn: str) -> str:
    """The user's turn as a standalone question; with no history the turn itself (no model call).

    Introduced in notebook 07 (deep-research agent). An empty rewrite falls back to the turn.
    """
    if not history:
        return user_turn
    prompt = STANDALONE_PROMPT.format(history=format_history(history), turn=user_turn)
    return invoke_structured(model, StandaloneQuestion, prompt).question.strip() or user_turn


def needs_documents(model: BaseChatModel, history: History, user_turn: str) -> TurnDecision:
    """The main agent's typed choice in the 'decide' mode: retrieve, or reply from the conversation. Introduced in notebook 07 (deep-research agent)."""
    prompt = TURN_PROMPT.format(history=format_history(history) or "(this is the first message)", turn=user_turn)
    return invoke_structured(model, TurnDecision, prompt)


@dataclass
class Turn:
    """One turn of the conversation as the notebook shows it. Introduced in notebook 07 (deep-research agent)."""

    user: str
    reply: str
    retrieved: bool
    standalone: str = ""
    research: ResearchResult | None = None
    seconds: float = 0.0


REPLY_WITH_SOURCES = N_("{answer}\nSources: {sources}")
SOURCE_PAGE = N_("{source}, page {page}")


def format_reply(result: ResearchResult) -> str:
    """The sub-agent's answer with its citations, as the main agent passes it on. Introduced in notebook 07 (deep-research agent).

    A reply with citations is a `ReaderText`: the English (`Sources: guide.md, page 2`, what `where` writes) goes into
    the main agent's history, which the model reads; `for_reader(reply)` is the reply in the reader's language."""
    if not result.citations:
        return result.answer
    sources = [
        ReaderText(SOURCE_PAGE, source=c.source, page=c.page) if c.page is not None else c.source
        for c in result.citations
    ]
    return ReaderText(REPLY_WITH_SOURCES, answer=result.answer, sources=ReaderText.joined("; ", sources))


@dataclass
class MainAgent:
    """The conversational agent: keeps the chat history, rewrites each turn, calls the sub-agent.

    Introduced in notebook 07 (deep-research agent). `mode="always"` retrieves on every turn;
    `mode="decide"` first asks the model whether the turn needs the documents at all. The main agent
    keeps only the replies in its history: the sub-agent's notes never enter its context.
    """

    model: BaseChatModel
    researcher: DeepResearchAgent
    mode: Literal["always", "decide"] = "always"
    history: list[tuple[str, str]] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)

    def ask(self, user_turn: str) -> Turn:
        started = time.perf_counter()
        if self.mode not in ("always", "decide"):
            raise ValueError(f"mode must be 'always' or 'decide', got {self.mode!r}")
        turn = None
        if self.mode == "decide":
            choice = needs_documents(self.model, self.history, user_turn)
            if choice.needs_documents == "no" and choice.reply.strip():
                turn = Turn(user_turn, choice.reply.strip(), retrieved=False)
        if turn is None:
            question = standalone_question(self.model, self.history, user_turn)
            result = self.researcher.research(question)
            turn = Turn(user_turn, format_reply(result), retrieved=True, standalone=question, research=result)
        turn.seconds = time.perf_counter() - started
        self.history += [("user", user_turn), ("assistant", turn.reply)]
        self.turns.append(turn)
        return turn
