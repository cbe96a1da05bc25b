"""The course's RAG pipelines by name: what notebook 06 evaluates and the service (notebook 08) serves.

Introduced in notebook 06 (evaluation). A **pipeline** is a function `question -> PipelineResult` (answer,
abstained, the chunks it retrieved, the chunks it answered from). `PIPELINES` names the pipelines of the earlier
notebooks; `build_pipelines(names, resources)` makes them from `Resources` (chunks, their store, the chat model,
sizes). The retrieval-only ones (dense, hybrid, hybrid + rerank, QA-hybrid, and notebook 09's techniques in front
of or around hybrid + rerank: the metadata filter, the embedding router, graph expansion and the RAPTOR summary tree)
share ONE answer step — notebook 04's ungated answer (`answer_without_grading`) over their top `k` chunks — so they
differ only in what they retrieve. Graph expansion and RAPTOR are built with the chat model before the first question
(one call per chunk read, one per cluster: `PipelineSpec.built_with_model`); the build is done once per `Resources`.
`SERVED` ("grading-loop", the gated pipeline) is the one the service answers with, built over its own retriever by
the registry entry's `over` (`grading_loop`). The gate's thresholds come from ONE call, `gate_thresholds()`.

The evaluation harness (`lessons.evaluation.pipelines`: metrics, judges, tables) runs these pipelines; this
module needs neither it nor pandas, so the service can serve a pipeline without loading them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from lessons.agents.grading import DEFAULT_MAX_ROUNDS
from lessons.core.i18n import N_, t

K = 3  # chunks an answer step reads; hit@k and recall@k are measured at this depth
RANK_K = 10  # depth of MRR and nDCG

# --- pipelines ---------------------------------------------------------------------------------------


@dataclass
class PipelineResult:
    """What one pipeline did with one question."""

    answer: str
    abstained: bool
    retrieved: list[Document]  # the ranked chunks retrieval metrics are computed on
    context: list[Document]  # the chunks the answer was written from (what faithfulness is judged against)
    details: dict[str, Any] = field(default_factory=dict)


Pipeline = Callable[[str], PipelineResult]


@dataclass
class Resources:
    """What pipelines are built from: the chunks, their Chroma store, the chat model, and sizes."""

    chunks: list[Document]
    store: Any  # a langchain_chroma.Chroma holding `chunks`
    llm: BaseChatModel
    k: int = K
    rank_k: int = RANK_K
    rerank_candidates: int = 20  # hybrid candidates the reranker reads (a cross-encoder: no model calls)
    first_stage_weight: float | None = None  # the reranker's fusion with the first stage; None: the course's default
    cross_lingual: bool = True  # the default reranker's cross-lingual route (`is_cross_lingual` questions)
    max_rounds: int = 3
    gate_thresholds: Mapping[str, Any] | None = (
        None  # the grading loop's GateThresholds per language; None = `gate_thresholds()`
    )
    qa_chunks: Sequence[Document] | None = None  # chunks that get QA pairs (default: all of them)
    qa_max_pairs: int = 3
    qa_store_name: str = "eval-qa-hybrid"
    progress: bool = True
    knowledge_base: str = "documents"  # this knowledge base's name: the router's route to `chunks`
    other_bases: Mapping[str, tuple[Sequence[Document], Any]] = field(
        default_factory=dict
    )  # the other knowledge bases the router may send a question to: name -> (chunks, store)
    graph_chunks: int | None = None  # chunks whose entities the chat model extracts for graph+rerank (None: all)
    built: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # indexes built once (router, …)


def _built(r: Resources, name: str, make: Callable[[], Any]) -> Any:
    """`make()` once per `Resources`: the router, the entity graph and the summary tree a pipeline and its ranking
    share (building the graph or the tree costs chat-model calls)."""
    if name not in r.built:
        r.built[name] = make()
    return r.built[name]


def answer_from(llm: BaseChatModel, question: str, ranked: Sequence[Document], k: int) -> PipelineResult:
    """The shared answer step of the retrieval-only pipelines: notebook 04's ungated answer over the top `k`."""
    from lessons.agents.grading import answer_without_grading

    state = answer_without_grading(llm, lambda _query: list(ranked[:k]), question)
    abstained = state["outcome"] == "not_in_kb"
    return PipelineResult(state["answer"], abstained, list(ranked), [] if abstained else list(state["documents"]))


