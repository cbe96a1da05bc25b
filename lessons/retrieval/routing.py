"""Query routing: which knowledge base can answer a question — the course documents, the package READMEs, or neither.

For notebook 09 (routing and a semantic cache; the notebook is not written yet). Two routers with one answer type,
`RouteDecision`:

- `EmbeddingRouter`: the question's embedding against every chunk of each knowledge base; a base's score is the
  mean cosine similarity of its `k` nearest chunks, the best base wins, and below a calibrated threshold the answer
  is "neither" (`calibrate_neither_threshold`). No chat-model call: milliseconds per question.
- `LLMRouter`: a forced structured decision by the chat model (`lessons.core.structured.invoke_structured`, the
  way the agents decide), from a one-line description of each base (`ROUTE_DESCRIPTIONS`). One call per question.

`benchmarks/bench_routing.py` measures both on the gold questions of both corpora, their near misses and
plainly off-corpus questions (results in `benchmarks/results/routing.json`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, Field, create_model

from lessons.core.embeddings import embedder_name, unit_vectors
from lessons.core.i18n import t
from lessons.core.search_text import search_text
from lessons.core.structured import invoke_structured

NEITHER = "neither"
# Calibrated by benchmarks/bench_routing.py (k = 3) for the course embedder (multilingual-e5-small) on its calibration
# half A (best balanced accuracy); on half B it routed 119 of 162 questions right (en 71/100, zh 48/62).
DEFAULT_NEITHER_THRESHOLDS = {"e5-small-q4": 0.8542}

COURSE_DESCRIPTION = (
    "Tidewell Analytics' company documents: its Atlas enterprise search product (admin guide, white paper, "
    "release notes, support FAQ, pricing, roles, configuration), the employee handbook (leave, hours, expenses, "
    "offices in Lisbon, Rotterdam and Hangzhou), the data security policy, the Q3 2026 business review, meeting "
    "notes, a Chinese technical note on retrieval and Chinese customer cases"
)


def packages_description() -> str:
    """The package READMEs' route, described by the packages their manifest lists (`data/packages/MANIFEST.json`)."""
    from lessons.ingest.corpus import read_manifest

    manifest = read_manifest() or {"packages": []}
    names = ", ".join(entry["name"] for entry in manifest["packages"])
    return f"the README files of these Python packages: {names} (installation, configuration, APIs, releases)"


def route_descriptions() -> dict[str, str]:
    """The course's two knowledge bases, named as `lessons.ingest.corpus.CORPORA` names them, with their descriptions."""
    return {"course": COURSE_DESCRIPTION, "packages": packages_description()}


@dataclass(frozen=True)
class RouteDecision:
    """Where a question goes (a knowledge base's name or `NEITHER`) and, for the embedding router, each base's score."""

    route: str
    scores: dict[str, float] = field(default_factory=dict)


def decide(scores: Mapping[str, float], threshold: float) -> str:
    """The best-scoring base, or `NEITHER` when even its score is below `threshold`."""
    if not scores:
        raise ValueError(t("routing needs at least one knowledge base to choose from"))
    best = max(scores, key=scores.__getitem__)
    return best if scores[best] >= threshold else NEITHER


