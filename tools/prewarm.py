"""Pre-warm a machine before a workshop: do every slow thing once, so nobody in the room waits.

Used by facilitators (`make prewarm`, see docs/FACILITATOR.md); no notebook imports it. The steps:

| step | what it does | slow because |
|---|---|---|
| `install` | `scripts/setup.sh`: the packages, llama.cpp's server built from source | a C++ compile: minutes on 2 cores |
| `model` | assemble the packaged GGUF and verify its SHA-256 in full | 1.1 GB |
| `corpus` | convert the knowledge base with Docling (cached as JSON) | every page through Docling |
| `kb-index` | chunk the knowledge base and embed it into the Chroma collection `kb` | every chunk embedded |
| `notebook:NN_…` | execute each notebook at full size: 01's strategy indexes, 03's QA index, and the LLM cache for every fixed cell | hours from an empty cache with the local model on 2 cores (docs/FACILITATOR.md has the measurement) |

Each step is keyed by a content hash of its inputs (the `lessons/` sources, `data/`, the notebook,
the model's SHA-256, the settings that change results). Keys and results go to a JSON stamp,
`<cache_dir>/prewarm/stamp.json`; a step whose key is unchanged and whose output is still there is
skipped, so a second run reports "nothing to do" in seconds. A notebook is deterministic (temperature
0, fixed seed) and the LLM cache is keyed by the request, so the room's runs of the fixed cells are
answered from the cache.

    python -m tools.prewarm                      # everything (progress bar, then the ready report)
    python -m tools.prewarm --skip-notebooks     # install, model, corpus, kb-index only
    python -m tools.prewarm --only corpus,kb-index
    python -m tools.prewarm --list               # each step and whether it is up to date
    python -m tools.prewarm --force              # run the selected steps even when up to date
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lessons.core.settings import PROJECT_ROOT, Settings, get_settings

STAMP_VERSION = 1
NOTEBOOK_PREFIX = "notebook:"


class PrewarmError(RuntimeError):
    """The pre-warm cannot go on; the message names the file or option and the fix."""


@dataclass
class Step:
    """One slow thing to do once.

    `inputs()` returns a JSON-serialisable description of everything the result depends on (file
    hashes, settings); its hash is the step's key. `run()` does the work and returns a one-line
    detail for the report, raising on failure. `not_needed()` returns a reason when the step does not
    apply on this machine (e.g. no local model with DeepSeek). `outputs_present()` says whether what
    the step built is still on disk (a deleted cache re-runs the step even with the same key).
    `prerequisite` steps stop the run when they fail; a failed notebook does not stop the others.
    """

    name: str
    description: str
    inputs: Callable[[], Any]
    run: Callable[[], str]
    not_needed: Callable[[], str | None] = lambda: None
    outputs_present: Callable[[], bool] = lambda: True
    prerequisite: bool = True


@dataclass
class StepResult:
    name: str
    description: str
    status: str  # built | up to date | not needed | FAILED | not run
    seconds: float = 0.0
    detail: str = ""
    finished: str | None = None  # when the result was built (for "up to date": the earlier run)


@dataclass
class PrewarmReport:
    results: list[StepResult]
    seconds: float
    disk: dict[str, int] = field(default_factory=dict)  # label → bytes
    stamp_path: str = ""

    @property
    def ok(self) -> bool:
        return all(r.status in ("built", "up to date", "not needed") for r in self.results)

    @property
    def nothing_to_do(self) -> bool:
        return all(r.status in ("up to date", "not needed") for r in self.results)

    def markdown(self) -> str:
        """The ready report: per step built/skipped, seconds and detail; disk used; the verdict."""
        lines = ["| step | status | seconds | detail |", "|---|---|---:|---|"]
        for r in self.results:
            seconds = (
                f"{r.seconds:.1f}"
                if r.status == "built"
                else (f"({r.seconds:.1f} on {r.finished})" if r.status == "up to date" and r.finished else "")
            )
            lines.append(f"| {r.name} | {r.status} | {seconds} | {r.detail.replace('|', '/')} |")
        lines += ["", "| disk used | size |", "|---|---:|"]
        lines += [f"| {label} | {human_bytes(size)} |" for label, size in self.disk.items()]
        lines.append("")
        if not self.ok:
            failed = [r.name for r in self.results if r.status == "FAILED"]
            lines.append(
                f"NOT READY: {', '.join(failed)} failed ({self.seconds:.1f} s). Fix the error above and run "
                "`make prewarm` again: finished steps are kept."
            )
        elif self.nothing_to_do:
            lines.append(f"READY — nothing to do: every step was already built ({self.seconds:.1f} s to check).")
        else:
            built = sum(r.status == "built" for r in self.results)
            lines.append(f"READY — built {built} step(s) in {self.seconds:.1f} s; a second run does nothing.")
        return "\n".join(lines) + "\n"


# --- hashing and disk usage -------------------------------------------------------------------------


def hash_files(paths: Iterable[Path], root: Path = PROJECT_ROOT) -> str:
    """SHA-256 over the relative paths and bytes of `paths` (folders are walked), in a stable order."""
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            files.extend(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        elif path.is_file():
            files.append(path)
    digest = hashlib.sha256()
    for file in sorted(set(files)):
        name = str(file.relative_to(root)) if file.is_relative_to(root) else str(file)
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def step_key(inputs: Any) -> str:
    """The key of a step: a hash of its inputs' JSON."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def disk_usage(path: Path) -> int:
    """Bytes used by the files under `path` (0 when it does not exist); symbolic links are not followed."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                stat = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            total += stat.st_size
    return total


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


# --- the stamp ----------------------------------------------------------------------------------------


def stamp_path(settings: Settings | None = None) -> Path:
    """Where the pre-warm stamp lives: `<cache_dir>/prewarm/stamp.json`."""
    return (settings or get_settings()).cache_dir / "prewarm" / "stamp.json"


def read_stamp(path: Path) -> dict[str, dict[str, Any]]:
    """The recorded steps (name → key, seconds, detail, finished); empty when there is no stamp yet."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if (
            not isinstance(data, dict)
            or data.get("version") != STAMP_VERSION
            or not isinstance(data.get("steps"), dict)
        ):
            raise ValueError(f"expected {{'version': {STAMP_VERSION}, 'steps': {{...}}}}")
    except ValueError as error:
        raise PrewarmError(
            f"{path} is not a pre-warm stamp this version can read ({error}). Delete it and run `make prewarm` "
            "again: steps whose outputs are cached finish quickly."
        ) from None
    return data["steps"]


