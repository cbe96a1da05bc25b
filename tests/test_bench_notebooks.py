"""The first-run benchmark reads the local model's speed from the server's own log (benchmarks/bench_notebooks.py)."""

import pytest

from benchmarks.bench_notebooks import results_name, select_notebooks, server_speed, server_tokens

# Two calls as llama-cpp-python 0.3.36's server logs them: the first evaluates 211 prompt tokens, the second reuses
# a 212-token prefix and evaluates 20. "prompt eval time" reads ≈ 0 ms in this build: the prompt's time is the
# total less the generation ("eval") time.
LOG = """INFO:     127.0.0.1:50000 - "POST /v1/chat/completions HTTP/1.1" 200 OK
llama_perf_context_print:        load time =       0.23 ms
llama_perf_context_print: prompt eval time =       0.11 ms /   211 tokens (    0.00 ms per token, 1850877.19 tokens per second)
llama_perf_context_print:        eval time =     311.00 ms /     7 runs   (   44.43 ms per token,    22.51 tokens per second)
llama_perf_context_print:       total time =    4075.34 ms /   218 tokens
llama_perf_context_print:    graphs reused =          6
Llama.generate: 212 prefix-match hit, remaining 20 prompt tokens to eval
llama_perf_context_print:        load time =       0.23 ms
llama_perf_context_print: prompt eval time =     434.04 ms /    20 tokens (   21.70 ms per token,    46.08 tokens per second)
llama_perf_context_print:        eval time =     301.72 ms /     7 runs   (   43.10 ms per token,    23.20 tokens per second)
llama_perf_context_print:       total time =     841.98 ms /    27 tokens
"""


def test_server_speed_sums_every_call_and_takes_prompt_time_as_total_less_generation():
    speed = server_speed(LOG)
    prompt_seconds = (4075.34 - 311.00 + 841.98 - 301.72) / 1000
    assert speed == {
        "server_calls": 2,
        "prompt_tokens_evaluated": 231,
        "prompt_tok_per_s": round(231 / prompt_seconds, 1),
        "generation_tok_per_s": round(14 / ((311.00 + 301.72) / 1000), 1),
    }
    assert 50 < speed["prompt_tok_per_s"] < 60  # not the ≈ 1.8 million tokens/s of the "prompt eval" counter


def test_server_speed_of_a_log_without_calls_is_none():
    assert server_speed("INFO:     Uvicorn running on http://127.0.0.1:8931\n") is None
    assert server_speed("") is None


def test_a_name_that_matches_no_notebook_stops_the_run_and_names_it():
    assert [p.stem for p in select_notebooks(["00_", "09"])][:1] == ["00_setup"]
    assert len(select_notebooks([])) >= 10
    with pytest.raises(SystemExit, match="'--help'"):
        select_notebooks(["00_setup", "--help"])


def test_the_chinese_copies_are_measured_on_their_own_and_saved_apart():
    (chinese,) = select_notebooks(["02"], "zh")
    assert chinese.parent.name == "zh" and chinese.parent.parent.name == "notebooks"
    assert select_notebooks(["02"])[0].parent.name == "solutions"
    assert results_name(["02", "05"], "zh") == "notebooks-zh-02-05"
    assert results_name([], "en") == "notebooks"
    with pytest.raises(SystemExit, match="notebooks/zh/"):
        select_notebooks(["99"], "zh")


def test_server_tokens_count_the_calls_their_prompt_tokens_evaluated_and_reused_and_the_tokens_generated():
    assert server_tokens(LOG) == {"server_calls": 2, "prompt_tokens_evaluated": 231, "prompt_tokens_reused": 212,
                                  "generated_tokens": 14}  # fmt: skip
    assert server_tokens("") == {"server_calls": 0, "prompt_tokens_evaluated": 0, "prompt_tokens_reused": 0,
                                 "generated_tokens": 0}  # fmt: skip


def test_the_quick_mode_measures_the_suites_runs_in_its_order_and_never_feeds_the_time_rows():
    """`--quick`: every solutions/ notebook, then the Chinese copies (the order tests/test_notebooks.py runs them, so
    a Chinese copy's calls its English copy made come from the cache); saved where scripts.time_rows never reads."""
    from benchmarks.bench_notebooks import language_of, suite_notebooks

    suite = suite_notebooks(["04", "05"])
    assert [(p.parent.name, p.stem[:2]) for p in suite] == [("solutions", "04"), ("solutions", "05"), ("zh", "04"),
                                                           ("zh", "05")]  # fmt: skip
    assert [language_of(p) for p in suite] == ["en", "en", "zh", "zh"]
    assert len(suite_notebooks([])) == len(select_notebooks([])) + len(select_notebooks([], "zh"))
    name = results_name(["04"], "en", quick=True)
    assert name == "test-suite-notebooks-04" and not name.startswith("notebooks")  # time_rows globs notebooks*.json
    with pytest.raises(SystemExit):
        suite_notebooks(["99"])


def test_the_quick_mode_follows_the_test_suites_own_list_and_refuses_a_language():
    """One list of the suite's notebooks (tools.notebook_runner.suite_order) serves tests/test_notebooks.py and
    `--quick`; `--zh --quick` stops instead of silently measuring both languages."""
    from benchmarks.bench_notebooks import parse, suite_notebooks
    from tools.notebook_runner import suite_order

    measured = suite_notebooks([])
    assert measured == [p for p in suite_order() if p.parent.name != "notebooks"]  # the learner copies are cached
    assert parse(["--quick", "04"]) == (["04"], "en", True) and parse(["--zh", "02"]) == (["02"], "zh", False)
    with pytest.raises(SystemExit, match="drop --zh"):
        parse(["--zh", "--quick"])
