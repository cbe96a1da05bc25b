"""Write each notebook's measured first-run time into its front matter (English and Chinese) and the agenda.

    python -m scripts.time_rows            # rewrite the "Time" / "用时" rows of masters/*.py and the agenda rows
                                           # of docs/FACILITATOR.md, then regenerate the notebooks
    python -m scripts.time_rows --check    # exit 1 naming every master whose row differs from the measurement

The figures come from `benchmarks/bench_notebooks.py` (a first Run All from an empty cache folder, each
notebook in a fresh kernel): the most recent passing row per notebook over every
`benchmarks/results/notebooks*.json`, per language: the "用时" row comes from a run of the Chinese copy
(`bench_notebooks.py --zh`, rows with `"language": "zh"`) when there is one, else from the English run and says so.
The row is the front matter's only typed figure, so it is rendered
here from the measurement instead of typed by hand; the Chinese twin of the front-matter cell gets the
same figures and the hash of the new English text (`scripts.notebooks.source_hash`), so the twins stay in
step. A notebook without a measurement keeps its row. Tooling only: nothing in lessons/ imports this.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BUDGET_SECONDS = 600

EN = (
    "offline on a 2-core laptop{cpu}, a first Run All from an empty cache folder: **{minutes:.1f} min** measured "
    "({seconds:.0f} s, {calls} chat-model calls{speed}; `benchmarks/bench_notebooks.py`, {date}, {budget}{load}); "
    "seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written)"
)
ZH = (
    "离线、2 核笔记本电脑{cpu}、从空缓存目录第一次 Run All：实测 **{minutes:.1f} 分钟**（{seconds:.0f} 秒，{calls} 次对话模型调用{speed}；"
    "`benchmarks/bench_notebooks.py{flag}`，{date}，{budget}{load}{copy}）；从 LLM 缓存重跑只需几秒；使用 DeepSeek：未测（编写课程的地方没有网络）"
)
BUDGET = {
    "en": ("within the 10-minute budget", "over the 10-minute budget"),
    "zh": ("在 10 分钟预算以内", "超出 10 分钟的预算"),
}
LOAD = {
    "en": "; the machine was busy (load average {load:.1f} before the run)",
    "zh": "；运行前机器繁忙（负载均值 {load:.1f}）",
}
ROW = {
    "en": re.compile(r"^# \| \*\*Time\*\* \| .* \|$", re.MULTILINE),
    "zh": re.compile(r"^# \| \*\*用时\*\* \| .* \|$", re.MULTILINE),
}
LABEL = {"en": "Time", "zh": "用时"}
# the CPU a run was measured on, when its results file records it (`benchmarks.common.machine`): two machines sold as
# one kind differ, and an AVX2-only CPU evaluates prompts at about half the speed of an AVX-512 one (README)
CPU = {"en": " ({name}, {kind})", "zh": "（{name}，{kind}）"}
KIND = {  # by the fastest build the CPU's recorded features allow (`runtime_build.build_variants`)
    "en": {"avx512": "AVX-512", "avx2": "AVX2, no AVX-512", "x86-64": "no AVX2"},
    "zh": {"avx512": "支持 AVX-512", "avx2": "只有 AVX2、没有 AVX-512", "x86-64": "没有 AVX2"},
}
SPEED = {
    "en": "; the model server evaluated {prompt:.0f} prompt / {generated:.0f} generated tokens per second",
    "zh": "；模型服务器每秒读入 {prompt:.0f} 个输入 token、生成 {generated:.0f} 个 token",
}
FIRST_USE = {"对话模型": "（chat model）"}  # the glossary's terms in the Chinese row, glossed on a notebook's first use
# the "用时" row measured on the English copy (no run of the Chinese one yet) says so
ENGLISH_COPY = "；测的是英文版，中文版尚未单独实测"
BUSY_LOAD = 2.6  # the benchmark's own model server and kernel keep two cores at about 2


def measurements(results: Path = RESULTS, language: str = "en") -> dict[str, dict]:
    """The most recent passing measurement of each notebook's copy in `language` (later files and later rows win;
    a row that names no language measured the English copy)."""
    rows: list[tuple[str, float, dict]] = []
    for path in sorted(results.glob("notebooks*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for position, row in enumerate(data.get("notebooks", [])):
            if row.get("passed") and row.get("language", "en") == language:
                # the file names the notebooks that ran in one cache folder; its machine record, the CPU
                row = {**row, "run": path.stem, "cpu": data.get("machine", {}).get("cpu")}
                rows.append((str(row.get("started", "")), path.stat().st_mtime + position / 1000, row))
    latest: dict[str, dict] = {}
    for _, _, row in sorted(rows, key=lambda item: (item[0], item[1])):
        latest[row["notebook"]] = row
    return latest


def _date(started: str, language: str) -> str:
    day = started.split(" ")[0]
    year, month, date = (int(part) for part in day.split("-"))
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    return f"{date} {months[month - 1]} {year}" if language == "en" else f"{year} 年 {month} 月 {date} 日"


def cpu_text(cpu: dict | None, language: str) -> str:
    """The CPU a measurement ran on, as the Time row names it ("" when the results file did not record it)."""
    from lessons.core.runtime_build import build_variants

    if not cpu:
        return ""
    features = frozenset(cpu.get("vector_features", "").split())
    fastest = build_variants(features, machine="x86_64")[0].name
    return CPU[language].format(name=cpu.get("model_name", "?"), kind=KIND[language][fastest])


def speed_text(speed: dict | None, language: str) -> str:
    """The model server's speed during the run, as the Time row states it ("" when the row did not record it)."""
    speed = speed or {}
    if not (speed.get("prompt_tok_per_s") and speed.get("generation_tok_per_s")):
        return ""
    return SPEED[language].format(prompt=speed["prompt_tok_per_s"], generated=speed["generation_tok_per_s"])


