"""The text a retriever searches for a chunk: its context header, then the chunk.

Introduced in notebook 02 (retrieval tricks). `lessons.chunking.base.number_chunks` gives every chunk
`metadata["context_header"]`, "<document> > <section path>"; the vector store embeds and BM25 indexes
`search_text(chunk)`, while the chunk keeps its own text — what retrievers return and prompts quote — so the
header costs no prompt token. A module of its own so that chunkers can name the key without importing Chroma.
"""

from __future__ import annotations

from langchain_core.documents import Document

CONTEXT_HEADER = "context_header"  # metadata key: "<document> > <section path>", embedded and BM25-indexed


def search_text(document: Document, text: str | None = None) -> str:
    """The text that is embedded and BM25-indexed for `document`: its context header (if any), a blank line, its text.

    `text` replaces the document's own text under the same header (a cross-encoder reading a chunk with its
    neighbours, `lessons.retrieval.rerank.NeighbourContextReranker`)."""
    text = document.page_content if text is None else text
    header = str(document.metadata.get(CONTEXT_HEADER) or "")
    return f"{header}\n\n{text}" if header else text
