"""Graph RAG at laptop scale: entities and relations extracted from the chunks, retrieval that follows them.

Introduced in notebook 09 (routing, metadata filters, a semantic cache — and a graph over the knowledge base).

- **Extraction**: one structured call per chunk (`invoke_structured`, schema `chunk_graph_schema`): at most
  `max_entities` named things and `max_relations` (source, relation, target) triples, bounded by the schema so the
  local server's grammar stops the model there. Answers go through the course's LLM cache like every chat-model call,
  so a re-run costs nothing. `max_chunks` bounds how many chunks are read at all: extraction is the expensive part
  (one call per chunk, several seconds each on a 2-core laptop).
- **Names**: normalised by code (`entity_key`: width, case, whitespace, quotes, a leading "the", the space between
  Chinese and Latin text), and "X (Y)" / "X（Y）" — how the corpus writes an English name beside its Chinese one —
  makes X and Y one entity.
- **Graph**: a plain dict adjacency (`EntityGraph`): entity → chunks that mention it, entity → related entities.
  networkx is not a dependency of the course; adding one needs the lock updated and a fresh-machine install test,
  and a neighbourhood lookup over a few hundred chunks needs nothing more than dicts.
- **Retrieval** (`GraphExpansionRetriever`): the first stage's top hits are the seeds; the chunks that share an
  entity with them (or mention an entity a relation links to one of theirs, at half weight) are ranked by how
  many and how rare the shared entities are (an entity most chunks mention links nothing), and that list is fused
  with the first stage's by reciprocal rank fusion.
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from pydantic import BaseModel, ConfigDict, Field, create_model

from lessons.core.structured import StructuredOutputError, invoke_structured
from lessons.retrieval.retrievers import ID_KEY, reciprocal_rank_fusion

MAX_ENTITIES = 5
MAX_RELATIONS = 3
MAX_CHUNK_CHARS = 1200  # the text of a chunk the model reads
MAX_SHARE = 0.2  # an entity in more than this share of the graph's chunks is a hub: it links nothing
RELATION_WEIGHT = 0.5  # a chunk reached through a relation counts half as much as one sharing the entity
GRAPH = "graph_entities"  # metadata: the shared entities that brought a chunk in


class Relation(BaseModel):
    """One fact of the passage: how two named things relate."""

    source: str = Field(description="a named thing of the passage")
    relation: str = Field(description="how they relate, in two to four words")
    target: str = Field(description="another named thing of the passage")


@lru_cache(maxsize=8)
def chunk_graph_schema(max_entities: int = MAX_ENTITIES, max_relations: int = MAX_RELATIONS) -> type[BaseModel]:
    """The typed answer of one extraction call: at most `max_entities` names and `max_relations` relations."""
    return create_model(
        "ChunkGraph",
        __doc__="The named things a passage is about and how they relate.",
        entities=(
            list[str],
            Field(
                max_length=max_entities,
                description="names of products, components, features, settings, people, teams, documents or "
                "organisations, as the passage writes them",
            ),
        ),
        relations=(list[Relation], Field(max_length=max_relations, description="how those named things relate")),
    )


EXTRACTION_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            (
                "You read one passage of a document and list the named things it is about (products, components, "
                "features, settings, people, teams, documents, organisations) and how they relate. Copy each name as "
                "the passage writes it, in the passage's language. At most {max_entities} names and {max_relations} "
                "relations; fewer when the passage names fewer."
            ),
        ),
        ("human", "Section: {section}\n\n{text}"),
    ]
)

_QUOTES = "\"'`“”‘’「」『』《》*"
_PAREN = re.compile(r"^(?P<main>.+?)\s*[(（](?P<alias>[^()（）]+)[)）]\s*$")
_CJK_LATIN = re.compile(r"(?<=[\u3400-\u9fff])\s+(?=[0-9A-Za-z])|(?<=[0-9A-Za-z])\s+(?=[\u3400-\u9fff])")


def entity_key(name: str) -> str:
    """The form two mentions of one entity share: NFKC width, case folded, whitespace collapsed, quotes and a
    leading "the" dropped, no space between Chinese and Latin text ("Atlas 服务器" = "Atlas服务器"); "" for a
    name with no letter or digit (it names nothing)."""
    key = " ".join(unicodedata.normalize("NFKC", name).casefold().split()).strip(_QUOTES + " .,;:!?。，；：")
    key = re.sub(r"^the\s+", "", key)
    key = _CJK_LATIN.sub("", key)
    return key if any(ch.isalnum() for ch in key) else ""


def entity_forms(name: str) -> list[str]:
    """The keys of a name: "Atlas Guard (守护模块)" and "守护模块（Atlas Guard）" give both forms; others one."""
    folded = unicodedata.normalize("NFKC", name).strip()
    found = _PAREN.match(folded)
    forms = [found["main"], found["alias"]] if found else [folded]
    return [key for key in dict.fromkeys(entity_key(form) for form in forms) if key]


@dataclass
class Extraction:
    """What the extraction read and what it cost: per chunk id, its entities and relations."""

    entities: dict[str, list[str]] = field(default_factory=dict)
    relations: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # chunk id → why no answer could be used
    skipped: int = 0  # chunks past `max_chunks`, not read
    seconds: float = 0.0

    @property
    def chunks(self) -> int:
        return len(self.entities)


def chunk_key(chunk: Document) -> str:
    """A chunk's id in the graph: its `chunk_id` metadata (every knowledge-base chunk has one)."""
    return str(chunk.metadata[ID_KEY])


