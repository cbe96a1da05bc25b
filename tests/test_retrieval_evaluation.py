"""The evaluation loop: sampling, metrics per question, LLM cost metering (cache included), summaries."""

import math

import pandas as pd
import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.caches import InMemoryCache
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda

from lessons.core.fakes import ScriptedChatModel, always
from lessons.core.usage import UsageMeter
from lessons.evaluation.retrieval_evaluation import (
    Technique,
    breakdown,
    evaluate_techniques,
    relevant_chunk_counts,
    score_ranking,
    score_technique,
    summarise,
)
from lessons.ingest.corpus import GoldQuestion, load_gold
from lessons.ingest.questions import balanced_sample
from lessons.retrieval.rerank import llm_reranker


def gold(qid, language="en", kind="fact", evidence=("port 7420",)):
    return GoldQuestion(
        id=qid, question=f"question {qid}", language=language, type=kind, answer="a",
        sources=[{"file": "x.md"}], evidence=list(evidence),
    )  # fmt: skip


def doc(text):
    return Document(page_content=text, metadata={"chunk_id": text})


class Fixed(BaseRetriever):
    texts: list[str]

    def _get_relevant_documents(self, query, *, run_manager):
        return [doc(t) for t in self.texts]


def stratified_sample(questions, n, seed, include=()):
    """Notebook 02's sample: answerable gold questions, spread over types (the course's one sampler)."""
    return balanced_sample([q for q in questions if q.answerable], n, seed, by_type=True, include=include)


def test_sample_is_balanced_by_language_covers_every_type_and_is_repeatable():
    questions = load_gold()
    sample = stratified_sample(questions, 24, seed=7)
    assert len(sample) == 24 and len({q.id for q in sample}) == 24
    assert sum(q.language == "en" for q in sample) == 12
    assert all(q.answerable for q in sample)
    kinds = {q.type for q in sample}
    assert {"paraphrase", "multi_hop", "fact", "table"} <= kinds
    assert [q.id for q in stratified_sample(questions, 24, seed=7)] == [q.id for q in sample]
    assert [q.id for q in stratified_sample(questions, 24, seed=8)] != [q.id for q in sample]


def test_small_samples_still_mix_languages():
    sample = stratified_sample(load_gold(), 3, seed=0)
    assert sorted(q.language for q in sample) == ["en", "zh", "zh"]  # Chinese takes the odd one


def test_included_questions_are_always_in_the_sample():
    sample = stratified_sample(load_gold(), 4, seed=0, include=["en-041", "zh-023"])
    assert {"en-041", "zh-023"} <= {q.id for q in sample}
    assert sorted(q.language for q in sample) == ["en", "en", "zh", "zh"] and len({q.id for q in sample}) == 4


