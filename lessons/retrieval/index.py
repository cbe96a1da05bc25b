"""The course knowledge base as chunks and as a persistent Chroma index, shared by notebooks 01–07.

Introduced in notebook 01 (chunking). The pipeline: Docling conversion (cached) → one Document per
page or file → Markdown sections → a chunking strategy → numbered, de-duplicated chunks → Chroma.
Every chunk carries: source, page, format, language, section_path, section, chunk_id (content
hash of its text), chunk_index (its position within its source, for neighbour expansion), context_header
("<document> > <section path>"): the index embeds and BM25 indexes the header with the chunk
(`lessons.core.search_text`), while the chunk's text, which prompts quote, stays as it was.

Two knowledge bases ship with the course (`lessons.ingest.corpus.CORPORA`): "course" (the Tidewell
documents, index "kb") and "packages" (real READMEs, notebook 06, index "kb-packages"):
`load_knowledge_base("packages")` gives its chunks and its own Chroma collection.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from lessons.chunking.base import Chunker, number_chunks
from lessons.chunking.strategies import default_chunker
from lessons.core.vectorstore import index_documents, open_store
from lessons.ingest.corpus import CORPUS_DIR, DEFAULT_LIMITS, corpus_folder, load_corpus
from lessons.ingest.files import IngestLimits, split_sections, to_documents


def chunk_knowledge_base(
    chunker: Chunker | None = None, folder=CORPUS_DIR, limits: IngestLimits = DEFAULT_LIMITS
) -> list[Document]:
    """Every chunk of the knowledge base under `chunker` (default: sections + bilingual recursive).

    `limits` raise or lower the per-file and total size limits (`lessons.ingest.files.IngestLimits`).
    """
    return chunk_converted(load_corpus(folder, limits=limits).documents, chunker)


def chunk_converted(converted, chunker: Chunker | None = None) -> list[Document]:
    """The numbered chunks of converted files (`lessons.ingest.files.ConvertedDocument`s) under `chunker`.

    Introduced in notebook 06 (evaluation): the evaluation command chunks the files of a folder that did
    convert, after listing the ones that did not.
    """
    return number_chunks((chunker or default_chunker())(split_sections(to_documents(converted))))


def build_index(chunks: Sequence[Document], name: str = "kb", embeddings: Embeddings | None = None):
    """The persistent Chroma collection `name` holding exactly `chunks` (only new ones are embedded).

    `embeddings` defaults to the course embedder behind the disk cache of passage vectors
    (`lessons.chunking.cached_embeddings()`): the vectors of texts another collection already embedded are reused,
    and what this index embeds is there for the next one (notebook 09's router reads every chunk of both knowledge
    bases again).
    """
    if embeddings is None:
        from lessons.chunking.strategies import cached_embeddings

        embeddings = cached_embeddings()
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
