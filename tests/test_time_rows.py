"""The front matter's measured time is rendered from the benchmark, in both languages, twins kept fresh."""

import json

from scripts.notebooks import ROOT, parse, source_hash
from scripts.time_rows import measurements, row_text, update_master

_lines = (ROOT / "masters" / "00_setup.py").read_text(encoding="utf-8").splitlines()
HEADER = "\n".join(_lines[: _lines.index("# ---", 1) + 1]) + "\n\n"  # a real master's YAML header (kernelspec, …)
ENGLISH = "# Title\n\n| | |\n|---|---|\n| **Time** | about an hour |\n| **Numbers** | computed |"


def master(tmp_path, twin_hash=None):
    english = ENGLISH.replace("\n", "\n# ").replace("# \n", "#\n")
    chinese = "# 标题\n#\n# | | |\n# |---|---|\n# | **用时** | 大约一小时 |\n# | **数字** | 计算得出 |"
    (tmp_path / "masters").mkdir(exist_ok=True)
    twin_hash = twin_hash or source_hash(parse_english(tmp_path, english))
    path = tmp_path / "masters" / "09_demo.py"
    path.write_text(
        HEADER + f'# %% [markdown]\n# {english}\n\n# %% [markdown] lang="zh" translates="{twin_hash}"\n{chinese}\n\n'
        "# %%\nprint(1)\n",
        encoding="utf-8",
    )
    return path


def parse_english(tmp_path, english):
    (tmp_path / "masters").mkdir(exist_ok=True)
    probe = tmp_path / "masters" / "probe.py"
    probe.write_text(HEADER + f"# %% [markdown]\n# {english}\n\n# %%\nprint(1)\n", encoding="utf-8")
    source = parse(probe)[1][0].cell.source
    probe.unlink()
    return source


ROW = {
    "notebook": "09_demo",
    "passed": True,
    "seconds": 712.0,
    "llm_calls": 41,
    "started": "2026-12-01 11:05",
    "load_average_before": 2.0,
}


def test_both_rows_are_rendered_from_the_measurement_and_the_twin_stays_fresh(tmp_path):
    path = master(tmp_path)
    path.write_text(update_master(path, ROW), encoding="utf-8")
    english = next(c for c in parse(path)[1] if c.cell.cell_type == "markdown")
    assert "**11.9 min** measured (712 s, 41 chat-model calls" in english.cell.source
    assert "over the 10-minute budget" in english.cell.source and "busy" not in english.cell.source
    text, recorded = english.twins["zh"]
    assert "**11.9 分钟**（712 秒，41 次对话模型（chat model）调用" in text and "超出 10 分钟的预算" in text
    assert recorded == source_hash(english.cell.source)


def test_the_chinese_row_glosses_a_term_only_where_the_notebook_uses_it_first(tmp_path):
    path = master(tmp_path)
    intro = f'# %% [markdown]\n# A chat model answers.\n\n# %% [markdown] lang="zh" translates="{source_hash("A chat model answers.")}"\n'
    used = intro + "# 本课用对话模型回答。\n\n"
    earlier = path.read_text(encoding="utf-8").replace(
        "# %% [markdown]\n# # Title", used + "# %% [markdown]\n# # Title"
    )
    for text, glossed in ((path.read_text(encoding="utf-8"), True), (earlier, False)):
        path.write_text(text, encoding="utf-8")
        rendered = update_master(path, ROW)
        assert ("41 次对话模型（chat model）调用" in rendered) is glossed
        assert ("41 次对话模型调用" in rendered) is not glossed
    in_code = "# ```\n# 对话模型\n# ```\n"  # a code block is not where a term is glossed (the glossary test's rule)
    path.write_text(earlier.replace("# 本课用对话模型回答。\n", in_code), encoding="utf-8")
    assert "41 次对话模型（chat model）调用" in update_master(path, ROW)


def test_a_twin_that_was_already_stale_stays_stale(tmp_path):
    path = master(tmp_path, twin_hash="0123456789ab")
    path.write_text(update_master(path, ROW), encoding="utf-8")
    english = next(c for c in parse(path)[1] if c.cell.cell_type == "markdown")
    assert english.twins["zh"][1] == "0123456789ab"


