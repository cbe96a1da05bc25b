"""What every chunker shares: the `Chunker` type, the bilingual separators, the default sizes,
and `number_chunks` (de-duplicated chunks with their position within their source and their context header).

Introduced in notebook 01 (chunking).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import PurePath

from langchain_core.documents import Document

from lessons.core.search_text import CONTEXT_HEADER
from lessons.ingest.files import dedupe

Chunker = Callable[[Sequence[Document]], list[Document]]
# Paragraphs, lines, then sentence and clause ends in both languages; the separator stays with the
# sentence it ends, so no chunk starts with "。" and no Chinese sentence is cut while a boundary exists.
BILINGUAL_SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", ", ", " ", ""]
DEFAULT_CHUNK_SIZE = 800
DEFAULT_CHUNK_OVERLAP = 100
CONTEXT_SEPARATOR = " > "


def context_header(metadata: dict) -> str:
    """ "<document> > <section path>" for a chunk's metadata (the document is the file name without suffix).

    Introduced in notebook 02 (retrieval tricks). Why: a changelog has dozens of chunks that start
    "### What's Changed" and never name their release, "## License\n\nApache 2.0" never names its package;
    the header, embedded and BM25-indexed with the chunk (`lessons.core.search_text.search_text`), tells them apart.
    """
    document = PurePath(str(metadata.get("source", ""))).stem
    section_path = str(metadata.get("section_path") or "")
    parts = [document] + [part for part in section_path.split(CONTEXT_SEPARATOR) if part]
    return CONTEXT_SEPARATOR.join(part for part in parts if part)


def number_chunks(chunks: Sequence[Document]) -> list[Document]:
    """De-duplicate, give each chunk its position within its source and its context header, drop what Chroma cannot store.

    The header (`context_header`) goes into `metadata["context_header"]`, not into the text: it is embedded and
    BM25-indexed with the chunk, while the chunk's text (what prompts quote, what `chunk_id` hashes) is unchanged.
    """
    kept, _ = dedupe(chunks)
    positions: dict[str, int] = defaultdict(int)
    numbered = []
    for chunk in kept:
        source = str(chunk.metadata.get("source", ""))
        metadata = {k: v for k, v in chunk.metadata.items() if isinstance(v, (str, int, float, bool))}
        metadata["chunk_index"] = positions[source]
        metadata[CONTEXT_HEADER] = context_header(metadata)
        positions[source] += 1
        numbered.append(Document(page_content=chunk.page_content, metadata=metadata))
    return numbered