def write_stamp(path: Path, steps: dict[str, dict[str, Any]]) -> None:
    """Write the stamp atomically (a crash never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps({"version": STAMP_VERSION, "steps": steps}, indent=2, sort_keys=True))
    os.replace(tmp, path)


# --- running ------------------------------------------------------------------------------------------


def select_steps(steps: Sequence[Step], only: Sequence[str] = (), skip_notebooks: bool = False) -> list[Step]:
    """The steps to consider: `only` names steps (or `notebooks` for every notebook step), in run order."""
    names = [s.name for s in steps]
    chosen = list(steps)
    if only:
        wanted = set()
        for name in only:
            if name == "notebooks":
                wanted |= {n for n in names if n.startswith(NOTEBOOK_PREFIX)}
            elif name in names:
                wanted.add(name)
            elif NOTEBOOK_PREFIX + name in names:
                wanted.add(NOTEBOOK_PREFIX + name)
            else:
                raise PrewarmError(f"--only {name!r}: no such step. Steps: {', '.join(names)} (or 'notebooks')")
        chosen = [s for s in steps if s.name in wanted]
    if skip_notebooks:
        chosen = [s for s in chosen if not s.name.startswith(NOTEBOOK_PREFIX)]
    return chosen


def step_status(step: Step, recorded: dict[str, Any] | None) -> tuple[str, str | None]:
    """('not needed', reason) | ('up to date', None) | ('to do', why) for one step, without running it."""
    reason = step.not_needed()
    if reason:
        return "not needed", reason
    if recorded is None:
        return "to do", "never built"
    if recorded.get("key") != step_key(step.inputs()):
        return "to do", "inputs changed"
    if not step.outputs_present():
        return "to do", "outputs missing"
    return "up to date", None


def prewarm(
    steps: Sequence[Step],
    *,
    stamp: Path | None = None,
    force: bool = False,
    progress: bool = True,
    disk: dict[str, Path] | None = None,
) -> PrewarmReport:
    """Run every step that is not up to date, with a progress bar; record each success in the stamp at once."""
    from tqdm.auto import tqdm

    stamp = Path(stamp or stamp_path())
    recorded = read_stamp(stamp)
    started = time.perf_counter()
    results: list[StepResult] = []
    stopped_by: str | None = None
    bar = tqdm(total=len(steps), desc="pre-warm", unit="step", disable=not progress, file=sys.stdout)
    try:
        for step in steps:
            bar.set_postfix_str(step.name)
            previous = recorded.get(step.name)
            if stopped_by:
                results.append(StepResult(step.name, step.description, "not run", detail=f"{stopped_by} failed first"))
                bar.update()
                continue
            status, why = step_status(step, previous)
            if status == "not needed":
                results.append(StepResult(step.name, step.description, status, detail=why or ""))
            elif status == "up to date" and not force:
                results.append(
                    StepResult(
                        step.name,
                        step.description,
                        status,
                        previous.get("seconds", 0.0),
                        previous.get("detail", ""),
                        previous.get("finished"),
                    )
                )
            else:
                key = step_key(step.inputs())
                bar.write(
                    f"→ {step.name}: {step.description} ({'forced' if force and status == 'up to date' else why})"
                )
                t0 = time.perf_counter()
                try:
                    detail = step.run()
                except Exception as error:  # noqa: BLE001 - reported per step; the run goes on or stops cleanly
                    seconds = time.perf_counter() - t0
                    message = f"{type(error).__name__}: {error}"
                    bar.write(f"✗ {step.name} failed after {seconds:.1f} s — {message}")
                    results.append(
                        StepResult(step.name, step.description, "FAILED", seconds, message.splitlines()[0][:300])
                    )
                    if step.prerequisite:
                        stopped_by = step.name
                else:
                    seconds = time.perf_counter() - t0
                    finished = time.strftime("%Y-%m-%d %H:%M")
                    recorded[step.name] = {
                        "key": key,
                        "seconds": round(seconds, 1),
                        "detail": detail,
                        "finished": finished,
                    }
                    write_stamp(stamp, recorded)
                    bar.write(f"✓ {step.name} in {seconds:.1f} s — {detail}")
                    results.append(StepResult(step.name, step.description, "built", seconds, detail, finished))
            bar.update()
    finally:
        bar.close()
    disk_paths = disk if disk is not None else default_disk_paths()
    report = PrewarmReport(
        results,
        time.perf_counter() - started,
        {label: disk_usage(path) for label, path in disk_paths.items()},
        str(stamp),
    )
    report_path = stamp.with_name("report")
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.with_suffix(".md").write_text(report.markdown())
    report_path.with_suffix(".json").write_text(
        json.dumps(
            {"seconds": report.seconds, "ok": report.ok, "disk": report.disk, "results": [asdict(r) for r in results]},
            indent=2,
        )
    )
    return report


def default_disk_paths(settings: Settings | None = None) -> dict[str, Path]:
    """What a workshop machine keeps: caches and indexes, the assembled model, the virtual environment."""
    settings = settings or get_settings()
    return {
        f"caches, indexes, LLM cache ({settings.cache_dir})": settings.cache_dir,
        f"assembled model ({settings.model_dir})": settings.model_dir,
        f"virtual environment ({PROJECT_ROOT / '.venv'})": PROJECT_ROOT / ".venv",
    }


# --- the course's steps -------------------------------------------------------------------------------


def _lessons_hash(root: Path) -> str:
    """The course code that notebooks run (this module excluded: editing the pre-warm rebuilds nothing)."""
    return hash_files([p for p in sorted((root / "lessons").glob("*.py")) if p.name != "prewarm.py"], root)


def _settings_inputs(settings: Settings) -> dict[str, Any]:
    """The settings that change what gets built or cached (not the API key itself, not the thread count)."""
    return {
        "chat model": model_identity(settings),
        "n_ctx": settings.n_ctx,
        "embedder": settings.embedder,
        "llm_cache": settings.llm_cache,
        "cache_dir": str(settings.cache_dir),
        "chroma_url": settings.chroma_url,
    }


def model_identity(settings: Settings) -> str:
    """Which chat model answers: DeepSeek's model name, an external server, a custom GGUF, or the packaged SHA-256."""
    from lessons.core.local_model import QWEN_CODER_1_5B

    if settings.uses_deepseek:
        return f"deepseek:{settings.deepseek_model}"
    if settings.server_url:
        return f"server:{settings.server_url}"
    if settings.gguf_path is not None:
        path = settings.gguf_path
        size = path.stat().st_size if path.is_file() else None
        return f"gguf:{path}:{size}"
    return f"packaged:{QWEN_CODER_1_5B.sha256}"