class EmbeddingRouter:
    """Routes by the similarity of the question to each knowledge base's chunks (their `search_text`, as indexed).

    `vectors` maps a base's name to its chunks' L2-normalised embeddings (one row per chunk); `from_chunks` embeds
    them. `threshold` defaults to the calibrated one for the embedder (`DEFAULT_NEITHER_THRESHOLDS`).
    """

    def __init__(
        self, vectors: Mapping[str, np.ndarray], embeddings: Embeddings, threshold: float | None = None, k: int = 3
    ) -> None:
        if not vectors or NEITHER in vectors:
            raise ValueError(
                t("give the router at least one knowledge base, none of them named {neither}", neither=NEITHER)
            )
        empty = [name for name, matrix in vectors.items() if len(matrix) == 0]
        if empty:
            raise ValueError(t("these knowledge bases have no chunks to route to: {names}", names=", ".join(empty)))
        name = embedder_name(embeddings)
        threshold = DEFAULT_NEITHER_THRESHOLDS.get(name) if threshold is None else threshold
        if threshold is None:
            raise ValueError(
                t(
                    "no calibrated threshold for the embedder {name}: calibrate one with "
                    "benchmarks/bench_routing.py and pass threshold=…",
                    name=name,
                )
            )
        if k < 1:
            raise ValueError(t("k counts the nearest chunks per knowledge base: at least 1, not {k}", k=k))
        self.vectors = {route: np.asarray(matrix, dtype=np.float32) for route, matrix in vectors.items()}
        self.embeddings = embeddings
        self.threshold = float(threshold)
        self.k = k

    @classmethod
    def from_chunks(
        cls,
        chunks: Mapping[str, Sequence[Document]],
        embeddings: Embeddings | None = None,
        threshold: float | None = None,
        k: int = 3,
    ) -> EmbeddingRouter:
        """Embed every chunk of each base (through the disk cache of passage vectors: a second build costs nothing)."""
        from lessons.chunking.strategies import cached_embeddings
        from lessons.core.embeddings import get_embeddings

        embeddings = embeddings or get_embeddings()
        cached = cached_embeddings(embeddings)
        vectors = {}
        for route, documents in chunks.items():
            texts = [search_text(d) for d in documents]
            matrix = np.asarray(cached.embed_documents(texts), dtype=np.float32)
            vectors[route] = unit_vectors(matrix, texts, embeddings)
        return cls(vectors, embeddings, threshold, k)

    def scores(self, question: str) -> dict[str, float]:
        """Each base's score for `question`: the mean cosine similarity of its `k` chunks nearest to it."""
        query = np.asarray(self.embeddings.embed_query(question), dtype=np.float32)
        query = unit_vectors(query, question, self.embeddings)
        result = {}
        for route, matrix in self.vectors.items():
            similarities = matrix @ query
            k = min(self.k, len(similarities))
            result[route] = float(np.mean(np.partition(similarities, -k)[-k:]))
        return result

    def route(self, question: str) -> RouteDecision:
        scores = self.scores(question)
        return RouteDecision(decide(scores, self.threshold), scores)


def balanced_accuracy(expected: Sequence[str], predicted: Sequence[str]) -> float:
    """The mean, over the routes that occur in `expected`, of the share of that route's questions routed right."""
    if len(expected) != len(predicted) or not expected:
        raise ValueError(t("balanced accuracy needs as many predictions as expected routes, and at least one"))
    shares = []
    for route in sorted(set(expected)):
        mine = [p for e, p in zip(expected, predicted, strict=True) if e == route]
        shares.append(sum(p == route for p in mine) / len(mine))
    return float(np.mean(shares))


def calibrate_neither_threshold(scored: Sequence[tuple[Mapping[str, float], str]]) -> float:
    """The "neither" threshold with the best balanced accuracy on (scores, expected route) pairs.

    Balanced, so that the few off-corpus questions weigh as much as the many in-corpus ones. Among equally good cut
    points the highest is kept; the threshold sits halfway between the cut and the next lower best score.
    """
    if not scored:
        raise ValueError(t("calibrating a threshold needs lookups: none were given"))
    expected = [route for _, route in scored]
    best_scores = sorted({max(scores.values()) for scores, _ in scored}, reverse=True)
    candidates = [float(np.nextafter(best_scores[0], np.inf)), *best_scores]
    best_accuracy, best_cut = -1.0, candidates[0]
    for cut in candidates:
        accuracy = balanced_accuracy(expected, [decide(scores, cut) for scores, _ in scored])
        if accuracy > best_accuracy:
            best_accuracy, best_cut = accuracy, cut
    below = [score for score in best_scores if score < best_cut]
    return (best_cut + below[0]) / 2 if below else best_cut


