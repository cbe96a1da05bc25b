"""First-stage retrievers for the course knowledge base: dense, BM25, hybrid, small-to-big.

Introduced in notebook 02 (retrieval tricks). Every retriever here is a LangChain retriever (a
Runnable from question to ranked `Document`s). Returned documents are copies whose
`metadata["score"]` holds the score that ranked them (cosine similarity, BM25 score, fused RRF
score), so results from different techniques can be shown side by side; the chunks themselves are
never modified.

- `dense_retriever`: the baseline, nearest neighbours in the persistent Chroma index.
- `bm25_retriever`: LangChain's `BM25Retriever` with a tokenizer that also works for Chinese
  (whitespace splitting finds almost nothing there: a Chinese sentence has no spaces) and keeps version
  numbers whole; it indexes each chunk's `search_text` (its context header, then its text) and returns the chunk.
- `hybrid_retriever`: dense + BM25 fused by weighted reciprocal rank fusion (`EnsembleRetriever`).
- `small_to_big_retriever`: match small child pieces, return the chunk they came from
  (`ParentDocumentRetriever`).
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Callable, Sequence

from langchain_chroma import Chroma
from langchain_classic.retrievers import EnsembleRetriever, ParentDocumentRetriever
from langchain_community.retrievers import BM25Retriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import InMemoryStore
from langchain_text_splitters import RecursiveCharacterTextSplitter
from pydantic import ConfigDict

from lessons.chunking.base import BILINGUAL_SEPARATORS
from lessons.core.i18n import N_
from lessons.core.search_text import search_text
from lessons.core.vectorstore import index_documents, open_store
from lessons.text.cjk import CJK_IDEOGRAPHS
from lessons.text.normalise import fold_width

SCORE = "score"
ID_KEY = "chunk_id"
RRF_C = 60  # the constant of reciprocal rank fusion, as in EnsembleRetriever and the original paper

_CJK = CJK_IDEOGRAPHS
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")
_VERSION = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+)(?![\w.]*\w)", re.IGNORECASE)


def with_score(document: Document, score: float) -> Document:
    """A copy of `document` whose metadata carries `score` (the original is left untouched)."""
    return Document(
        page_content=document.page_content, metadata={**document.metadata, SCORE: float(score)}, id=document.id
    )


def tokenize_bilingual(text: str) -> list[str]:
    """Lower-cased words for alphabetic text, overlapping character pairs (bigrams) for Chinese, and versions whole.

    Every dotted version number is one more token, without a leading "v" ("v2.14.0" and "2.14.0" → "2.14.0"):
    split at its dots, a question about release 2.14.0 shares only "14" and "0" with its section, like every
    other 2.x.0 release (`benchmarks/bench_packages_retrieval.py` measures the difference).
    """
    text = fold_width(text)  # ２０２６ → 2026, ＡＰＩ → api: the normalisation quote matching uses
    return tokenize_words_bigrams(text) + [match.group(1) for match in _VERSION.finditer(text)]


def tokenize_words_bigrams(text: str) -> list[str]:
    """`tokenize_bilingual` without whole versions ("2.14.0" → "2", "14", "0"), kept for comparisons (notebook 06)."""
    tokens: list[str] = []
    for run in _TOKEN.findall(text.lower()):
        if _IS_CJK.match(run):
            tokens.extend([run[i : i + 2] for i in range(len(run) - 1)] or [run])
        else:
            tokens.append(run)
    return tokens


def tokenize_jieba(text: str) -> list[str]:
    """Words as segmented by jieba (a Chinese word segmenter), punctuation dropped, lower-cased."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return [token for token in jieba.lcut(text.lower()) if _TOKEN.search(token)]


def tokenize_whitespace(text: str) -> list[str]:
    """Split at spaces: LangChain's default for BM25, fine for English, useless for Chinese."""
    return text.lower().split()


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    N_("whitespace"): tokenize_whitespace,  # the names are marked: notebook 02 shows "BM25 · <name>" in Chinese too
    N_("jieba"): tokenize_jieba,
    N_("bigrams"): tokenize_bilingual,
}


class DenseRetriever(BaseRetriever):
    """Nearest chunks in a Chroma store by cosine similarity, each with its similarity as score."""

    store: Chroma
    k: int = 10
    where: dict | None = None  # a Chroma metadata filter (notebook 09): only chunks that meet it

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        options = {"filter": self.where} if self.where else {}
        hits = self.store.similarity_search_with_relevance_scores(query, k=self.k, **options)
        return [with_score(document, score) for document, score in hits]


def dense_retriever(store: Chroma, k: int = 10, where: dict | None = None) -> DenseRetriever:
    """The baseline: the `k` chunks nearest to the question in the vector store (with `where`, a Chroma metadata
    filter, among the chunks that meet it)."""
    return DenseRetriever(store=store, k=k, where=where)


