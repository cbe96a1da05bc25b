"""Usage counting (calls, cached calls, tokens, DeepSeek cost) and the SQLite LLM cache."""

import json
import uuid

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from lessons.core.fakes import ScriptedChatModel
from lessons.core.llm_cache import SQLiteLLMCache
from lessons.core.usage import DEEPSEEK_PRICE_PER_MTOK, UsageMeter


def test_cache_hits_are_counted_apart_and_cost_nothing(tmp_path):
    tracker = UsageMeter(usage_file=tmp_path / "usage.json")
    cache = SQLiteLLMCache(tmp_path / "llm.sqlite")
    model = ScriptedChatModel(responses=["first answer"], cache=cache, callbacks=[tracker])
    assert model.invoke("same question").content == "first answer"
    assert model.invoke("same question").content == "first answer"  # the script has no second reply
    assert len(model.calls) == 1
    assert tracker.totals.calls == 1 and tracker.totals.cached_calls == 1
    assert tracker.totals.input_tokens == 2 and tracker.totals.output_tokens == 2
    assert tracker.totals.cached_tokens == 4 and tracker.totals.pipeline_tokens == 8
    written = json.loads((tmp_path / "usage.json").read_text())
    assert written["calls"] == 1 and written["cached_calls"] == 1
    assert "LLM calls: 1 (+1 from cache)" in tracker.report()


def test_cache_persists_across_instances_as_json_not_pickle(tmp_path):
    path = tmp_path / "llm.sqlite"
    ScriptedChatModel(responses=["stored"], cache=SQLiteLLMCache(path)).invoke("q")
    reopened = ScriptedChatModel(responses=[], cache=SQLiteLLMCache(path))
    assert reopened.invoke("q").content == "stored"
    assert len(SQLiteLLMCache(path)) == 1
    import sqlite3

    (response,) = sqlite3.connect(path).execute("SELECT response FROM llm_cache").fetchone()
    assert json.loads(response)["kwargs"]["message"]["kwargs"]["content"] == "stored"


def test_a_different_prompt_misses_the_cache(tmp_path):
    model = ScriptedChatModel(responses=["a", "b"], cache=SQLiteLLMCache(tmp_path / "c.sqlite"))
    assert [model.invoke("one").content, model.invoke("two").content] == ["a", "b"]


def test_deepseek_cost_uses_the_price_table():
    tracker = UsageMeter()
    run_id = uuid.uuid4()
    tracker.on_chat_model_start({}, [[]], run_id=run_id, metadata={"ls_provider": "deepseek"})
    message = AIMessage(
        "x", usage_metadata={"input_tokens": 1_000_000, "output_tokens": 500_000, "total_tokens": 1_500_000}
    )
    result = LLMResult(generations=[[ChatGeneration(message=message)]], llm_output={"model_name": "deepseek-chat"})
    tracker.on_llm_end(result, run_id=run_id)
    expected = DEEPSEEK_PRICE_PER_MTOK["input"] + 0.5 * DEEPSEEK_PRICE_PER_MTOK["output"]
    assert abs(tracker.totals.cost_usd - expected) < 1e-9
    assert tracker.totals.by_model == {"deepseek-chat": 1}
