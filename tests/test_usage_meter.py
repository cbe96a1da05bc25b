"""The one meter (`lessons.core.usage`): scoped blocks, nesting, cached vs fresh calls, cost."""

import json
import threading
from typing import Any

import pytest

from lessons.core.fakes import ScriptedChatModel
from lessons.core.llm_cache import SQLiteLLMCache
from lessons.core.usage import USAGE, UsageMeter, deepseek_cost_usd, metered


class DeepSeekLike(ScriptedChatModel):
    """A scripted model that reports itself as DeepSeek's deepseek-chat (so its fresh calls are priced)."""

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any):
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "deepseek"
        return params

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        result.llm_output = {"model_name": "deepseek-chat", "token_usage": {}}
        return result


def test_a_block_counts_only_the_calls_made_inside_it():
    model = ScriptedChatModel(default="two words")  # 2 output tokens a reply
    model.invoke("before the block")
    with metered() as meter:
        model.invoke("one two three")  # 3 input tokens
        model.invoke("four")  # 1 input token
    model.invoke("after the block")
    totals = meter.totals
    assert (totals.calls, totals.cached_calls) == (2, 0)
    assert (totals.input_tokens, totals.output_tokens) == (4, 4)
    assert meter.counts() == {"llm_calls": 2, "cached_calls": 0, "input_tokens": 4, "output_tokens": 4, "tokens": 8}


def test_a_block_counts_calls_in_langchain_threads_and_in_threads_that_copy_its_context():
    import contextvars

    model = ScriptedChatModel(default="hi")
    with metered() as meter:
        model.batch(["a", "b", "c"], config={"max_concurrency": 3})  # LangChain's executor copies the context
        worker = threading.Thread(target=contextvars.copy_context().run, args=(model.invoke, "d"))
        worker.start()
        worker.join()
        bare = threading.Thread(target=model.invoke, args=("e",))  # a fresh context: outside the block
        bare.start()
        bare.join()
    assert meter.totals.calls == 4


def test_nested_blocks_count_inner_calls_in_both_once():
    model = ScriptedChatModel(default="x")
    with metered() as outer:
        model.invoke("a")
        with metered() as inner:
            model.invoke("b c")
            model.invoke("d", config={"callbacks": [inner, outer]})  # attached twice more: still one call each
        model.invoke("e")
    assert inner.totals.calls == 2 and inner.totals.input_tokens == 3
    assert outer.totals.calls == 4 and outer.totals.input_tokens == 5


def test_sibling_blocks_do_not_see_each_other():
    model = ScriptedChatModel(default="x")
    with metered() as first:
        model.invoke("a")
    with metered() as second:
        model.invoke("b")
        model.invoke("c")
    assert (first.totals.calls, second.totals.calls) == (1, 2)


def test_cached_answers_are_counted_apart_from_fresh_calls(tmp_path):
    model = ScriptedChatModel(responses=["first answer"], cache=SQLiteLLMCache(tmp_path / "llm.sqlite"))
    with metered() as meter:
        model.invoke("same question")  # fresh: 2 in, 2 out
        model.invoke("same question")  # served by the cache
        model.invoke("same question")
    totals = meter.totals
    assert len(model.calls) == 1
    assert (totals.calls, totals.cached_calls, totals.all_calls) == (1, 2, 3)
    assert (totals.input_tokens, totals.output_tokens) == (2, 2)
    assert (totals.cached_input_tokens, totals.cached_output_tokens, totals.cached_tokens) == (4, 4, 8)
    assert totals.pipeline_tokens == 12
    # result-table columns: every call, with the tokens they involved (a re-run reports the same cost)
    assert meter.counts() == {"llm_calls": 3, "cached_calls": 2, "input_tokens": 6, "output_tokens": 6, "tokens": 12}
    assert totals.by_model == {"scripted-fake": 1}


def test_cost_is_one_formula_charged_for_fresh_deepseek_calls_only(tmp_path, monkeypatch, fresh_settings):
    monkeypatch.setenv("DEEPSEEK_PRICE_INPUT", "1.0")
    monkeypatch.setenv("DEEPSEEK_PRICE_OUTPUT", "2.0")
    assert deepseek_cost_usd(1_000_000, 500_000) == pytest.approx(2.0)
    deepseek = DeepSeekLike(responses=["a b c"], cache=SQLiteLLMCache(tmp_path / "llm.sqlite"))
    local = ScriptedChatModel(default="a b c")  # not DeepSeek: free
    with metered() as meter:
        deepseek.invoke("one two")  # fresh: 2 in, 3 out
        deepseek.invoke("one two")  # cached: costs nothing
        local.invoke("one two")
    assert meter.totals.cost_usd == pytest.approx((2 * 1.0 + 3 * 2.0) / 1e6)
    # the list price of every token involved (both DeepSeek calls and the local one): 6 in, 9 out
    assert meter.totals.list_price_usd == pytest.approx(deepseek_cost_usd(6, 9))
    assert meter.totals.list_price_usd == pytest.approx((6 * 1.0 + 9 * 2.0) / 1e6)


def test_a_meter_passed_as_a_callback_counts_that_invocation():
    meter = UsageMeter()
    model = ScriptedChatModel(default="ok")
    model.invoke("counted", config={"callbacks": [meter]})
    model.invoke("not counted")
    assert meter.totals.calls == 1 and meter.totals.input_tokens == 1


def test_a_scoped_meter_does_not_overwrite_the_runner_usage_file(tmp_path, monkeypatch, fresh_settings):
    path = tmp_path / "usage.json"
    monkeypatch.setenv("AGENTIC_RAG_USAGE_FILE", str(path))
    assert fresh_settings().usage_file == path  # a setting, read through get_settings()
    with metered():
        ScriptedChatModel(default="x").invoke("q")
    assert not path.exists()  # only the process-wide USAGE writes the runner's file
    ScriptedChatModel(default="x", callbacks=[USAGE]).invoke("q")
    assert path.exists()


def test_the_runner_usage_file_is_read_when_written_not_when_the_settings_were_first_read(
    tmp_path, monkeypatch, fresh_settings
):
    assert fresh_settings().usage_file is None  # the settings are read (and kept) before the variable is set
    path = tmp_path / "usage.json"
    monkeypatch.setenv("AGENTIC_RAG_USAGE_FILE", str(path))
    ScriptedChatModel(default="x", callbacks=[USAGE]).invoke("q")
    assert json.loads(path.read_text())["calls"] == USAGE.totals.calls
    path.unlink()
    monkeypatch.delenv("AGENTIC_RAG_USAGE_FILE")  # unset again: the meter stops writing
    ScriptedChatModel(default="x", callbacks=[USAGE]).invoke("q")
    assert not path.exists()