def test_a_busy_machine_and_the_budget_are_said_plainly():
    quick = {**ROW, "seconds": 300.0, "load_average_before": 4.5}
    assert "within the 10-minute budget; the machine was busy (load average 4.5" in row_text(quick, "en")
    assert "在 10 分钟预算以内；运行前机器繁忙（负载均值 4.5）" in row_text(quick, "zh")


def test_the_latest_passing_measurement_wins(tmp_path):
    older = {**ROW, "seconds": 900.0, "started": "2026-12-01 09:00"}
    failed = {**ROW, "seconds": 10.0, "passed": False, "started": "2026-12-01 12:00"}
    (tmp_path / "notebooks.json").write_text(json.dumps({"notebooks": [older]}))
    (tmp_path / "notebooks-09.json").write_text(json.dumps({"notebooks": [ROW, failed]}))
    assert measurements(tmp_path)["09_demo"]["seconds"] == 712.0


def test_the_chinese_row_comes_from_the_chinese_copys_run_and_otherwise_says_it_is_the_english_one(tmp_path):
    chinese = {**ROW, "language": "zh", "seconds": 540.0, "llm_calls": 44, "started": "2026-12-06 08:30"}
    (tmp_path / "notebooks-09.json").write_text(json.dumps({"notebooks": [ROW]}))
    (tmp_path / "notebooks-zh-09.json").write_text(json.dumps({"notebooks": [chinese]}))
    assert measurements(tmp_path)["09_demo"]["seconds"] == 712.0  # an English row is never the Chinese run
    assert measurements(tmp_path, language="zh")["09_demo"]["seconds"] == 540.0
    path = master(tmp_path)
    rendered = update_master(path, ROW, chinese)
    assert "**11.9 min** measured (712 s" in rendered
    assert (
        "**9.0 分钟**（540 秒，44 次对话模型" in rendered and "bench_notebooks.py --zh`，2026 年 12 月 6 日" in rendered
    )
    assert "测的是英文版" not in rendered
    english_only = update_master(path, ROW)
    assert "**11.9 分钟**（712 秒" in english_only and "；测的是英文版，中文版尚未单独实测）" in english_only


def test_the_facilitator_agenda_row_is_rendered_from_the_measurement():
    from scripts.time_rows import update_facilitator

    guide = (
        "| notebook | cold | warm | how | session |\n|---|---|---|---|---|\n"
        "| `09_demo` | typed by hand | seconds | by hand | 45 min |\n| `10_other` | kept | x | y | 30 min |\n"
    )
    row = {**ROW, "cached_calls": 3, "input_tokens": 12345, "output_tokens": 678, "checks_passed": 2, "checks": 2}
    text = update_facilitator(guide, {"09_demo": row})
    assert "| `09_demo` | **712 s (11.9 min)** from an empty cache folder, 41 chat-model calls (3 repeats" in text
    assert "12,345 prompt / 678 generated tokens, checks 2/2; over the 10-minute budget" in text
    assert "| seconds | `python benchmarks/bench_notebooks.py 09`, 1 Dec 2026, a fresh cache folder | 45 min |" in text
    assert "| `10_other` | kept | x | y | 30 min |" in text


def test_the_prewarm_summary_adds_up_the_measured_notebooks_and_names_the_ones_over_budget():
    from scripts.time_rows import update_facilitator

    guide = "| steps | run | see the agenda below: typed by hand, 58 min — start it the evening before |\n"
    latest = {
        "00_setup": {**ROW, "notebook": "00_setup", "seconds": 60.0},
        "02_retrieval_tricks": {
            **ROW,
            "notebook": "02_retrieval_tricks",
            "seconds": 660.0,
            "started": "2026-12-02 10:00",
        },
        "08_service": {**ROW, "notebook": "08_service", "seconds": 6000.0},  # not one of 00–07
    }
    text = update_facilitator(guide, latest)
    assert "1 of 2 notebooks within 10 min from an empty cache folder (over: 02 (660 s)), 00–07 ≈ 12 min" in text
    assert "(measured 1 Dec 2026, 2 Dec 2026; before the cross-encoder" in text
    assert "typed by hand" not in text and text.endswith("start it the evening before |\n")


