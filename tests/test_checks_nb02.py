"""Notebook 02's checks pass the reference answers and fail blank or typical wrong ones."""

import math

from langchain_core.output_parsers import StrOutputParser

from checks.nb02 import check_hyde, check_rrf, check_yes_probability
from lessons.retrieval.query_transform import HYDE_PROMPT
from lessons.retrieval.rerank import yes_probability
from lessons.retrieval.retrievers import reciprocal_rank_fusion


def blank(*args, **kwargs):
    pass


def test_rrf_check_passes_the_reference_and_fails_blank_and_unweighted_answers():
    assert check_rrf(lambda lists, weights=None, c=60: reciprocal_rank_fusion(lists, weights, c, id_key=None))
    assert not check_rrf(blank)
    assert not check_rrf(lambda lists, weights=None, c=60: reciprocal_rank_fusion(lists, None, c, id_key=None))
    assert not check_rrf(
        lambda lists, weights=None, c=60: [(d, 1.0) for d in reciprocal_rank_fusion(lists, weights, c)]
    )


def test_yes_probability_check_passes_the_reference_and_fails_blank_and_case_sensitive_answers():
    assert check_yes_probability(yes_probability)
    assert not check_yes_probability(blank)

    def case_sensitive(top):
        p = {t["token"]: math.exp(t["logprob"]) for t in top}
        yes, no = p.get("yes", 0.0), p.get("no", 0.0)
        return yes / (yes + no) if yes + no else None

    assert not check_yes_probability(case_sensitive)


def test_hyde_check_passes_a_chain_and_fails_blank_and_question_only_answers():
    assert check_hyde(lambda llm, retriever: HYDE_PROMPT | llm | StrOutputParser() | retriever)
    assert not check_hyde(blank)
    assert not check_hyde(lambda llm, retriever: retriever)
    assert not check_hyde(lambda llm, retriever: HYDE_PROMPT | llm | retriever)
