"""A learner's first Run All: every notebook at its default size with an EMPTY LLM cache, timed.

    python benchmarks/bench_notebooks.py                       # every solutions/ notebook, in order
    python benchmarks/bench_notebooks.py 02_retrieval_tricks   # some of them
    python benchmarks/bench_notebooks.py --zh 02               # the Chinese learner copies (notebooks/zh/)
    python benchmarks/bench_notebooks.py --quick               # what the test suite's notebook runs cost

The run starts from an EMPTY cache folder (`AGENTIC_RAG_CACHE_DIR` pointing at a new temporary folder):
no LLM answers, no QA pairs, no converted documents, no embeddings, no Chroma index — a learner's first
Run All of the course, notebook after notebook in order, each in a fresh kernel (answers repeated
within the run come from the run's own cache, as on a learner's machine; a notebook's time includes
building what no earlier notebook built). It starts its own local model server and stops it at the end.
The budget the course holds itself to: ≤ 10 min per notebook, ≤ 30 min for the whole course (00–08), on 2
cores. Run it on an idle machine: another busy process on two cores changes everything.
The Chinese copies (`--zh`) make their own chat-model calls (Chinese prompts, Chinese questions) and keep their
exercises blank, as a Chinese learner's first Run All does; their rows carry `"language": "zh"` and render the
"用时" rows (`scripts.time_rows`).
`--quick` measures the test suite instead of a learner: every solutions/ notebook, then every Chinese copy, at their
quick sizes (the notebooks' `quick_parameters`), in ONE empty cache folder and in the order `tests/test_notebooks.py`
runs them — so a Chinese copy's calls that its English copy already made come from the cache, as in CI. Its rows go
to benchmarks/results/test-suite-notebooks….json, which the Time rows never read (`scripts.time_rows` reads
notebooks*.json: a learner's first Run All).
Writes benchmarks/results/notebooks.json (notebooks-zh….json for `--zh`); BENCH_NOTEBOOKS_OUT=<folder> keeps the executed notebooks there.
Each row also carries the speed the local model server itself reported while that notebook ran
(`server_speed`, read from the server's log): the same notebook on a laptop twice as fast at prompts
takes about half its chat-model time, so a reader can scale the rows to their own machine.
"""

import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import save
from lessons.core.settings import PROJECT_ROOT
from tools.notebook_runner import execute_notebook, suite_order

BUDGET_SECONDS = 600
# the whole course, 00–08: the goal set after 00–07 measured 56.6 min from an empty cache
COURSE_BUDGET_SECONDS = 30 * 60


def load_average() -> float:
    return os.getloadavg()[0]


_PERF = re.compile(
    r"prompt eval time =\s*[\d.]+ ms /\s*(?P<prompt>\d+) tokens.*?"
    r"\n.*?eval time =\s*(?P<eval_ms>[\d.]+) ms /\s*(?P<runs>\d+) runs.*?"
    r"\n.*?total time =\s*(?P<total_ms>[\d.]+) ms",
)


def server_calls(log_text: str) -> list[dict[str, str]]:
    """Each call in a stretch of a llama-cpp-python server log: its prompt tokens evaluated (`prompt`), generated
    tokens (`runs`), generation and total milliseconds (`eval_ms`, `total_ms`), in order."""
    return [m.groupdict() for m in _PERF.finditer(log_text)]


def server_speed(log_text: str) -> dict | None:
    """Prompt and generated tokens/s over every call in a llama-cpp-python server log (None: no call).

    llama-cpp-python evaluates the prompt outside the counter that llama.cpp labels "prompt eval time"
    (it reads ≈ 0 ms), so a call's prompt time is its total time less its generation ("eval") time;
    a prompt prefix the server reused from the previous call is not in the prompt count.
    """
    calls = server_calls(log_text)
    if not calls:
        return None
    prompt_tokens = sum(int(c["prompt"]) for c in calls)
    generated = sum(int(c["runs"]) for c in calls)
    eval_s = sum(float(c["eval_ms"]) for c in calls) / 1000
    prompt_s = sum(float(c["total_ms"]) for c in calls) / 1000 - eval_s
    return {
        "server_calls": len(calls),
        "prompt_tokens_evaluated": prompt_tokens,
        "prompt_tok_per_s": round(prompt_tokens / prompt_s, 1) if prompt_s > 0 else None,
        "generation_tok_per_s": round(generated / eval_s, 1) if eval_s > 0 else None,
    }


_PREFIX_HIT = re.compile(r"(\d+) prefix-match hit")


def server_tokens(log_text: str) -> dict:
    """The calls the model server answered in a stretch of its log and their tokens: prompt tokens evaluated, prompt
    tokens reused from the previous call's prefix (the server's prompt cache: not evaluated again), generated."""
    calls = server_calls(log_text)
    return {
        "server_calls": len(calls),
        "prompt_tokens_evaluated": sum(int(c["prompt"]) for c in calls),
        "prompt_tokens_reused": sum(int(hit) for hit in _PREFIX_HIT.findall(log_text)),
        "generated_tokens": sum(int(c["runs"]) for c in calls),
    }


def server_log_size() -> int:
    """How long the model server's log is now (`server_log_since` reads what comes after)."""
    from lessons.core.local_server import server_log_path

    path = server_log_path()
    return path.stat().st_size if path.exists() else 0


def server_log_since(offset: int) -> str:
    """What the server logged after `offset` (all of it when a restarted server began a new, shorter log)."""
    from lessons.core.local_server import server_log_path

    path = server_log_path()
    if not path.exists():
        return ""
    text = path.read_bytes()
    return text[offset if offset <= len(text) else 0 :].decode("utf-8", errors="replace")