class ScoredBM25Retriever(BM25Retriever):
    """LangChain's `BM25Retriever`, with each result's BM25 score in its metadata."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        scores = self.vectorizer.get_scores(self.preprocess_func(query))
        ranked = sorted(range(len(self.docs)), key=lambda i: scores[i], reverse=True)[: self.k]
        return [with_score(self.docs[i], scores[i]) for i in ranked]


def bm25_retriever(
    chunks: Sequence[Document], k: int = 10, tokenizer: Callable[[str], list[str]] = tokenize_bilingual
) -> ScoredBM25Retriever:
    """Keyword search (Okapi BM25) over `chunks`, tokenized with `tokenizer`.

    Each chunk is indexed by its `search_text` (its context header, if it has one, then its text); the retriever
    returns the chunks themselves, so a prompt quotes a chunk as it was.
    """
    chunks = list(chunks)
    retriever = ScoredBM25Retriever.from_texts(
        [search_text(chunk) for chunk in chunks], [chunk.metadata for chunk in chunks], preprocess_func=tokenizer, k=k
    )
    retriever.docs = chunks
    return retriever


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[Document]],
    weights: Sequence[float] | None = None,
    c: int = RRF_C,
    id_key: str | None = ID_KEY,
) -> list[Document]:
    """Fuse ranked lists: each document scores sum(weight / (c + rank)); returns documents, best first.

    Documents are identified by `metadata[id_key]` (by their text when `id_key` is None); ties keep
    the order of first appearance, exactly like LangChain's `EnsembleRetriever`.
    """
    weights = list(weights) if weights is not None else [1.0 / len(ranked_lists)] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise ValueError(f"got {len(weights)} weights for {len(ranked_lists)} ranked lists: give one weight per list")

    def key(document: Document) -> str:
        return document.page_content if id_key is None else str(document.metadata[id_key])

    scores: dict[str, float] = defaultdict(float)
    first_seen: dict[str, Document] = {}
    for ranked, weight in zip(ranked_lists, weights):
        for rank, document in enumerate(ranked, start=1):
            scores[key(document)] += weight / (c + rank)
            first_seen.setdefault(key(document), document)
    order = sorted(first_seen, key=lambda k: scores[k], reverse=True)
    return [with_score(first_seen[k], scores[k]) for k in order]


class ScoredEnsembleRetriever(EnsembleRetriever):
    """LangChain's `EnsembleRetriever` (weighted RRF) whose results carry their fused score; the best `k` (or all)."""

    k: int | None = None

    def weighted_reciprocal_rank(self, doc_lists: list[list[Document]]) -> list[Document]:
        return reciprocal_rank_fusion(doc_lists, self.weights, self.c, self.id_key)[: self.k]


def hybrid_retriever(
    dense: BaseRetriever,
    keyword: BaseRetriever,
    weights: tuple[float, float] = (0.5, 0.5),
    c: int = RRF_C,
    k: int | None = None,
) -> ScoredEnsembleRetriever:
    """Dense and keyword results fused by weighted reciprocal rank fusion; the best `k` (default: all)."""
    return ScoredEnsembleRetriever(retrievers=[dense, keyword], weights=list(weights), c=c, id_key=ID_KEY, k=k)


def child_chunks(chunks: Sequence[Document], child_size: int = 200, child_overlap: int = 0) -> list[Document]:
    """Split every chunk into small children that remember their parent's `chunk_id` as `parent_id`."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=child_size, chunk_overlap=child_overlap, separators=BILINGUAL_SEPARATORS, keep_separator="end"
    )
    children = []
    for chunk in chunks:
        for number, piece in enumerate(splitter.split_text(chunk.page_content)):
            metadata = {**chunk.metadata, "parent_id": chunk.metadata[ID_KEY], "child_index": number}
            children.append(Document(page_content=piece, metadata=metadata))
    return children


def small_to_big_retriever(
    chunks: Sequence[Document], children: int = 40, child_size: int = 200, store: Chroma | None = None
) -> ParentDocumentRetriever:
    """Search the `children` nearest small pieces, return the chunks they came from, in order of their best piece.

    The children get their own persistent collection (embedded once, through the disk cache of
    `cached_embeddings()`, which also keeps each question's vector); the parents are the very chunks
    the baseline returns, so the two compare at equal context size.
    """
    if store is None:
        from lessons.chunking.strategies import cached_embeddings

        store = open_store(f"nb02-children-{child_size}", cached_embeddings())
    index_documents(store, child_chunks(chunks, child_size), prune=True)
    docstore = InMemoryStore()
    docstore.mset([(chunk.metadata[ID_KEY], chunk) for chunk in chunks])
    splitter = RecursiveCharacterTextSplitter(chunk_size=child_size, chunk_overlap=0, separators=BILINGUAL_SEPARATORS)
    return ParentDocumentRetriever(
        vectorstore=store, docstore=docstore, child_splitter=splitter, id_key="parent_id", search_kwargs={"k": children}
    )