def _retrieval_pipeline(retrieve: Callable[[str], list[Document]], r: Resources) -> Pipeline:
    return lambda question: answer_from(r.llm, question, retrieve(question), r.k)


def _hybrid(r: Resources, size: int):
    from lessons.retrieval.document_processor import hybrid_over

    return hybrid_over(r.chunks, r.store, k=size, candidates=size)


def dense_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    from lessons.retrieval.retrievers import dense_retriever

    return dense_retriever(r.store, r.rank_k).invoke


def hybrid_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    return _hybrid(r, r.rank_k).invoke


def _reranked_retriever(r: Resources, top_n: int, chunks: Sequence[Document] | None = None, store: Any = None):
    """The course's reranked hybrid over `chunks` and `store` (default: the resources' own), with `r`'s reranker."""
    from lessons.retrieval.document_processor import reranked_hybrid
    from lessons.retrieval.rerank import reranker_by_name

    reranker = reranker_by_name(
        "default", top_n=top_n, first_stage_weight=r.first_stage_weight, cross_lingual=r.cross_lingual
    )
    chunks, store = (r.chunks, r.store) if chunks is None else (chunks, store)
    return reranked_hybrid(chunks, store, k=top_n, candidates=r.rerank_candidates, reranker=reranker)


def _reranked(r: Resources, top_n: int) -> Callable[[str], list[Document]]:
    return _reranked_retriever(r, top_n).invoke


def rerank_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    """Hybrid candidates reordered by the course's reranker (`lessons.retrieval.rerank.default_reranker`: the
    cross-encoder for English, the route notebook 02 compares for Chinese) — no chat-model calls."""
    return _reranked(r, r.rank_k)


def filtered_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    """Notebook 09's metadata filter in front of `rerank_retrieval`: the chat model turns the question into a filter on
    the chunks' metadata (`lessons.retrieval.metadata_filter.FilterBuilder`: one structured call, validated against
    the metadata that exists — a condition that would match nothing is dropped), then the course's reranked hybrid over
    the chunks it keeps (`filtered_retriever`); a question that names no document is searched unfiltered."""
    from lessons.retrieval.metadata_filter import FilterBuilder, filtered_retriever
    from lessons.retrieval.rerank import reranker_by_name

    builder = FilterBuilder(r.llm, r.chunks)
    retrievers: dict[str, Any] = {}  # one retriever (its BM25 index) per distinct filter

    def retrieve(question: str) -> list[Document]:
        chunk_filter = builder.build(question)
        key = repr(chunk_filter.chroma_where())
        if key not in retrievers:
            reranker = reranker_by_name(
                "default", top_n=r.rank_k, first_stage_weight=r.first_stage_weight, cross_lingual=r.cross_lingual
            )
            retrievers[key] = filtered_retriever(
                r.chunks, r.store, chunk_filter, k=r.rank_k, candidates=r.rerank_candidates, reranker=reranker
            )
        return retrievers[key].invoke(question)

    return retrieve


def router(r: Resources):
    """Notebook 09's embedding router over this knowledge base (`r.knowledge_base`) and `r.other_bases`
    (`lessons.retrieval.routing.EmbeddingRouter`, its calibrated "neither" threshold; no chat-model call)."""
    from lessons.chunking.strategies import cached_embeddings
    from lessons.retrieval.routing import EmbeddingRouter

    bases = {r.knowledge_base: r.chunks, **{name: chunks for name, (chunks, _) in r.other_bases.items()}}
    # the question's vector from the query-vector cache, as the reranked hybrid's dense search reads it
    return _built(r, "router", lambda: EmbeddingRouter.from_chunks(bases, embeddings=cached_embeddings()))