def row_text(row: dict, language: str, before: str = "") -> str:
    """The Time row's cell for one measurement, in `language`. A glossary term of the Chinese row that the
    Chinese text `before` the row has not used yet gets its English on this first use (docs/GLOSSARY.zh.md).
    A Chinese row rendered from a run of the English copy says so."""
    seconds = float(row["seconds"])
    load = row.get("load_average_before")
    measured_zh = row.get("language", "en") == "zh"
    text = (EN if language == "en" else ZH).format(
        cpu=cpu_text(row.get("cpu"), language),
        speed=speed_text(row.get("server_speed"), language),
        flag=" --zh" if measured_zh else "",
        copy="" if measured_zh else ENGLISH_COPY,
        minutes=seconds / 60,
        seconds=seconds,
        calls=row.get("llm_calls", 0),
        date=_date(row["started"], language),
        budget=BUDGET[language][seconds > BUDGET_SECONDS],
        load=LOAD[language].format(load=load) if load is not None and load > BUSY_LOAD else "",
    )
    if language == "zh":
        for term, gloss in FIRST_USE.items():
            if term not in before:
                text = text.replace(term, term + gloss, 1)
    return text


CELL = re.compile(r"^# %%.*$", re.MULTILINE)


def chinese_before(text: str, position: int) -> str:
    """The Markdown of the master's Chinese twins up to `position`, as the Chinese notebook shows it before that
    point (code blocks left out, as the glossary's first-use test leaves them out)."""
    head, chinese = text[:position], []
    starts = [match.start() for match in CELL.finditer(head)]
    for start, end in zip(starts, [*starts[1:], len(head)], strict=True):
        cell = head[start:end]
        if 'lang="zh"' in cell.partition("\n")[0]:
            chinese.append(cell)
    return re.sub(r"```.*?```", "", "\n".join(chinese), flags=re.DOTALL)