FOLDERS = {"en": PROJECT_ROOT / "solutions", "zh": PROJECT_ROOT / "notebooks" / "zh"}


def select_notebooks(names: list[str], language: str = "en") -> list[Path]:
    """The notebooks of `language` (solutions/, or the Chinese learner copies) whose names start with one of `names`
    (all of them when none is given); a name that matches no notebook (a typo, `--help`) stops the run before
    anything is measured or written."""
    folder = FOLDERS[language]
    notebooks = sorted(folder.glob("*.ipynb"))
    unknown = [n for n in names if not any(p.stem.startswith(n) for p in notebooks)]
    if unknown:
        raise SystemExit(
            f"no notebook in {folder.relative_to(PROJECT_ROOT)}/ starts with {', '.join(map(repr, unknown))}: give the start of a notebook's "
            f"name ({', '.join(p.stem for p in notebooks)}), or nothing for all of them"
        )
    return [p for p in notebooks if not names or any(p.stem.startswith(n) for n in names)]


def suite_notebooks(names: list[str]) -> list[Path]:
    """The notebooks the test suite runs with a model, in its order (`tools.notebook_runner.suite_order`),
    those whose names start with one of `names`: every solutions/ notebook, then the Chinese copies (the English
    learner copies are left out: their calls all come from the solutions' cache)."""
    chosen = {*select_notebooks(names, "en"), *select_notebooks(names, "zh")}  # a wrong name stops the run here
    return [p for p in suite_order() if p in chosen]


def notebooks_to_run(names: list[str], language: str = "en", quick: bool = False) -> list[Path]:
    """What a run measures: the suite's notebooks for `quick`, else one language's (a wrong name stops it here)."""
    return suite_notebooks(names) if quick else select_notebooks(names, language)


def language_of(path: Path) -> str:
    """The language of a measured notebook: the key of the `FOLDERS` entry it lives in."""
    return next(language for language, folder in FOLDERS.items() if path.parent == folder)


def main(names: list[str], name: str = "notebooks", language: str = "en", quick: bool = False) -> dict:
    notebooks = notebooks_to_run(names, language, quick)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENTIC_RAG_CACHE_DIR"] = str(Path(tmp) / "cache")
        os.environ.pop("AGENTIC_RAG_LLM_CACHE_FILE", None)
        for path in notebooks:
            load_before = load_average()
            log_offset = server_log_size()
            started = time.time()
            run = execute_notebook(
                path, quick=quick, out_dir=Path(os.environ.get("BENCH_NOTEBOOKS_OUT") or Path(tmp) / "executed")
            )
            rows.append(
                {
                    "notebook": path.stem,
                    "language": language_of(path),
                    "quick": quick,
                    "passed": run.passed,
                    "seconds": round(run.seconds, 1),
                    **({} if quick else {"within budget": run.seconds <= BUDGET_SECONDS}),  # a learner's 10 minutes
                    "llm_calls": run.llm_calls,
                    "cached_calls": run.cached_calls,
                    "input_tokens": run.input_tokens,
                    "output_tokens": run.output_tokens,
                    "checks_passed": sum(c["passed"] for c in run.checks),
                    "checks": len(run.checks),
                    "load_average_before": round(load_before, 2),
                    "load_average_after": round(load_average(), 2),
                    "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
                    "server_speed": server_speed(server_log_since(log_offset)),
                    "error": (run.error or "")[:500] or None,
                    "slowest cells": run.slowest_cells,
                }
            )
            print(
                f"{path.parent.name}/{path.stem}: {'passed' if run.passed else 'FAILED'} in {run.seconds:.0f} s, "
                f"{run.llm_calls} calls "
                f"({run.cached_calls} from this run's cache), load {load_before:.1f}",
                flush=True,
            )
            save(name, {"notebooks": rows, "complete": False})  # what is measured so far survives an interrupted run
        from lessons.core.local_server import stop_server
        from lessons.core.settings import get_settings

        get_settings.cache_clear()
        stop_server()
    total = sum(r["seconds"] for r in rows)
    print(f"total {total / 60:.1f} min" + ("" if quick else f" (budget {COURSE_BUDGET_SECONDS / 60:.0f} min)"))
    os.environ.pop("AGENTIC_RAG_CACHE_DIR", None)
    return {
        "notebooks": rows,
        "complete": True,
        "total_seconds": round(total, 1),
        "budget_seconds_per_notebook": BUDGET_SECONDS,
        "budget_seconds_course": COURSE_BUDGET_SECONDS,
    }


def results_name(names: list[str], language: str, quick: bool = False) -> str:
    """The results file of a run: notebooks[-zh][-names…], or test-suite-notebooks[-names…] for `--quick`."""
    if quick:
        return "-".join(["test-suite-notebooks", *names])
    return "-".join(["notebooks", *(["zh"] if language == "zh" else []), *names])


def parse(arguments: list[str]) -> tuple[list[str], str, bool]:
    """(names, language, quick) from the command line; `--zh` with `--quick` stops (the suite runs both languages)."""
    language = "zh" if "--zh" in arguments else "en"
    quick = "--quick" in arguments
    if quick and language == "zh":
        raise SystemExit("--quick measures both languages in the test suite's order: drop --zh")
    return [a for a in arguments if a not in ("--zh", "--quick")], language, quick


if __name__ == "__main__":
    names, language, quick = parse(sys.argv[1:])
    notebooks_to_run(names, language, quick)  # a wrong name stops here, before a results file named after it is written
    name = results_name(names, language, quick)
    save(name, main(names, name, language, quick))