def routed_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    """The router first (`router`), then the course's reranked hybrid over the knowledge base it chose; nothing for a
    question it sends to neither. A question sent to another base is searched there, as a deployment with several
    bases would: what it finds is not this base's evidence."""
    from lessons.retrieval.routing import NEITHER

    chosen = router(r)
    retrievers = {r.knowledge_base: _reranked_retriever(r, r.rank_k)}
    retrievers |= {
        name: _reranked_retriever(r, r.rank_k, chunks, store) for name, (chunks, store) in r.other_bases.items()
    }

    def retrieve(question: str) -> list[Document]:
        route = chosen.route(question).route
        return [] if route == NEITHER else retrievers[route].invoke(question)

    return retrieve


def graph_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    """Notebook 09's graph expansion around the course's reranked hybrid: the chat model extracts the entities of
    every chunk (the first `r.graph_chunks`; one structured call each, through the LLM cache) once, and
    `GraphExpansionRetriever` fuses the reranked hybrid's hits with the chunks sharing rare entities with its top 3."""
    from lessons.retrieval.graph_index import EntityGraph, GraphExpansionRetriever, extract_graph

    def make():
        return EntityGraph.from_extraction(extract_graph(r.llm, r.chunks, max_chunks=r.graph_chunks))

    graph = _built(r, "graph", make)
    return GraphExpansionRetriever.over(_reranked_retriever(r, r.rank_k), graph, r.chunks, k=r.rank_k).invoke


def raptor_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    """RAPTOR at laptop scale (`lessons.retrieval.summary_tree`): the chat model summarises every cluster of at most
    eight chunks once (one call per cluster, per language, through the LLM cache); the reranked hybrid then searches
    leaves and summaries together, each summary replaced by its chunks before the reranker reads them."""
    from lessons.chunking.strategies import cached_embeddings
    from lessons.retrieval.index import build_index
    from lessons.retrieval.summary_tree import build_summary_tree, index_vectors, summary_tree_retriever

    def make():
        vectors = index_vectors(r.store, r.chunks)
        tree = build_summary_tree(r.chunks, r.llm, cached_embeddings(), vectors=vectors)
        return tree, build_index(tree.documents(), name=f"{r.knowledge_base}-summary-tree")

    tree, store = _built(r, "summary tree", make)
    return summary_tree_retriever(tree, store, k=r.rank_k, candidates=r.rerank_candidates).invoke


def build_routed_rerank(r: Resources) -> Pipeline:
    """`routed_retrieval` and the shared answer step; a question routed to neither is refused without a call."""
    from lessons.agents.answering import not_in_kb_answer

    retrieve = routed_retrieval(r)

    def run(question: str) -> PipelineResult:
        ranked = retrieve(question)
        if not ranked:
            return PipelineResult(not_in_kb_answer(question), True, [], [], {"route": "neither"})
        return answer_from(r.llm, question, ranked, r.k)

    return run


def build_graph_rerank(r: Resources) -> Pipeline:
    return _retrieval_pipeline(graph_retrieval(r), r)


def build_raptor_rerank(r: Resources) -> Pipeline:
    return _retrieval_pipeline(raptor_retrieval(r), r)


def build_dense(r: Resources) -> Pipeline:
    return _retrieval_pipeline(dense_retrieval(r), r)


def build_hybrid(r: Resources) -> Pipeline:
    return _retrieval_pipeline(hybrid_retrieval(r), r)


def build_hybrid_rerank(r: Resources) -> Pipeline:
    return _retrieval_pipeline(rerank_retrieval(r), r)


def build_filtered_rerank(r: Resources) -> Pipeline:
    return _retrieval_pipeline(filtered_retrieval(r), r)


