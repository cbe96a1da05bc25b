"""The course knowledge base as chunks and as a persistent Chroma index, shared by notebooks 01–07.

Introduced in notebook 01 (chunking). The pipeline: Docling conversion (cached) → one Document per
page or file → Markdown sections → a chunking strategy → numbered, de-duplicated chunks → Chroma.
Every chunk carries: source, page, format, language, section_path, section, chunk_id (content
hash), chunk_index (its position within its source, for neighbour expansion).

Two knowledge bases ship with the course (`lessons.corpus.CORPORA`): "course" (the Tidewell
documents, index "kb") and "packages" (real READMEs, notebook 06, index "kb-packages"):
`load_knowledge_base("packages")` gives its chunks and its own Chroma collection.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_text_splitters import RecursiveCharacterTextSplitter

from lessons.corpus import CORPUS_DIR, corpus_folder, load_corpus
from lessons.ingest import IngestLimits, dedupe, split_sections, to_documents
from lessons.vectorstore import index_documents, open_store

Chunker = Callable[[Sequence[Document]], list[Document]]

# Paragraphs, lines, then sentence and clause ends in both languages; the separator stays with the
# sentence it ends, so no chunk starts with "。" and no Chinese sentence is cut while a boundary exists.
BILINGUAL_SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", ". ", "! ", "? ", "; ", "，", ", ", " ", ""]
DEFAULT_CHUNK_SIZE = 800
DEFAULT_CHUNK_OVERLAP = 100
DEFAULT_LIMITS = IngestLimits()  # lessons.ingest's per-file and total size limits


def default_chunker(chunk_size: int = DEFAULT_CHUNK_SIZE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> Chunker:
    """Sections first, then recursive splitting with bilingual separators: the course's baseline.

    A piece cut from a long table starts with the table's header row (`markdown_blocks.repeat_table_headers`).
    """
    from lessons.markdown_blocks import repeat_table_headers  # markdown_blocks imports this module

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=BILINGUAL_SEPARATORS, keep_separator="end"
    )

    def split_documents(documents: Sequence[Document]) -> list[Document]:
        return [Document(page_content=piece, metadata=dict(document.metadata))
                for document in documents
                for piece in repeat_table_headers(splitter.split_text(document.page_content))]  # fmt: skip

    return split_documents


def load_documents(folder=CORPUS_DIR, limits: IngestLimits = DEFAULT_LIMITS) -> list[Document]:
    """The knowledge base before any splitting: one Document per page (PDF, PPTX) or per file.

    Introduced in notebook 01 (chunking). `limits` are the size limits of `lessons.ingest.IngestLimits`
    (the ones a `FileTooLarge` message suggests).
    """
    return to_documents(load_corpus(folder, limits=limits).documents)


def load_sections(folder=CORPUS_DIR, limits: IngestLimits = DEFAULT_LIMITS) -> list[Document]:
    """The knowledge base split at its Markdown headings (one Document per section and page)."""
    return split_sections(load_documents(folder, limits))


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


def chunk_knowledge_base(
    chunker: Chunker | None = None, folder=CORPUS_DIR, limits: IngestLimits = DEFAULT_LIMITS
) -> list[Document]:
    """Every chunk of the knowledge base under `chunker` (default: sections + bilingual recursive).

    `limits` raise or lower the per-file and total size limits (`lessons.ingest.IngestLimits`).
    """
    return chunk_converted(load_corpus(folder, limits=limits).documents, chunker)


def chunk_converted(converted, chunker: Chunker | None = None) -> list[Document]:
    """The numbered chunks of converted files (`lessons.ingest.ConvertedDocument`s) under `chunker`.

    Introduced in notebook 06 (evaluation): the evaluation command chunks the files of a folder that did
    convert, after listing the ones that did not.
    """
    return number_chunks((chunker or default_chunker())(split_sections(to_documents(converted))))


def build_index(chunks: Sequence[Document], name: str = "kb", embeddings: Embeddings | None = None):
    """The persistent Chroma collection `name` holding exactly `chunks` (only new ones are embedded).

    `embeddings` defaults to the course embedder; pass `lessons.chunking.cached_embeddings()` to reuse
    the vectors of texts that another collection already embedded.
    """
    store = open_store(name, embeddings)
    index_documents(store, list(chunks), prune=True)
    return store


# The Chroma collection of each knowledge base that ships with the course.
INDEX_NAMES = {"course": "kb", "packages": "kb-packages"}


def load_knowledge_base(corpus: str = "course", embeddings: Embeddings | None = None) -> tuple[list[Document], object]:
    """(chunks, Chroma store) of a knowledge base that ships with the course, each in its own collection.

    Introduced in notebook 06 (evaluation), to measure every pipeline on both corpora. `corpus` is
    "course" or "packages"; the chunks are the course's baseline (`chunk_knowledge_base()`). For another
    chunker use `chunk_knowledge_base(chunker, folder=corpus_folder(corpus))` and `build_index` with a
    collection name of its own.
    """
    chunks = chunk_knowledge_base(folder=corpus_folder(corpus))
    return chunks, build_index(chunks, name=INDEX_NAMES[corpus], embeddings=embeddings)