def test_the_take_home_notebooks_rank_among_the_cold_runs_is_rendered_from_the_measurements():
    from scripts.time_rows import update_facilitator

    guide = (
        "06 as a take-home (its cold run — **999 s**, the 1st longest of the 9 notebooks 00–07 — is not the reason).\n"
    )
    seconds = {"00_setup": 21.0, "02_retrieval_tricks": 583.0, "05_three_agent_verification": 587.0}
    latest = {name: {**ROW, "notebook": name, "seconds": value} for name, value in seconds.items()}
    latest["06_evaluation"] = {**ROW, "notebook": "06_evaluation", "seconds": 477.0}
    latest["08_service"] = {**ROW, "notebook": "08_service", "seconds": 900.0}  # not one of 00–07
    text = update_facilitator(guide, latest)
    assert "(its cold run — **477 s**, the 3rd longest of the 4 notebooks 00–07 — is not the reason)" in text
    assert update_facilitator(guide, {}) == guide  # nothing measured: the sentence is kept


def test_the_agenda_names_the_command_and_the_shared_folder_of_the_run_that_measured_a_row():
    from scripts.time_rows import bench_command, shared_folder

    alone, in_order, whole = ({"run": "notebooks-04"}, {"run": "notebooks-00-01-02-03-04"}, {"run": "notebooks"})
    assert bench_command(alone, "04_grading_loop") == "`python benchmarks/bench_notebooks.py 04`"
    assert bench_command(in_order, "04_grading_loop") == "`python benchmarks/bench_notebooks.py 00 01 02 03 04`"
    assert bench_command(whole, "04_grading_loop") == "`python benchmarks/bench_notebooks.py`"
    assert bench_command({}, "04_grading_loop") == "`python benchmarks/bench_notebooks.py 04`"  # a row from before
    named = {"run": "notebooks-avx2-00-01-02"}  # a results file named for its CPU kind: the word is no notebook
    assert bench_command(named, "02_retrieval_tricks") == "`python benchmarks/bench_notebooks.py 00 01 02`"
    assert shared_folder(alone) == shared_folder({}) == "a fresh cache folder"
    assert shared_folder(in_order) == shared_folder(whole) == "one fresh cache folder for the notebooks in order"


def test_every_masters_row_and_the_agenda_are_as_the_measurements_render_them():
    from scripts.time_rows import render

    stale = render(write=False, say=lambda _line: None)
    assert not stale, f"Time rows differ from the measurements: {', '.join(stale)} — run python -m scripts.time_rows"


def test_the_row_names_the_cpu_and_the_servers_speed_its_results_file_recorded(tmp_path):
    cpu = {"model_name": "AMD EPYC", "family": "25", "model": "1", "vector_features": "avx avx2 bmi2 f16c fma sse4_2"}
    speed = {"server_calls": 51, "prompt_tok_per_s": 46.0, "generation_tok_per_s": 16.0}
    results = {"machine": {"cpu": cpu}, "notebooks": [{**ROW, "server_speed": speed}]}
    (tmp_path / "notebooks-09.json").write_text(json.dumps(results))
    row = measurements(tmp_path)["09_demo"]
    english = row_text(row, "en")
    assert "offline on a 2-core laptop (AMD EPYC, AVX2, no AVX-512), a first Run All" in english
    assert "41 chat-model calls; the model server evaluated 46 prompt / 16 generated tokens per second;" in english
    assert "2 核笔记本电脑（AMD EPYC，只有 AVX2、没有 AVX-512）、从空缓存目录" in row_text(row, "zh")
    assert "每秒读入 46 个输入 token、生成 16 个 token；" in row_text(row, "zh")
    avx512 = "avx avx2 avx512bw avx512cd avx512dq avx512f avx512vl avx512_vnni bmi2 f16c fma sse4_2"  # an AVX-512 CPU
    wider = {**row, "cpu": {**cpu, "vector_features": avx512}}
    assert "(AMD EPYC, AVX-512)" in row_text(wider, "en")
    unrecorded = {**ROW}  # an older results file: no machine record, no server speed — nothing is guessed
    english = row_text(unrecorded, "en")
    assert "laptop, a first Run All" in english and "tokens per second" not in english