def test_metrics_of_one_ranking():
    question = gold("q1", evidence=["port 7420", "audit log"])
    ranking = [doc("nothing"), doc("it uses port 7420"), doc("more"), doc("the audit log"), doc("x"), doc("y")]
    scores = score_ranking(ranking, question, n_relevant=2)
    assert scores["hit@5"] == 1.0 and scores["recall@5"] == 1.0
    assert scores["MRR@10"] == 0.5
    assert scores["nDCG@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert scores["chars@5"] == sum(len(d.page_content) for d in ranking[:5])


def test_relevant_chunk_counts_use_the_evidence_quotes():
    chunks = [doc("port 7420 here"), doc("again port 7420"), doc("other")]
    assert relevant_chunk_counts(chunks, [gold("q1"), gold("q2", evidence=["missing"])]) == {"q1": 2, "q2": 0}


def judged_yes(p):
    top = [{"token": "yes", "logprob": math.log(p)}, {"token": "no", "logprob": math.log(1 - p)}]
    return AIMessage(
        "yes", response_metadata={"logprobs": {"content": [{"token": "yes", "logprob": 0.0, "top_logprobs": top}]}}
    )


def test_the_meter_counts_llm_calls_made_deep_inside_a_technique_and_cached_ones_too():
    llm = ScriptedChatModel(default=always(judged_yes(0.7)), cache=InMemoryCache())
    technique = Technique(
        "rerank",
        ContextualCompressionRetriever(base_retriever=Fixed(texts=["a", "b", "c"]), base_compressor=llm_reranker(llm)),
        uses_llm=True,
    )
    first = score_technique(technique, gold("q1"), n_relevant=1)
    again = score_technique(technique, gold("q1"), n_relevant=1)
    assert first["llm_calls"] == 3 and first["cached_calls"] == 0 and first["tokens"] > 0
    assert again["llm_calls"] == 3 and again["cached_calls"] == 3 and again["tokens"] == first["tokens"]
    assert len(llm.calls) == 3  # the second run was served from the cache


def test_meter_counts_tokens_from_usage_metadata():
    meter = UsageMeter()
    ScriptedChatModel(responses=["one two three"]).invoke("a b", config={"callbacks": [meter]})
    totals = meter.totals
    assert (totals.calls, totals.cached_calls, totals.input_tokens, totals.output_tokens) == (1, 0, 2, 3)


def test_a_failing_question_is_recorded_not_raised():
    def broken(question):
        raise RuntimeError("server gone")

    row = score_technique(Technique("broken", RunnableLambda(broken)), gold("q1"), n_relevant=1)
    assert row["error"] == "RuntimeError: server gone" and row["hit@5"] == 0.0


def results_table():
    questions = [gold("e1"), gold("e2"), gold("z1", "zh", "paraphrase"), gold("z2", "zh", "multi_hop")]
    good = Technique("good", Fixed(texts=["port 7420"]))
    bad = Technique("bad", Fixed(texts=["nothing"]))
    rows = evaluate_techniques([bad, good], questions, {q.id: 1 for q in questions}, progress=False)
    sample = evaluate_techniques([Technique("sampled", Fixed(texts=["port 7420"]))], questions[:1], progress=False)
    return pd.concat([rows, sample], ignore_index=True)


def test_summary_compares_each_technique_with_the_baseline_on_the_same_questions():
    table = summarise(results_table(), baseline="bad")
    assert list(table.index) == ["bad", "good", "sampled"]
    assert table.loc["good", "hit@5"] == 1.0 and table.loc["good", "Δ hit@5"] == 1.0
    assert table.loc["sampled", "questions"] == 1 and table.loc["sampled", "Δ recall@5"] == 1.0
    assert table.loc["bad", "Δ hit@5"] == 0.0


def test_summary_can_be_restricted_to_a_sample_of_questions():
    table = summarise(results_table(), baseline="bad", question_ids=["e1", "z1"])
    assert table.loc["good", "questions"] == 2 and table.loc["sampled", "questions"] == 1


def test_breakdown_averages_per_group_and_names_the_group_sizes(monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    table = breakdown(results_table(), "hit@5", by="language", question_ids=["e1", "e2", "z1"])
    assert list(table.columns) == ["English (n=2)", "Chinese (n=1)"]  # a language as the reader names it
    assert table.loc["good", "Chinese (n=1)"] == 1.0 and table.loc["bad", "English (n=2)"] == 0.0
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")  # the Chinese copy's legend: 英文/中文, not the codes en/zh
    assert list(breakdown(results_table(), "hit@5", by="language").columns) == ["英文 (n=2)", "中文 (n=2)"]
    types = breakdown(results_table(), "hit@5", by="type", groups=["paraphrase", "multi_hop"])
    assert list(types.columns) == ["paraphrase (n=1)", "multi_hop (n=1)"]


def scripted_everything(messages, tool_names):
    """One scripted model for every technique: rewrites, step-back questions, passages and yes/no judgements."""
    if "SearchQueries" in tool_names:
        return {"queries": ["backup schedule", "nightly backup", "when do backups run"]}
    if "StepBackQuestion" in tool_names:
        return {"question": "How are backups organised?"}
    if "RelevantPassages" in tool_names:
        return {"relevant_ids": [2, 1]}
    return judged_yes(0.6)


def test_every_technique_runs_end_to_end_and_returns_documents(fresh_settings):
    from lessons.evaluation.retrieval_evaluation import BASELINE, build_techniques
    from tests.test_retrieval import CHUNKS, memory_store

    store = memory_store()
    store.add_documents(CHUNKS)
    techniques = build_techniques(
        CHUNKS, store, ScriptedChatModel(default=scripted_everything), k=3, candidates=4, llm_candidates=3, hits=2
    )
    names = [t.name for t in techniques]
    assert names[0] == BASELINE and len(set(names)) == len(names)
    assert [t.name for t in techniques if t.uses_llm] == [
        "hybrid → LLM rerank",
        "hybrid → contextual LLM rerank",
        "HyDE",
        "multi-query",
        "step-back",
    ]
    assert [t.name for t in techniques if t.sample_only] == ["hybrid → cross-encoder (top 3)"]
    question = gold("q", evidence=["every night"]).model_copy(
        update={"question": "When do the backups run every night?"}
    )
    for technique in techniques:
        row = score_technique(technique, question, n_relevant=1)
        assert row["error"] is None, (technique.name, row["error"])
        assert row["hit@5"] == 1.0, technique.name
        assert (row["llm_calls"] > 0) == technique.uses_llm, technique.name
    without_llm = [t.name for t in build_techniques(CHUNKS, store)]
    assert without_llm == [t.name for t in techniques if not t.on_sample]
    assert "hybrid → cross-encoder, by language" in without_llm and "hybrid → ColBERT" in without_llm


def test_the_chat_model_judges_the_top_llm_candidates_alone(fresh_settings):
    """LLM_RERANK_CANDIDATES chunks, one call each, and the cross-encoder (top N) reorders the same N: the LLM
    rerank read the hybrid top k (10 in notebook 02) whatever llm_candidates said."""
    from lessons.evaluation.retrieval_evaluation import build_techniques
    from tests.test_retrieval import CHUNKS, memory_store

    store = memory_store()
    store.add_documents(CHUNKS)
    techniques = build_techniques(
        CHUNKS,
        store,
        ScriptedChatModel(default=scripted_everything),
        k=4,
        candidates=4,
        llm_candidates=2,
        colbert=False,
    )
    by_name = {t.name: t.retriever for t in techniques}
    question = gold("q", evidence=["every night"]).model_copy(
        update={"question": "When do the backups run every night?"}
    )
    judged = {t.name: score_technique(t, question, n_relevant=1) for t in techniques if t.on_sample}
    assert judged["hybrid → LLM rerank"]["llm_calls"] == 2
    assert judged["hybrid → contextual LLM rerank"]["llm_calls"] == 1
    read = {
        name: sorted(d.page_content for d in by_name[name].invoke(question.question))
        for name in ("hybrid → cross-encoder (top 2)", "hybrid → LLM rerank", "hybrid → contextual LLM rerank")
    }
    assert len(read["hybrid → LLM rerank"]) == 2 and len(set(map(tuple, read.values()))) == 1


def test_the_chinese_route_keeps_the_order_of_the_list_it_reorders(fresh_settings):
    """The routed reranker leaves Chinese questions in the order of the list it reorders: plain hybrid's order
    first, then what the deeper fusion adds (`document_processor.reranked_hybrid_over`), not the deep fusion's
    own order (notebook 02's row of the rerankers' candidates), which ranks worse on the package READMEs."""
    from lessons.evaluation.retrieval_evaluation import build_techniques
    from lessons.retrieval.document_processor import reranked_hybrid_over
    from tests.test_retrieval import CHUNKS, memory_store

    store = memory_store()
    store.add_documents(CHUNKS)
    techniques = {t.name: t.retriever for t in build_techniques(CHUNKS, store, k=3, candidates=6, colbert=False)}
    candidates = reranked_hybrid_over(CHUNKS, store, k=3, candidates=6)
    for query in ("备份什么时候运行？", "每晚的备份保留多久？"):
        routed = techniques["hybrid → cross-encoder, by language"].invoke(query)
        read = candidates.invoke(query)
        assert [d.page_content for d in routed] == [d.page_content for d in read[:3]]
    english = "When do the backups run every night?"
    assert techniques["hybrid → cross-encoder, by language"].invoke(english)  # English goes to the cross-encoder


def rows(table):
    """Result rows as evaluate_techniques writes them: {technique: {question_id: (language, recall@5, MRR@10)}}."""
    return pd.DataFrame(
        [
            {
                "technique": t,
                "question_id": q,
                "language": lang,
                "recall@5": r,
                "MRR@10": m,
                "hit@5": float(r > 0),
                "nDCG@10": m,
                "chars@5": 100.0,
            }
            for t, questions in table.items()
            for q, (lang, r, m) in questions.items()
        ]
    )


def test_misses_removed_counts_the_share_of_the_baselines_misses_recovered():
    from lessons.evaluation.retrieval_evaluation import misses_removed

    table = rows(
        {
            "dense (baseline)": {"a": ("en", 0.0, 0.0), "b": ("en", 0.5, 0.5), "c": ("zh", 1.0, 1.0)},
            "better": {"a": ("en", 1.0, 1.0), "b": ("en", 0.5, 0.5), "c": ("zh", 1.0, 1.0)},
        }
    )
    assert misses_removed(table, "better") == pytest.approx(1.0 / 1.5)
    assert misses_removed(table, "dense (baseline)") == 0.0


def test_findings_follow_the_measured_numbers_and_their_sign():
    from lessons.evaluation.retrieval_evaluation import retrieval_findings

    def table(hybrid_en):
        return rows(
            {
                "dense (baseline)": {"a": ("en", 0.5, 0.5), "b": ("zh", 0.5, 0.5)},
                "hybrid (RRF)": {"a": ("en", hybrid_en, hybrid_en), "b": ("zh", 0.5, 0.5)},
                "hybrid → cross-encoder": {"a": ("en", 1.0, 1.0), "b": ("zh", 0.0, 0.0)},
                "hybrid → cross-encoder, by language": {"a": ("en", 1.0, 1.0), "b": ("zh", 0.5, 0.5)},
            }
        )

    gains = pd.DataFrame(
        {
            "compared with": ["hybrid → cross-encoder (top 10)"],
            "recall@5": [-0.2],
            "MRR@10": [-0.1],
            "LLM calls/query": [10.0],
        },
        index=["hybrid → LLM rerank"],
    )
    text = retrieval_findings(table(1.0), gains, llm_sample=6)
    assert "**Hybrid search** beats dense retrieval" in text and "0.750 vs 0.500" in text
    assert "costs −0.500 recall@5" in text  # the English model on the Chinese question
    assert (
        "**hybrid → LLM rerank** vs hybrid → cross-encoder (top 10) on the 6 sampled questions: recall@5 −0.200" in text
    )
    assert "it hurts" in text
    assert "English recall@5 1.000 (goal ≥ 0.90: met)" in text
    assert "**Hybrid search** trails dense retrieval" in retrieval_findings(table(0.0), gains, llm_sample=6)


def test_findings_separate_the_rerankers_gain_from_the_deeper_fusion_it_reads():
    from lessons.evaluation.retrieval_evaluation import DEEP_HYBRID, retrieval_findings

    table = rows(
        {
            "dense (baseline)": {"a": ("en", 0.5, 0.5), "b": ("en", 0.5, 0.5), "c": ("zh", 0.5, 0.5)},
            "hybrid (RRF)": {"a": ("en", 0.5, 0.4), "b": ("en", 0.5, 0.4), "c": ("zh", 0.5, 0.5)},
            DEEP_HYBRID: {"a": ("en", 0.5, 0.5), "b": ("en", 0.5, 0.5), "c": ("zh", 0.5, 0.5)},
            "hybrid → cross-encoder": {"a": ("en", 1.0, 0.6), "b": ("en", 1.0, 0.6), "c": ("zh", 0.0, 0.0)},
        }
    )
    text = retrieval_findings(table, pd.DataFrame(), llm_sample=0)
    assert "MRR@10 0.400 → 0.600 (+50.0% relative" in text  # against hybrid's top 10, as before
    assert "English MRR@10 0.500 against hybrid's 0.400" in text
    assert "the cross-encoder adds +20.0% relative on English questions" in text  # 0.6 over the 0.5 it reorders
    assert text.index("English questions:**") < text.index("Part of that gain") < text.index("Chinese questions:**")
    without = rows({k: v for k, v in {"dense (baseline)": {"a": ("en", 0.5, 0.5)}}.items()})
    assert "Part of that gain is depth" not in retrieval_findings(without, pd.DataFrame(), llm_sample=0)


def test_every_language_routed_technique_keeps_the_defaults_cross_lingual_route(fresh_settings):
    from lessons.evaluation.retrieval_evaluation import build_techniques
    from lessons.retrieval.rerank import LanguageRoutedReranker
    from tests.test_retrieval import CHUNKS, memory_store

    store = memory_store()
    store.add_documents(CHUNKS)
    techniques = build_techniques(CHUNKS, store, colbert=False)
    routed = {
        t.name: t.retriever.base_compressor
        for t in techniques
        if isinstance(getattr(t.retriever, "base_compressor", None), LanguageRoutedReranker)
    }
    assert {"hybrid → cross-encoder, by language", "hybrid → cross-encoder with neighbours"} <= routed.keys()
    missing = [name for name, reranker in routed.items() if reranker.cross_lingual is None]
    assert not missing, f"no route for questions whose candidates are all in another language: {missing}"


def test_evidence_ranks_name_where_an_order_holds_the_evidence():
    from lessons.evaluation import evidence_ranks

    question = gold("q")
    ranked = [Document(page_content=text) for text in ("nothing", "the port 7420 here", "x", "port 7420 again")]
    assert evidence_ranks(ranked, question) == [2, 4]
    assert evidence_ranks([], question) == []


def fusion_rows():
    """Plain hybrid, the cross-encoder alone and fused, on three English questions and one Chinese one."""
    scores = {  # technique -> recall@5, MRR@10 per question e1, e2, e3, z1
        "hybrid (RRF)": ([1.0, 1.0, 0.5, 1.0], [1.0, 0.5, 0.5, 1.0]),
        "hybrid → cross-encoder": ([0.5, 1.0, 1.0, 0.0], [0.5, 1.0, 1.0, 0.0]),
        "hybrid → cross-encoder, by language": ([1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.5, 1.0]),
    }
    rows = []
    for technique, (recall, mrr) in scores.items():
        for question, r, m in zip(("e1", "e2", "e3", "z1"), recall, mrr):
            rows.append({"technique": technique, "question_id": question, "language": question[0].replace("e", "en")
                         .replace("z", "zh"), "recall@5": r, "MRR@10": m})  # fmt: skip
    return pd.DataFrame(rows)


def test_losses_to_count_the_questions_a_reranker_loses_against_its_input():
    from lessons.evaluation.retrieval_evaluation import losses_to

    rows = fusion_rows()
    assert losses_to(rows, "hybrid → cross-encoder", "hybrid (RRF)") == 2  # e1 and z1
    assert losses_to(rows, "hybrid → cross-encoder, by language", "hybrid (RRF)") == 0
    assert losses_to(rows, "absent", "hybrid (RRF)") == 0


def test_the_fusion_finding_reads_english_questions_from_the_rows():
    from lessons.evaluation.retrieval_evaluation import fusion_finding

    text = fusion_finding(fusion_rows(), alone="hybrid → cross-encoder", fused="hybrid → cross-encoder, by language",
                          reference="hybrid (RRF)")  # fmt: skip
    assert "below plain hybrid on recall@5 on 1 of 3 questions, fused (the default) on 0" in text
    assert "recall@5 0.833 alone, 1.000 fused (the fusion raises it here), MRR@10 0.833 and 0.833" in text
