"""Integration: the real local model as a reranker — log-probabilities arrive, clear cases rank right, the cache keeps them.

Only clear-cut cases are asserted, and only as an order: near-ties can flip between model versions.
"""

import warnings

import pytest

from lessons.core.llm_cache import SQLiteLLMCache
from lessons.core.models import get_chat_model
from lessons.core.usage import UsageMeter
from lessons.retrieval.rerank import LLMRelevanceScorer

pytestmark = pytest.mark.model

QUESTION = "Which port does Atlas Server listen on by default?"
RELEVANT = "Atlas Server exposes the REST and gRPC APIs on port 7420 by default; change it with server.port."
UNRELATED = "Employees in Rotterdam get 27 days of annual leave per calendar year."


def test_the_judge_reads_log_probabilities_and_prefers_the_relevant_passage():
    scorer = LLMRelevanceScorer(get_chat_model(cache=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the text fallback warns: it must not be needed
        relevant, unrelated = scorer.score([(QUESTION, RELEVANT), (QUESTION, UNRELATED)])
    assert 0.0 < unrelated < relevant < 1.0


def test_log_probabilities_survive_the_sqlite_cache(tmp_path):
    scorer = LLMRelevanceScorer(get_chat_model(cache=SQLiteLLMCache(tmp_path / "cache.sqlite")))
    first, meter = scorer.score([(QUESTION, RELEVANT)]), UsageMeter()
    again = scorer.score([(QUESTION, RELEVANT)], callbacks=[meter])
    assert again == first and meter.totals.cached_calls == 1
