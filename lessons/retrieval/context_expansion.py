"""Context expansion with contextual rerank: widen each hit with its neighbouring chunks, judge the block.

Introduced in notebook 02 (retrieval tricks). Chunking cuts context: a chunk that opens with "the
two are complementary" cannot be judged on its own. After retrieving and reranking, each hit is
expanded with the chunks next to it in its document (chunks carry `source` and `chunk_index`),
more for better-ranked hits (10 neighbours for rank 1 down to 1 for rank 10), nearest first and
alternately before and after. A chunk belongs to the first block that claims it, so blocks never
repeat text. The blocks are then reranked as whole passages.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from lessons.retrieval.retrievers import SCORE

MAX_NEIGHBOURS = 10
MAX_BLOCK_CHARS = 1500
MIN_OVERLAP = 10  # shorter repeats between neighbours are coincidence, not chunk overlap


def neighbour_budget(rank: int, top: int = MAX_NEIGHBOURS) -> int:
    """How many neighbours the hit at `rank` (1-based) may bring: `top` for rank 1, down to 1."""
    return max(1, top + 1 - rank)


def join_chunks(texts: Sequence[str]) -> str:
    """Concatenate consecutive chunks, dropping the text a chunk repeats from the previous one (overlap)."""
    joined = ""
    for text in texts:
        overlap = next(
            (size for size in range(min(len(joined), len(text)), MIN_OVERLAP - 1, -1) if joined.endswith(text[:size])),
            0,
        )
        joined = f"{joined}\n{text[overlap:]}" if joined and not overlap else joined + text[overlap:]
    return joined


class ChunkNeighbours:
    """Look up chunks by (source, chunk_index) to walk to a hit's neighbours in document order."""

    def __init__(self, chunks: Sequence[Document]):
        self._by_position = {(c.metadata["source"], c.metadata["chunk_index"]): c for c in chunks}

    def get(self, source: str, index: int) -> Document | None:
        """The chunk at `index` in `source`, or None past either end."""
        return self._by_position.get((source, index))

    def around(self, hit: Document, budget: int, max_chars: int, taken: set[tuple[str, int]]) -> list[int]:
        """Chunk indexes of the block around `hit`: nearest neighbours first, before then after.

        Stops at `budget` neighbours, at `max_chars` of text, at a document's ends, and at chunks
        already in `taken` (another block has them).
        """
        source, centre = hit.metadata["source"], hit.metadata["chunk_index"]
        indexes, chars = [centre], len(hit.page_content)
        open_sides = {-1: True, 1: True}
        distance = 1
        while len(indexes) - 1 < budget and any(open_sides.values()):
            for side in (-1, 1):
                if not open_sides[side] or len(indexes) - 1 >= budget:
                    continue
                index = centre + side * distance
                neighbour = self.get(source, index)
                if neighbour is None or (source, index) in taken or chars + len(neighbour.page_content) > max_chars:
                    open_sides[side] = False
                    continue
                indexes.append(index)
                chars += len(neighbour.page_content)
            distance += 1
        return sorted(indexes)

    def block(self, source: str, indexes: Sequence[int], hit: Document, rank: int) -> Document:
        """One Document holding the chunks `indexes` of `source`, joined in document order."""
        texts = [self._by_position[(source, i)].page_content for i in indexes]
        metadata = {k: v for k, v in hit.metadata.items() if k != SCORE}
        metadata.update(hit_rank=rank, hit_chunk_index=hit.metadata["chunk_index"],
                        chunk_indexes=",".join(map(str, indexes)), neighbours=len(indexes) - 1)  # fmt: skip
        return Document(page_content=join_chunks(texts), metadata=metadata)


def expand_hits(
    hits: Sequence[Document],
    neighbours: ChunkNeighbours,
    max_neighbours: int = MAX_NEIGHBOURS,
    max_chars: int = MAX_BLOCK_CHARS,
    budget: int | None = None,
) -> list[Document]:
    """One block per hit, in rank order; a hit already inside a better-ranked block adds nothing.

    With `budget` (characters), the blocks together show at most that many: a block is capped at what is left (and
    at `max_chars`), and a hit longer than what is left is skipped for the next one.
    """
    if budget is not None and budget < 0:
        raise ValueError(f"budget must be 0 or more characters, got {budget}")
    taken: set[tuple[str, int]] = set()
    blocks: list[Document] = []
    left = math.inf if budget is None else budget
    for rank, hit in enumerate(hits, start=1):
        source, index = hit.metadata["source"], hit.metadata["chunk_index"]
        if (source, index) in taken or len(hit.page_content) > left:
            continue
        cap = max_chars if budget is None else min(max_chars, int(left))
        indexes = neighbours.around(hit, neighbour_budget(rank, max_neighbours), cap, taken)
        block = neighbours.block(source, indexes, hit, rank)
        while len(block.page_content) > left:  # the line breaks joining chunks without overlap: drop the farthest
            indexes.remove(max(indexes, key=lambda i: (abs(i - index), i)))
            block = neighbours.block(source, indexes, hit, rank)
        taken.update((source, i) for i in indexes)
        blocks.append(block)
        left -= len(block.page_content)
    return blocks


class ContextExpansionRetriever(BaseRetriever):
    """Retrieve candidates, rerank them, expand the best hits with neighbours, rerank the blocks.

    Without `reranker` the first stage's order picks the hits; without `block_reranker` the blocks
    keep the hits' order.
    """

    first_stage: BaseRetriever
    neighbours: ChunkNeighbours
    reranker: BaseDocumentCompressor | None = None
    block_reranker: BaseDocumentCompressor | None = None
    hits: int = 10
    max_neighbours: int = MAX_NEIGHBOURS
    max_block_chars: int = MAX_BLOCK_CHARS

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        candidates = self.first_stage.invoke(query, config={"callbacks": run_manager.get_child()})
        if self.reranker is not None:
            candidates = self.reranker.compress_documents(candidates, query, callbacks=run_manager.get_child())
        blocks = expand_hits(candidates[: self.hits], self.neighbours, self.max_neighbours, self.max_block_chars)
        if self.block_reranker is not None and blocks:
            blocks = list(self.block_reranker.compress_documents(blocks, query, callbacks=run_manager.get_child()))
        return blocks