def _local_model_not_needed(settings: Settings) -> str | None:
    if settings.uses_deepseek:
        return "DeepSeek is the active model"
    if settings.server_url:
        return f"the course uses the server at {settings.server_url}"
    if settings.no_local:
        return "AGENTIC_RAG_NO_LOCAL=1"
    return None


def _setup_stamp_prefix(root: Path) -> str:
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes() + (root / "requirements.lock").read_bytes())
    return f".installed-{digest.hexdigest()[:16]}-"


def install_step(root: Path = PROJECT_ROOT) -> Step:
    """`scripts/setup.sh`: packages and the llama.cpp runtime (its own stamp makes a re-run take seconds)."""
    no_local = get_settings().no_local

    def installed() -> bool:
        # setup.sh leaves .venv/.installed-<hash of pyproject + lock>-<extras>, e.g. -local or -local,dev.
        prefix = _setup_stamp_prefix(root)
        extras = [p.name[len(prefix) :].split(",") for p in (root / ".venv").glob(prefix + "*")]
        return any(no_local or "local" in e for e in extras)

    def run() -> str:
        process = subprocess.run(
            ["bash", str(root / "scripts" / "setup.sh")], cwd=root, text=True, capture_output=True, check=False
        )
        if process.returncode != 0:
            raise PrewarmError(
                f"scripts/setup.sh failed (exit {process.returncode}):\n{(process.stdout + process.stderr)[-2000:]}"
            )
        if not no_local:
            import importlib.metadata

            return f"packages installed; llama-cpp-python {importlib.metadata.version('llama-cpp-python')}"
        return "packages installed (no local runtime: AGENTIC_RAG_NO_LOCAL=1)"

    return Step(
        "install",
        "install the packages and build the local model runtime",
        inputs=lambda: {
            "files": hash_files([root / "pyproject.toml", root / "requirements.lock"], root),
            "no_local": no_local,
            "python": platform.python_version(),
        },
        run=run,
        outputs_present=installed,
    )