def extraction_order(
    hit_lists: Sequence[tuple[str, Sequence[Document]]], depth: int
) -> list[tuple[str, int, Document]]:
    """(tag, rank, chunk) in the order a bounded extraction reads them: every list's rank-1 hit, then every rank-2
    hit, … down to `depth`, each (tag, chunk) once — stopped at any point, what was read is the union of the top r
    hits plus part of rank r+1. `hit_lists`: (tag, ranked hits), e.g. (corpus, the first stage's hits of one question).
    """
    order, seen = [], set()
    for rank in range(depth):
        for tag, hits in hit_lists:
            if rank < len(hits) and (tag, chunk_key(hits[rank])) not in seen:
                seen.add((tag, chunk_key(hits[rank])))
                order.append((tag, rank + 1, hits[rank]))
    return order


def extract_graph(
    model: BaseChatModel,
    chunks: Sequence[Document],
    *,
    max_chunks: int | None = None,
    max_entities: int = MAX_ENTITIES,
    max_relations: int = MAX_RELATIONS,
    max_chars: int = MAX_CHUNK_CHARS,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> Extraction:
    """One structured call per chunk (the first `max_chunks`), cached by the LLM cache. A chunk whose answer cannot
    be parsed gets no entities and is listed in `failures` with the reason (the graph is built from the rest)."""
    schema = chunk_graph_schema(max_entities, max_relations)
    chosen = list(chunks if max_chunks is None else chunks[:max_chunks])
    result = Extraction(skipped=len(chunks) - len(chosen))
    start = time.perf_counter()
    for chunk in progress(chosen) if progress else chosen:
        key = chunk_key(chunk)
        prompt = EXTRACTION_PROMPT.invoke(
            {
                "max_entities": max_entities,
                "max_relations": max_relations,
                "section": chunk.metadata.get("section", ""),
                "text": chunk.page_content[:max_chars],
            }
        )
        try:
            answer = invoke_structured(model, schema, prompt)
        except StructuredOutputError as error:
            result.entities[key], result.relations[key], result.failures[key] = [], [], str(error)
            continue
        result.entities[key] = list(answer.entities)
        result.relations[key] = [(r.source, r.relation, r.target) for r in answer.relations]
    result.seconds = time.perf_counter() - start
    return result


class _Aliases:
    """Union-find over entity keys: "X (Y)" makes X and Y one entity, named by the first key seen."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, keys: Sequence[str]) -> None:
        roots = [self.find(key) for key in keys]
        for root in roots[1:]:
            if root != roots[0]:
                self.parent[root] = roots[0]


@dataclass
class EntityGraph:
    """Entities and chunks as dict adjacency: `chunk_entities`, `entity_chunks`, `related` (entity → entities a
    relation links it to, with the relations' words), `names` (entity → the first name it was written with)."""

    chunk_entities: dict[str, set[str]] = field(default_factory=dict)
    entity_chunks: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    related: dict[str, dict[str, set[str]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(set)))
    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_extraction(cls, extraction: Extraction) -> EntityGraph:
        """The graph of an extraction: every name and both ends of every relation are entities of their chunk."""
        aliases = _Aliases()
        mentions: dict[str, list[str]] = {}
        for key in extraction.entities:
            names = [*extraction.entities[key], *(n for s, _, o in extraction.relations.get(key, []) for n in (s, o))]
            for name in names:
                forms = entity_forms(name)
                if forms:
                    aliases.union(forms)
            mentions[key] = names
        graph = cls()
        for key, names in mentions.items():
            graph.chunk_entities[key] = set()
            for name in names:
                forms = entity_forms(name)
                if not forms:
                    continue
                entity = aliases.find(forms[0])
                graph.names.setdefault(entity, name)
                graph.chunk_entities[key].add(entity)
                graph.entity_chunks[entity].add(key)
            for source, relation, target in extraction.relations.get(key, []):
                ends = [entity_forms(source), entity_forms(target)]
                if all(ends):
                    a, b = (aliases.find(forms[0]) for forms in ends)
                    if a != b:
                        graph.related[a][b].add(relation)
                        graph.related[b][a].add(relation)
        return graph

    def hubs(self, max_share: float = MAX_SHARE) -> set[str]:
        """Entities mentioned by more than `max_share` of the graph's chunks (and by more than two)."""
        limit = max(2, max_share * len(self.chunk_entities))
        return {entity for entity, chunks in self.entity_chunks.items() if len(chunks) > limit}

    def related_chunks(
        self,
        seeds: Sequence[str],
        max_share: float = MAX_SHARE,
        relation_weight: float = RELATION_WEIGHT,
    ) -> list[tuple[str, float, list[str]]]:
        """Chunks that share an entity with the `seeds` (chunk ids, best first), best first: (chunk id, score,
        the shared entities). A shared entity scores idf(entity) / seed rank; one reached through a relation
        `relation_weight` times that. Hubs and the seeds themselves are left out."""
        total = max(1, len(self.chunk_entities))
        hubs = self.hubs(max_share)
        scores: dict[str, float] = defaultdict(float)
        shared: dict[str, list[str]] = defaultdict(list)
        for rank, seed in enumerate(seeds, start=1):
            for entity in self.chunk_entities.get(seed, ()):
                if entity in hubs:
                    continue
                reached = [(entity, 1.0)]
                reached += [(other, relation_weight) for other in self.related.get(entity, {}) if other not in hubs]
                for other, weight in reached:
                    idf = math.log(1 + total / len(self.entity_chunks[other]))
                    for chunk in self.entity_chunks[other]:
                        if chunk not in seeds:
                            scores[chunk] += weight * idf / rank
                            if self.names[other] not in shared[chunk]:
                                shared[chunk].append(self.names[other])
        order = sorted(scores, key=lambda chunk: scores[chunk], reverse=True)
        return [(chunk, scores[chunk], shared[chunk]) for chunk in order]

    def summary(self, max_share: float = MAX_SHARE) -> dict[str, int]:
        """How big the graph is: chunks, entities, related entity pairs, hub entities (left out of expansion)."""
        return {
            "chunks": len(self.chunk_entities),
            "entities": len(self.entity_chunks),
            "related pairs": sum(len(others) for others in self.related.values()) // 2,
            "hubs": len(self.hubs(max_share)),
        }


class GraphExpansionRetriever(BaseRetriever):
    """The first stage's hits, fused (RRF) with the chunks that share entities with its top `seeds`; best `k`.

    `chunks`: the knowledge base's chunks (the graph's chunk ids are looked up there). Chunks the graph brought in
    carry the shared entities' names in `metadata["graph_entities"]`.
    """

    first_stage: BaseRetriever
    graph: EntityGraph
    chunks: Mapping[str, Document]
    seeds: int = 3
    k: int = 10
    graph_weight: float = 0.5
    max_share: float = MAX_SHARE

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @classmethod
    def over(cls, first_stage: BaseRetriever, graph: EntityGraph, chunks: Sequence[Document], **options):
        """The retriever over a chunk list (indexed by chunk id)."""
        return cls(first_stage=first_stage, graph=graph, chunks={chunk_key(c): c for c in chunks}, **options)

    def expand(self, hits: Sequence[Document]) -> list[Document]:
        """The graph's list for these hits: the seeds first (the centre of the neighbourhood: left out, a seed would
        fall below every hit the graph also reaches), then the related chunks, best first, each with the entities
        it shares."""
        seeds = [chunk_key(hit) for hit in hits[: self.seeds]]
        related = self.graph.related_chunks(seeds, self.max_share)
        return list(hits[: self.seeds]) + [
            Document(page_content=self.chunks[key].page_content, metadata={**self.chunks[key].metadata, GRAPH: names})
            for key, _, names in related
            if key in self.chunks
        ]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.first_stage.invoke(query, config={"callbacks": run_manager.get_child()})
        expanded = self.expand(hits)
        fused = reciprocal_rank_fusion([hits, expanded], weights=[1 - self.graph_weight, self.graph_weight])
        return fused[: self.k]
