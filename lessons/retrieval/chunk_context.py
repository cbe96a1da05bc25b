"""Retriever-side fixes for real READMEs: chunks that say where they are, and version numbers as words.

Found with notebook 06's second knowledge base (package READMEs), which showed two
things the course's helpers got wrong on real documentation (`benchmarks/bench_packages_retrieval.py`):

- A chunk carried only its own heading in its text (`lessons.ingest.files.split_sections`), its parents and
  its document in metadata only. A changelog has dozens of chunks that start "### What's Changed"
  or "#### Fixes" and never name their release; "## License\n\nApache 2.0" never names its package.
  Neither the embedder nor BM25 could tell them apart.
- `lessons.retrieval.retrievers.tokenize_bilingual` split "v2.14.0" into "v2", "14", "0" and "2.14.0" into
  "2", "14", "0": a question about release 2.14.0 shared only "14" and "0" with its section, like
  every other 2.x.0 release.

Both fixes are the course's default path: `lessons.chunking.base.number_chunks` gives every chunk
its `context_header` ("<document> > <section path>") in metadata, `lessons.core.vectorstore.index_documents`
embeds and `lessons.retrieval.retrievers.bm25_retriever` indexes `lessons.core.search_text.search_text(chunk)`
(the header, then the chunk), while the chunk's text — what prompts quote — is unchanged; `tokenize_bilingual`
keeps every dotted version as one more token (`tokenize_words_bigrams` is the tokenizer as it was). This module
keeps the chunks as they were, for comparisons: `without_context_header`.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from lessons.core.search_text import CONTEXT_HEADER


def without_context_header(chunks: Sequence[Document]) -> list[Document]:
    """Copies of `chunks` without `metadata["context_header"]`: embedded and BM25-indexed by their text alone.

    The path without the fix, for comparisons; index them in a collection of their own (their Chroma ids differ from the chunks').
    """
    return [
        Document(
            page_content=chunk.page_content, metadata={k: v for k, v in chunk.metadata.items() if k != CONTEXT_HEADER}
        )
        for chunk in chunks
    ]