def _front_matter_source(path: Path) -> str | None:
    from scripts.notebooks import parse

    return next(
        (
            c.cell.source
            for c in parse(path)[1]
            if c.cell.cell_type == "markdown" and f"| **{LABEL['en']}** |" in c.cell.source
        ),
        None,
    )


def update_master(path: Path, row: dict, zh_row: dict | None = None) -> str:
    """The master's text with its Time row(s) rendered from `row` (the "用时" row from `zh_row`, the Chinese copy's
    run, when there is one), and the Chinese twin's hash renewed when the twin was up to date with the old English
    (a twin already stale stays stale)."""
    from scripts.notebooks import source_hash

    text = path.read_text(encoding="utf-8")
    before = _front_matter_source(path)
    for language in ("en", "zh"):
        found = ROW[language].search(text)
        if found is None:
            continue
        measured = zh_row if language == "zh" and zh_row is not None else row
        cell = f"# | **{LABEL[language]}** | {row_text(measured, language, chinese_before(text, found.start()))} |"
        text = text[: found.start()] + cell + text[found.end() :]
    if before is None:
        return text
    scratch = path.with_name(f".{path.stem}.time-rows.py")
    scratch.write_text(text, encoding="utf-8")
    try:
        after = _front_matter_source(scratch)
    finally:
        scratch.unlink()
    old, new = f'translates="{source_hash(before)}"', f'translates="{source_hash(after)}"'
    return text.replace(old, new, 1)


FACILITATOR = ROOT / "docs" / "FACILITATOR.md"


def facilitator_cell(row: dict) -> str:
    """The agenda's "cold, full size" cell of docs/FACILITATOR.md for one measurement."""
    seconds = float(row["seconds"])
    load = row.get("load_average_before")
    return (
        f"**{seconds:.0f} s ({seconds / 60:.1f} min)** from an empty cache folder, {row.get('llm_calls', 0)} chat-model "
        f"calls ({row.get('cached_calls', 0)} repeats answered by the run's own cache), {row.get('input_tokens', 0):,} prompt / "
        f"{row.get('output_tokens', 0):,} generated tokens, checks {row.get('checks_passed', 0)}/{row.get('checks', 0)}; "
        f"{BUDGET['en'][seconds > BUDGET_SECONDS]}; load average {load} before; measured {row['started']}"
    )


SUMMARY = re.compile(r"see the agenda below: .*? — start it the evening before")


def course_summary(latest: dict[str, dict]) -> str:
    """The prewarm table's summary of the course notebooks 00–07: how many are within the budget, their sum."""
    course = {name: row for name, row in latest.items() if name[:2] <= "07"}
    seconds = [float(row["seconds"]) for row in course.values()]
    over = [f"{name[:2]} ({float(row['seconds']):.0f} s)" for name, row in sorted(course.items())
            if float(row["seconds"]) > BUDGET_SECONDS]  # fmt: skip
    days = list(dict.fromkeys(_date(r["started"], "en") for r in sorted(course.values(), key=lambda r: r["started"])))
    return (
        f"see the agenda below: {len(seconds) - len(over)} of {len(seconds)} notebooks within 10 min from an empty "
        f"cache folder{' (over: ' + ', '.join(over) + ')' if over else ''}, 00–07 ≈ {sum(seconds) / 60:.0f} min in all "
        f"(measured {', '.join(days)}; before the cross-encoder the course took ≈ 4½ h) — start it the evening before"
    )


TAKE_HOME = "06_evaluation"  # the agenda's demo or take-home; its rank among the course notebooks is rendered
RANK = re.compile(r"its cold run — \*\*\d+ s\*\*, the \w+ longest of the \d+ notebooks 00–07 —")


def _ordinal(number: int) -> str:
    return f"{number}{'th' if 10 <= number % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th')}"


