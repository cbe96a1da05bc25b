"""What every chunker shares: the `Chunker` type, the bilingual separators, the default sizes,
and `number_chunks` (de-duplicated chunks with their position within their source).

Introduced in notebook 01 (chunking); lived in the knowledge-base module (now `lessons.retrieval.index`) before issue 20.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from langchain_core.documents import Document

from lessons.ingest.files import dedupe

Chunker = Callable[[Sequence[Document]], list[Document]]
# Paragraphs, lines, then sentence and clause ends in both languages; the separator stays with the
# sentence it ends, so no chunk starts with "。" and no Chinese sentence is cut while a boundary exists.
BILINGUAL_SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", ", ", " ", ""]
DEFAULT_CHUNK_SIZE = 800
DEFAULT_CHUNK_OVERLAP = 100


def number_chunks(chunks: Sequence[Document]) -> list[Document]:
    """De-duplicate, give each chunk its position within its source, and drop metadata Chroma cannot store."""
    kept, _ = dedupe(chunks)
    positions: dict[str, int] = defaultdict(int)
    numbered = []
    for chunk in kept:
        source = str(chunk.metadata.get("source", ""))
        metadata = {k: v for k, v in chunk.metadata.items() if isinstance(v, (str, int, float, bool))}
        metadata["chunk_index"] = positions[source]
        positions[source] += 1
        numbered.append(Document(page_content=chunk.page_content, metadata=metadata))
    return numbered