def model_step(settings: Settings) -> Step:
    """Assemble the packaged GGUF (or check AGENTIC_RAG_GGUF) and verify its SHA-256 in full."""

    def run() -> str:
        from lessons.core.local_model import QWEN_CODER_1_5B, ModelFileError, resolve_local_model, sha256_of

        model = resolve_local_model(progress=True)
        size = model.path.stat().st_size
        if settings.gguf_path is not None:
            return f"{model.path} ({human_bytes(size)}, your own GGUF: no reference SHA-256 to check)"
        actual = sha256_of(model.path)
        if actual != QWEN_CODER_1_5B.sha256:
            raise ModelFileError(
                f"{model.path} has SHA-256 {actual}, expected {QWEN_CODER_1_5B.sha256}: delete it "
                "(and its .sha256 file) and run `make prewarm` again to re-assemble it."
            )
        return f"{model.path.name}, {human_bytes(size)}, SHA-256 verified ({actual[:12]}…)"

    def present() -> bool:
        from lessons.core.local_model import QWEN_CODER_1_5B

        if settings.gguf_path is not None:
            return settings.gguf_path.is_file()
        path = settings.model_dir / QWEN_CODER_1_5B.file_name
        return path.is_file() and path.stat().st_size == QWEN_CODER_1_5B.size

    return Step(
        "model",
        "assemble and verify the offline chat model",
        inputs=lambda: {"model": model_identity(settings), "model_dir": str(settings.model_dir)},
        run=run,
        not_needed=lambda: _local_model_not_needed(settings),
        outputs_present=present,
    )


def corpus_step(settings: Settings, root: Path = PROJECT_ROOT) -> Step:
    """Convert the knowledge base with Docling into the JSON conversion cache."""

    def run() -> str:
        from lessons.ingest.corpus import load_corpus

        result = load_corpus(progress=True)
        return result.summary().splitlines()[0]

    return Step(
        "corpus",
        "convert the knowledge base (Docling)",
        inputs=lambda: {
            "corpus": hash_files([root / "data" / "corpus"], root),
            "lessons": _lessons_hash(root),
            "cache_dir": str(settings.cache_dir),
        },
        run=run,
        outputs_present=lambda: (settings.cache_dir / "docling").is_dir(),
    )