def take_home_rank(latest: dict[str, dict]) -> str | None:
    """Where the agenda's take-home notebook's cold run ranks among the measured notebooks 00–07 (longest first)."""
    course = {name: float(row["seconds"]) for name, row in latest.items() if name[:2] <= "07"}
    if TAKE_HOME not in course:
        return None
    rank = 1 + sum(seconds > course[TAKE_HOME] for seconds in course.values())
    return f"its cold run — **{course[TAKE_HOME]:.0f} s**, the {_ordinal(rank)} longest of the {len(course)} notebooks 00–07 —"


def run_notebooks(row: dict) -> list[str] | None:
    """The notebook numbers the row's run named (its results file: `notebooks-00-01-…`, a word such as the CPU kind
    in `notebooks-avx2-00-01-…` left out); [] for a run of every notebook (`notebooks.json`), None for a row that
    does not say."""
    run = row.get("run", "")
    if run == "notebooks":
        return []
    if not run.startswith("notebooks-"):
        return None
    return [part for part in run.removeprefix("notebooks-").split("-") if part[:2].isdigit()]


def bench_command(row: dict, notebook: str) -> str:
    """The benchmark command that measured the row."""
    numbers = run_notebooks(row)
    arguments = notebook[:2] if numbers is None else " ".join(numbers)
    return f"`python benchmarks/bench_notebooks.py{' ' + arguments if arguments else ''}`"


def shared_folder(row: dict) -> str:
    """A notebook measured after others in the same fresh folder found their indexes and caches there."""
    numbers = run_notebooks(row)
    if numbers is not None and len(numbers) != 1:
        return "one fresh cache folder for the notebooks in order"
    return "a fresh cache folder"


def update_facilitator(text: str, latest: dict[str, dict]) -> str:
    """The agenda rows of the facilitator guide with their cold-run cell (and how it was measured) rendered
    from the measurements, and the prewarm table's course summary; rows without a measurement are kept."""
    if latest:
        text = SUMMARY.sub(lambda _match: course_summary(latest), text, count=1)
    if (rank := take_home_rank(latest)) is not None:
        text = RANK.sub(lambda _match: rank, text, count=1)
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        match = re.match(r"^\| `(\d\d_[a-z_]+)` \| (.*?) \| (.*?) \| (.*?) \| (.*?) \|\s*$", line)
        if not match or match.group(1) not in latest:
            continue
        row = latest[match.group(1)]
        how = f"{bench_command(row, match.group(1))}, {_date(row['started'], 'en')}, {shared_folder(row)}"
        lines[number] = (
            f"| `{match.group(1)}` | {facilitator_cell(row)} | {match.group(3)} | {how} | {match.group(5)} |\n"
        )
    return "".join(lines)


def render(write: bool = False, say=print) -> list[str]:
    """The masters (by stem) and docs/FACILITATOR.md whose rows differ from the measurements; with `write`, each
    is rewritten."""
    latest, chinese, stale = measurements(), measurements(language="zh"), []
    for path in sorted((ROOT / "masters").glob("*.py")):
        row = latest.get(path.stem)
        if row is None:
            say(f"{path.stem}: no measurement in {RESULTS.relative_to(ROOT)}; row kept")
            continue
        text = update_master(path, row, chinese.get(path.stem))
        if text != path.read_text(encoding="utf-8"):
            stale.append(path.stem)
            if write:
                path.write_text(text, encoding="utf-8")
        say(f"{path.stem}: {row['seconds']:.0f} s, {row.get('llm_calls', 0)} calls ({row['started']})")
    guide = FACILITATOR.read_text(encoding="utf-8") if FACILITATOR.exists() else None
    if guide is not None and update_facilitator(guide, latest) != guide:
        stale.append("docs/FACILITATOR.md")
        if write:
            FACILITATOR.write_text(update_facilitator(guide, latest), encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a master's row differs from its measurement")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    stale = render(write=not args.check)
    if args.check:
        if stale:
            print("Time rows differ from the measurements: " + ", ".join(stale) + " — run python -m scripts.time_rows")
        return 1 if stale else 0
    if stale:
        from scripts.notebooks import sync

        sync(ROOT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