ROUTER_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            (
                "You send a user's question to the knowledge base that can answer it. The knowledge bases:\n"
                "{descriptions}\n- {neither}: the question is about something none of them covers.\n"
                "Questions may be in English or Chinese. Choose by the topic the question is about, not by its "
                "language. Choose a knowledge base when the question is about its subject, even if you doubt the "
                "answer is in it.\n{examples}"
            ),
        ),
        ("human", "Question: {question}"),
    ]
)
# The names the chat model sees for the course's bases: "course" and "packages" say nothing of what they hold (a first
# run with them sent 18 of 24 course questions to "packages").
COURSE_LABELS = {"course": "tidewell_company_documents", "packages": "python_package_readmes"}
# Invented examples (none is a gold or benchmark question), shown to the model when routing between the course's bases.
COURSE_EXAMPLES = (
    "Examples:\n"
    "- How many seats does the Atlas Team plan include? -> tidewell_company_documents\n"
    "- 杭州办公室的年假有几天？ -> tidewell_company_documents\n"
    "- How do I add documents to a Chroma collection? -> python_package_readmes\n"
    "- Pydantic 的 BaseModel 怎么定义字段默认值？ -> python_package_readmes\n"
    "- What is the tallest mountain in Europe? -> neither\n"
    "- 怎样做番茄炒蛋？ -> neither"
)


def route_schema(routes: Sequence[str]) -> type[BaseModel]:
    """The typed decision the chat model fills: one of `routes` or `NEITHER`."""
    choices = (*routes, NEITHER)
    return create_model(
        "RouteChoice",
        __doc__="The knowledge base that can answer the question.",
        route=(Literal[choices], Field(description="the name of the knowledge base, or 'neither'")),
    )


class LLMRouter:
    """Routes with one forced structured decision of the chat model per question (`invoke_structured`).

    `descriptions` maps each base's name to a one-line description of what it holds; `labels` maps a name to the word
    the model sees and answers with (default: `route_descriptions()` with `COURSE_LABELS` and `COURSE_EXAMPLES`; give
    `examples` of your own for other bases). The decision is returned under the base's name.
    """

    def __init__(
        self,
        model: BaseChatModel,
        descriptions: Mapping[str, str] | None = None,
        examples: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        course = descriptions is None
        self.examples = (COURSE_EXAMPLES if course else "") if examples is None else examples
        self.descriptions = dict(route_descriptions() if course else descriptions)
        if not self.descriptions or NEITHER in self.descriptions:
            raise ValueError(
                t("give the router at least one knowledge base, none of them named {neither}", neither=NEITHER)
            )
        labels = dict(COURSE_LABELS if course and labels is None else labels or {})
        self.labels = {name: labels.get(name, name) for name in self.descriptions}
        shown = list(self.labels.values())
        for name, label in self.labels.items():
            if label == NEITHER:
                raise ValueError(
                    t(
                        "the label {neither} is the router's answer for questions no knowledge base holds: give "
                        "{name} another label (labels={{...}})",
                        neither=NEITHER,
                        name=name,
                    )
                )
            if shown.count(label) > 1:
                others = [other for other, same in self.labels.items() if same == label]
                raise ValueError(
                    t(
                        "the knowledge bases {names} share the label {label}: the router could not tell its answer "
                        "apart — give each its own label (labels={{...}})",
                        names=", ".join(others),
                        label=label,
                    )
                )
        self.model = model
        self.schema = route_schema(list(self.labels.values()))

    def prompt(self, question: str):
        lines = "\n".join(f"- {self.labels[name]}: {text}" for name, text in self.descriptions.items())
        values = {"descriptions": lines, "neither": NEITHER, "examples": self.examples, "question": question}
        return ROUTER_PROMPT.invoke(values)

    def route(self, question: str) -> RouteDecision:
        label = invoke_structured(self.model, self.schema, self.prompt(question)).route
        names = {shown: name for name, shown in self.labels.items()}
        return RouteDecision(names.get(label, NEITHER))
