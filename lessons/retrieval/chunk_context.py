"""Retriever-side fixes for real READMEs: chunks that say where they are, and version numbers as words.

Introduced in notebook 06 (evaluation), where the second knowledge base (package READMEs) showed two
things the course's helpers get wrong on real documentation (`benchmarks/bench_packages_retrieval.py`):

- A chunk carries only its own heading in its text (`lessons.ingest.files.split_sections`), its parents and
  its document are in metadata only. A changelog has dozens of chunks that start "### What's Changed"
  or "#### Fixes" and never name their release; "## License\n\nApache 2.0" never names its package.
  Neither the embedder nor BM25 can tell them apart. `with_context_header` puts the document name and
  the section path in the text of each chunk (the evidence stays in it verbatim).
- `lessons.retrieval.retrievers.tokenize_bilingual` splits "v2.14.0" into "v2", "14", "0" and "2.14.0" into
  "2", "14", "0": a question about release 2.14.0 shares only "14" and "0" with its section, like
  every other 2.x.0 release. `tokenize_versions` adds each dotted version, without a leading "v",
  as one more token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath

from langchain_core.documents import Document

from lessons.retrieval.retrievers import tokenize_bilingual

CONTEXT_SEPARATOR = " > "
_VERSION = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+)(?![\w.]*\w)", re.IGNORECASE)


def context_header(metadata: dict) -> str:
    """ "<document> > <section path>" for a chunk's metadata (the document is the file name without suffix)."""
    document = PurePath(str(metadata.get("source", ""))).stem
    section_path = str(metadata.get("section_path") or "")
    parts = [document] + [part for part in section_path.split(CONTEXT_SEPARATOR) if part]
    return CONTEXT_SEPARATOR.join(part for part in parts if part)


def with_context_header(chunks: Sequence[Document]) -> list[Document]:
    """Copies of `chunks` whose text starts with their document and section path on a line of its own.

    The metadata is kept, with the header in `metadata["context_header"]`; renumber the result with
    `lessons.chunking.base.number_chunks` so each chunk id follows its new text, and index it in a
    collection of its own.
    """
    contextual = []
    for chunk in chunks:
        header = context_header(chunk.metadata)
        text = f"{header}\n\n{chunk.page_content}" if header else chunk.page_content
        contextual.append(Document(page_content=text, metadata={**chunk.metadata, "context_header": header}))
    return contextual


def tokenize_versions(text: str) -> list[str]:
    """`tokenize_bilingual`, plus every dotted version number as one token ("v2.14.0" and "2.14.0" → "2.14.0")."""
    return tokenize_bilingual(text) + [match.group(1) for match in _VERSION.finditer(text)]