def build_qa_hybrid(r: Resources) -> Pipeline:
    from lessons.chunking.strategies import cached_embeddings
    from lessons.core.vectorstore import index_documents, open_store
    from lessons.transforms.qa_transform import DOC_TYPE_CHUNK, QATransformer, mark_doc_type, search_source_chunks

    qa_chunks = list(r.qa_chunks if r.qa_chunks is not None else r.chunks)
    qa_docs = QATransformer(r.llm, max_pairs=r.qa_max_pairs, progress=r.progress).transform_documents(qa_chunks)
    chunk_docs = mark_doc_type(r.chunks, DOC_TYPE_CHUNK)
    chunks_by_id = {c.metadata["chunk_id"]: c for c in chunk_docs}
    embeddings = cached_embeddings()  # chunk vectors the main index already computed are reused
    store = open_store(r.qa_store_name, embeddings)
    index_documents(store, chunk_docs + qa_docs, prune=True)

    def retrieve(question: str) -> list[Document]:
        vector = embeddings.embed_query(question)
        return search_source_chunks(store, vector, "hybrid", chunks_by_id, k=r.rank_k, fetch_k=4 * r.rank_k)

    return _retrieval_pipeline(retrieve, r)


def gate_thresholds() -> tuple[dict[str, Any], str]:
    """The grading loop's gate thresholds (`GateThresholds` per language) and where they come from — the ONE
    place the evaluation reads them.

    `lessons.agents.grading.DEFAULT_GATE` (its comment says where it was calibrated), or, when the setting
    `AGENTIC_RAG_GATE_FILE` names one, the thresholds calibrated on your documents by the evaluation command's
    `[gate] calibrate` (`load_gate`) — the service and the evaluation then use those. On documents the thresholds were
    not calibrated on, reports say so (`threshold_note`)."""
    from lessons.agents.grading import DEFAULT_GATE, DEFAULT_GATE_SOURCE, GATE_FILE_SOURCE, load_gate
    from lessons.core.settings import get_settings

    path = get_settings().gate_file
    if path is not None:
        return load_gate(path), GATE_FILE_SOURCE
    return dict(DEFAULT_GATE), DEFAULT_GATE_SOURCE


def gate_grader(llm: BaseChatModel, thresholds: Mapping[str, Any] | None = None, subject: Collection[str] = ()):
    """The grading loop's gate: notebook 04's `RelevanceGate` (the cross-encoder, then the chat model's P(yes)
    for the documents it lets through) with `thresholds` (default `gate_thresholds()`), then the answerability
    check (`lessons.agents.answerability`; `subject`: the knowledge base's `common_names`)."""
    from lessons.agents.grading import default_gate

    return default_gate(llm, dict(thresholds) if thresholds is not None else gate_thresholds()[0], subject=subject)


def gate_retrieval(r: Resources) -> Callable[[str], list[Document]]:
    """What the grading loop retrieves in a round — notebook 04's: the hybrid top `rerank_candidates`,
    reranked by the course's reranker, the top k kept: the chunks its gate grades."""
    return _reranked(r, r.k)