def kb_index_step(settings: Settings, root: Path = PROJECT_ROOT) -> Step:
    """Chunk the knowledge base and embed it into the Chroma collection `kb` that notebooks 02–06 open."""

    def run() -> str:
        from lessons.core.vectorstore import index_documents, open_store
        from lessons.retrieval.index import chunk_knowledge_base

        chunks = chunk_knowledge_base()
        stats = index_documents(open_store("kb"), chunks, prune=True)
        return f"{len(chunks)} chunks in collection 'kb' ({stats})"

    return Step(
        "kb-index",
        "chunk and embed the knowledge base into Chroma",
        inputs=lambda: {
            "data": hash_files([root / "data"], root),
            "lessons": _lessons_hash(root),
            "embedder": settings.embedder,
            "cache_dir": str(settings.cache_dir),
            "chroma_url": settings.chroma_url,
        },
        run=run,
        outputs_present=lambda: bool(settings.chroma_url) or (settings.cache_dir / "chroma").is_dir(),
    )


def notebook_step(path: Path, settings: Settings, root: Path = PROJECT_ROOT, out_dir: Path | None = None) -> Step:
    """Execute one notebook at full size: it builds its own indexes and fills the LLM cache for its cells."""
    path = Path(path)
    master = root / "solutions" / path.name

    def run() -> str:
        from tools.notebook_runner import execute_notebook

        result = execute_notebook(path, quick=False, out_dir=out_dir or settings.cache_dir / "prewarm" / "executed")
        if not result.passed:
            raise PrewarmError(
                f"{path.name} failed at full size — open it in JupyterLab and run it to see the cell:\n"
                f"{(result.error or '')[-1500:]}"
            )
        return (
            f"{result.seconds:.0f} s, {result.llm_calls} LLM calls ({result.cached_calls} cached), "
            f"{result.input_tokens:,} / {result.output_tokens:,} tokens, model {result.model}"
        )

    return Step(
        NOTEBOOK_PREFIX + path.stem,
        f"run {path.name} at full size (indexes, LLM cache)",
        inputs=lambda: {
            "notebook": hash_files([path, master], root),
            "code": _lessons_hash(root) + hash_files(sorted((root / "checks").glob("*.py")), root),
            "data": hash_files([root / "data"], root),
            **_settings_inputs(settings),
        },
        run=run,
        prerequisite=False,
        outputs_present=lambda: not settings.llm_cache or (settings.cache_dir / "llm-cache.sqlite").is_file(),
    )


def default_steps(
    settings: Settings | None = None, root: Path = PROJECT_ROOT, notebook_dir: Path | None = None
) -> list[Step]:
    """Every step, in order: install, model, corpus, kb-index, then one per notebook (learner copies by default)."""
    settings = settings or get_settings()
    notebooks = sorted(Path(notebook_dir or root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise PrewarmError(
            f"no notebooks found in {notebook_dir or root / 'notebooks'} — run `make learner-notebooks` "
            "or pass --notebook-dir solutions"
        )
    return [
        install_step(root),
        model_step(settings),
        corpus_step(settings, root),
        kb_index_step(settings, root),
        *[notebook_step(p, settings, root) for p in notebooks],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.prewarm",
        description="Do every slow thing once before a workshop; a second run does nothing.",
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated steps, e.g. corpus,kb-index or notebooks or notebook:00_setup (see --list)",
    )
    parser.add_argument("--skip-notebooks", action="store_true", help="everything except the full notebook runs")
    parser.add_argument("--force", action="store_true", help="run the selected steps even when up to date")
    parser.add_argument("--list", action="store_true", help="show each step and whether it is up to date, run nothing")
    parser.add_argument(
        "--notebook-dir", default=None, help="notebooks to run (default: notebooks/, the learner copies)"
    )
    args = parser.parse_args(argv)
    try:
        steps = select_steps(
            default_steps(notebook_dir=Path(args.notebook_dir) if args.notebook_dir else None),
            [name.strip() for name in args.only.split(",") if name.strip()],
            args.skip_notebooks,
        )
        if args.list:
            recorded = read_stamp(stamp_path())
            for step in steps:
                status, why = step_status(step, recorded.get(step.name))
                print(f"{step.name:38} {status:11} {why or ''}")
            return 0
        report = prewarm(steps, force=args.force)
    except PrewarmError as error:
        print(f"pre-warm: {error}", file=sys.stderr)
        return 2
    print()
    print(report.markdown())
    print(f"Stamp: {report.stamp_path}; this report: {Path(report.stamp_path).with_name('report.md')}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