def grading_loop(
    llm: BaseChatModel,
    retrieve: Callable[[str], list[Document]],
    *,
    subject: Collection[str] = (),
    thresholds: Mapping[str, Any] | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> Pipeline:
    """The "grading-loop" pipeline over any retriever: notebook 04's loop as it ends — each round's chunks graded
    by `gate_grader` (the calibrated relevance gate, then the answerability check; `subject`: the knowledge base's
    `common_names`), answering from the chunks it let through or abstaining. Notebook 06 evaluates it over
    `gate_retrieval`; the service (notebook 08) serves it over its live index. `details` holds the rounds, the
    answerability check's last verdict (None when it did not run) and `gate`: the language's thresholds and, per
    round, the best score of each signal and how many chunks passed (`gate_report`) — how far below the threshold
    a refused question was."""
    from lessons.agents.grading import build_grading_loop

    thresholds = dict(thresholds) if thresholds is not None else gate_thresholds()[0]
    loop = build_grading_loop(llm, retrieve, max_rounds=max_rounds, grader=gate_grader(llm, thresholds, subject))

    def run(question: str) -> PipelineResult:
        state = loop.invoke({"question": question}, config={"recursion_limit": 50})
        abstained = state["outcome"] == "not_in_kb"
        trace = state.get("trace", [])
        verdict = next((step.check for step in reversed(trace) if step.check is not None), None)
        return PipelineResult(state["answer"], abstained, list(state.get("documents", [])),
                              [] if abstained else list(state.get("relevant", [])),
                              {"rounds": state.get("round"), "check": verdict,
                               "gate": gate_report(question, trace, thresholds)})  # fmt: skip

    return run


def gate_report(question: str, trace: Sequence[Any], thresholds: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's side of a grading-loop run, as JSON: the question's language, that language's thresholds
    (`GateThresholds`; a bare number is a P(yes) threshold) and, per round (`RoundTrace`), the query, the best
    cross-encoder score and P(yes) among its chunks (None: not read — the cross-encoder below its threshold, or the
    signal switched off), how many chunks passed and what the loop decided."""
    from lessons.agents.grading import GateThresholds
    from lessons.text.language import detect_language

    language = detect_language(question)
    limit = thresholds.get(language)
    if limit is not None and not isinstance(limit, GateThresholds):
        limit = GateThresholds(0.0, float(limit))

    def best(values: Sequence[float | None]) -> float | None:
        read = [float(v) for v in values if v is not None]
        return round(max(read), 4) if read else None

    rounds = [{"round": step.round, "query": step.query, "best_cross_encoder": best(step.cross_encoder),
               "best_p_yes": best(step.p_yes), "passed": step.grades.count("yes"), "decision": step.decision}
              for step in trace]  # fmt: skip
    return {"language": language, "thresholds": None if limit is None else
            {"cross_encoder": limit.cross_encoder, "p_yes": limit.p_yes}, "rounds": rounds}  # fmt: skip


def build_grading_loop_pipeline(r: Resources) -> Pipeline:
    """`grading_loop` over `gate_retrieval(r)` (hybrid top `rerank_candidates`, reranked, top k) with
    `r.gate_thresholds`."""
    from lessons.agents.answerability import common_names

    subject = sorted(common_names(r.chunks))  # the knowledge base's subject: no chunk need repeat it
    return grading_loop(r.llm, gate_retrieval(r), subject=subject, thresholds=r.gate_thresholds,
                        max_rounds=r.max_rounds)  # fmt: skip


def build_three_agents(r: Resources) -> Pipeline:
    """Notebook 05's workflow over what notebook 05 retrieves (`kb.retrieve`: the hybrid top `rerank_candidates`,
    reranked, the top k — `gate_retrieval`, the same chunks the grading loop's check reads), with the grading loop's
    answerability check. `details` holds, as the grading loop's do, the research `rounds` and the check's verdict
    (`check`; None when the workflow stopped before it: the relevance checker said NO_MATCH — the check runs before the
    research agent), and the workflow's own `outcome` (answered, unverified, not_in_documents, cannot_answer), the
    relevance checker's label and the `citations`."""
    from lessons.agents.answerability import AnswerabilityCheck, common_names
    from lessons.agents.three_agents import run_three_agents

    retriever = gate_retrieval(r)  # notebook 05's retrieval: reranked, as the grading loop's (not plain hybrid)
    check = AnswerabilityCheck(r.llm, subject=common_names(r.chunks))  # the grading loop's answerability check

    def run(question: str) -> PipelineResult:
        result = run_three_agents(question, retriever=retriever, llm=r.llm, answerability=check)
        context = list(result.context)
        return PipelineResult(result.answer, bool(result.abstained), context, [] if result.abstained else context,
                              {"rounds": result.research_rounds, "check": result.answerability,
                               "outcome": result.outcome, "relevance": result.relevance,
                               "citations": list(result.citations)})  # fmt: skip

    return run


class UnknownPipeline(ValueError):
    """A pipeline name that is not in `PIPELINES`; the message lists the names."""


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    notebook: str
    description: str
    build: Callable[[Resources], Pipeline]
    retrieval: Callable[[Resources], Callable[[str], list[Document]]] | None = (
        None  # its ranking, if it needs no chat model
    )
    over: Callable[..., Pipeline] | None = None  # the same pipeline over any retriever (what the service serves)
    built_with_model: bool = False  # building it costs chat-model calls before the first question (graph, tree)


PIPELINES: dict[str, PipelineSpec] = {spec.name: spec for spec in [
    PipelineSpec("dense", "01", N_("nearest chunks by embedding (the baseline), shared answer step"), build_dense,
                 dense_retrieval),
    PipelineSpec("hybrid", "02", N_("dense + BM25 fused by reciprocal rank fusion, shared answer step"), build_hybrid,
                 hybrid_retrieval),
    PipelineSpec("hybrid+rerank", "02", N_("hybrid candidates reranked by the course's reranker (cross-encoder for "
                 "English; default_reranker's route for Chinese), shared answer step"), build_hybrid_rerank, rerank_retrieval),
    PipelineSpec("qa-hybrid", "03", N_("chunks and generated questions in one index, hits mapped to chunks"), build_qa_hybrid),
    PipelineSpec("grading-loop", "04", N_("hybrid top k graded by calibrated P(yes), rewrite up to a cap, answer from relevant chunks or abstain"),
                 build_grading_loop_pipeline, over=grading_loop),
    PipelineSpec("three-agents", "05", N_("relevance checker, research agent, verification agent (re-research capped)"), build_three_agents),
    PipelineSpec("filtered+rerank", "09", N_("the chat model's metadata filter (document, type, language, section; "
                 "validated against the chunks), then hybrid+rerank over the chunks it keeps, shared answer step"),
                 build_filtered_rerank),
    PipelineSpec("routed+rerank", "09", N_("the embedding router picks the knowledge base (or neither: refused "
                 "without a call), then hybrid+rerank over it, shared answer step"), build_routed_rerank,
                 routed_retrieval),
    PipelineSpec("graph+rerank", "09", N_("hybrid+rerank fused with the chunks that share rare entities with its top "
                 "3 (the graph: one chat-model call per chunk, built once), shared answer step"), build_graph_rerank,
                 graph_retrieval, built_with_model=True),
    PipelineSpec("raptor+rerank", "09", N_("hybrid+rerank over chunks and cluster summaries, summaries replaced by "
                 "their chunks (one chat-model call per cluster, built once), shared answer step"), build_raptor_rerank,
                 raptor_retrieval, built_with_model=True),
]}  # fmt: skip


def check_pipeline_names(names: Sequence[str], where: str = "pipelines") -> list[str]:
    """`names` if every one is known, else an error that lists the known names."""
    unknown = [n for n in names if n not in PIPELINES]
    if unknown:
        raise UnknownPipeline(t("unknown pipeline(s) {unknown} in {where} — choose from: {known}",
                                unknown=unknown, where=where, known=", ".join(PIPELINES)))  # fmt: skip
    if not names:
        raise UnknownPipeline(
            t("no pipelines in {where} — choose from: {known}", where=where, known=", ".join(PIPELINES))
        )
    return list(names)


SERVED = "grading-loop"  # the pipeline the service answers with (notebook 08); notebook 06 measures it


def build_pipelines(names: Sequence[str], resources: Resources) -> dict[str, Pipeline]:
    """The named pipelines, in the order given."""
    return {name: PIPELINES[name].build(resources) for name in check_pipeline_names(names)}
