"""Command line: compare RAG pipelines on your own documents, with the same evaluation as notebook 06.

Introduced in notebook 06 (evaluation).

    python -m lessons.evaluate --example > my_eval.toml     # a commented config to start from
    python -m lessons.evaluate my_eval.toml                 # run it: progress bar, then the report
    python -m lessons.evaluate my_eval.toml --limit 4       # a quick try on the first 4 questions

The config (TOML or JSON) names the documents folder, the questions ("gold" — the course's gold set,
"generate" — made from your chunks, or a .jsonl file) and the pipelines. Relative paths are relative
to the config file. The run writes `results.json`, `report.md`, `comparison.png` and the test set it
used into the output folder. Which model and which vector store are used is decided by settings
only (`.env` or the environment): `DEEPSEEK_API_KEY` / `AGENTIC_RAG_MODEL` for DeepSeek or the local
model, `AGENTIC_RAG_CHROMA_URL` for a Chroma server instead of the embedded store.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lessons.evaluation import K, RANK_K, UnknownPipeline, check_pipeline_names

EXAMPLE_CONFIG = """\
# Evaluate RAG pipelines on a folder of documents: python -m lessons.evaluate this_file.toml
# Relative paths are relative to this file.

documents = "data/corpus"      # a folder of .pdf .docx .pptx .html .md .txt files
questions = "generate"         # "generate" (from your chunks), "gold" (the course's gold set) or a .jsonl file
pipelines = ["dense", "hybrid", "hybrid+rerank", "qa-hybrid", "grading-loop"]  # also: "three-agents"
output = "runs/evaluation"     # results.json, report.md, comparison.png, test_set.jsonl

[generate]                     # used when questions = "generate"
single = 6                     # questions from one chunk each
multi = 2                      # questions that need two chunks from different pages or documents
seed = 0

[sample]                       # used for "gold" or a file: how many questions to take (omit to take all)
in_kb = 8                      # answerable questions, half English and half Chinese
out_of_kb = 4                  # questions the documents cannot answer
seed = 0

[retrieval]
k = 3                          # chunks an answer is written from; hit@k and recall@k use it
rank_k = 10                    # depth of MRR and nDCG
rerank_candidates = 8          # hybrid candidates the LLM reranker reads
qa_chunks = 20                 # chunks that get generated QA pairs (evidence chunks first): one LLM call each
max_rounds = 3                 # grading loop: retrieval rounds before it abstains
"""

SECTIONS: dict[str, dict[str, type]] = {
    "": {"documents": str, "questions": str, "pipelines": list, "output": str, "collection": str},
    "generate": {"single": int, "multi": int, "seed": int},
    "sample": {"in_kb": int, "out_of_kb": int, "seed": int},
    "retrieval": {"k": int, "rank_k": int, "rerank_candidates": int, "qa_chunks": int, "max_rounds": int},
}


class ConfigError(ValueError):
    """A config file the evaluation cannot use; the message names the file, the key and the fix."""


@dataclass
class EvalConfig:
    path: Path
    documents: Path
    questions: str
    pipelines: list[str]
    output: Path
    collection: str | None = None
    generate: dict[str, int] = field(default_factory=lambda: {"single": 6, "multi": 2, "seed": 0})
    sample: dict[str, int] = field(default_factory=dict)
    retrieval: dict[str, int] = field(default_factory=dict)

    def setting(self, name: str, default: int) -> int:
        return int(self.retrieval.get(name, default))


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist — write one with `python -m lessons.evaluate --example > {path.name}`")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise ConfigError(f"{path}: not valid {kind} ({error}) — compare with `python -m lessons.evaluate --example`") from None


def _check_keys(path: Path, raw: dict[str, Any]) -> None:
    for key, value in raw.items():
        if key in SECTIONS and key and isinstance(value, dict):
            allowed = SECTIONS[key]
            for inner, inner_value in value.items():
                if inner not in allowed:
                    raise ConfigError(f"{path}: unknown key {inner!r} in [{key}] — allowed: {', '.join(allowed)}")
                if not isinstance(inner_value, allowed[inner]) or isinstance(inner_value, bool):
                    raise ConfigError(f"{path}: [{key}] {inner} = {inner_value!r} must be a whole number")
        elif key not in SECTIONS[""]:
            raise ConfigError(f"{path}: unknown key {key!r} — allowed: {', '.join([*SECTIONS[''], *list(SECTIONS)[1:]])}")
        elif not isinstance(value, SECTIONS[""][key]):
            raise ConfigError(f"{path}: {key} must be a {SECTIONS[''][key].__name__}, got {value!r}")


def load_config(path: str | Path) -> EvalConfig:
    """Read and check a config file; every problem is a `ConfigError` naming the file and the fix."""
    path = Path(path)
    raw = _read(path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a table of settings — compare with `python -m lessons.evaluate --example`")
    _check_keys(path, raw)
    for required in ("documents", "questions", "pipelines"):
        if required not in raw:
            raise ConfigError(f"{path}: missing {required!r} — see `python -m lessons.evaluate --example`")
    base = path.resolve().parent
    documents = (base / raw["documents"]).resolve()
    if not documents.is_dir():
        raise ConfigError(f"{path}: documents folder {documents} does not exist — set documents to a folder of "
                          ".pdf .docx .pptx .html .md .txt files")  # fmt: skip
    try:
        check_pipeline_names(raw["pipelines"], where=str(path))
    except UnknownPipeline as error:
        raise ConfigError(str(error)) from None
    questions = raw["questions"]
    if questions not in ("gold", "generate"):
        file = (base / questions).resolve()
        if not file.is_file():
            raise ConfigError(f"{path}: questions file {file} does not exist — give a .jsonl file, \"gold\" or \"generate\"")
        questions = str(file)
    return EvalConfig(
        path=path, documents=documents, questions=questions, pipelines=list(raw["pipelines"]),
        output=(base / raw.get("output", "runs/evaluation")).resolve(), collection=raw.get("collection"),
        generate={"single": 6, "multi": 2, "seed": 0, **raw.get("generate", {})},
        sample=dict(raw.get("sample", {})), retrieval=dict(raw.get("retrieval", {})),
    )  # fmt: skip


def collection_for(documents: Path) -> str:
    """The Chroma collection of a documents folder: the course's "kb" for the course corpus, else one per folder."""
    from lessons.corpus import CORPUS_DIR

    if documents.resolve() == CORPUS_DIR.resolve():
        return "kb"
    return "eval-" + hashlib.sha256(str(documents.resolve()).encode()).hexdigest()[:12]


def question_set(config: EvalConfig, chunks, llm, progress: bool = True):
    """The questions of a run: the gold set, a file, or generated from the chunks (sampled if asked)."""
    from lessons.testset import balanced_sample, from_gold, generate_test_set, load_test_set

    if config.questions == "generate":
        report = generate_test_set(llm, chunks, n_single=config.generate["single"], n_multi=config.generate["multi"],
                                   seed=config.generate["seed"], progress=progress)  # fmt: skip
        print(report)
        if not report.items:
            raise RuntimeError(f"no usable questions were generated from {config.documents} ({report}; generation "
                               "uses chunks of at least 200 characters): give a questions file instead")
        return report.items
    if config.questions == "gold":
        from lessons.corpus import load_gold

        items = from_gold(load_gold(), chunks)
    else:
        items = load_test_set(config.questions, chunks)
    if config.sample:
        items = balanced_sample(items, config.sample.get("in_kb", len(items)), config.sample.get("out_of_kb", 0),
                                config.sample.get("seed", 0))  # fmt: skip
    return items


def run(config: EvalConfig, *, limit: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Run one evaluation as configured; returns the paths written and the comparison table."""
    from lessons.evaluation import Resources, build_pipelines, compare, evaluate, plot_comparison, save_report
    from lessons.knowledge_base import build_index, chunk_knowledge_base
    from lessons.models import get_chat_model, model_banner
    from lessons.testset import qa_chunk_selection, save_test_set
    from lessons.usage import USAGE
    from lessons.vectorstore import store_location

    started = time.perf_counter()
    print(model_banner())
    print(f"vector store: {store_location()}")
    chunks = chunk_knowledge_base(folder=config.documents)
    collection = config.collection or collection_for(config.documents)
    store = build_index(chunks, collection)
    print(f"{len(chunks)} chunks from {config.documents} in collection {collection!r}")
    llm = get_chat_model()
    items = question_set(config, chunks, llm, progress)[: limit or None]
    config.output.mkdir(parents=True, exist_ok=True)
    save_test_set(items, config.output / "test_set.jsonl")
    k, rank_k = config.setting("k", K), config.setting("rank_k", RANK_K)
    resources = Resources(
        chunks=chunks, store=store, llm=llm, k=k, rank_k=rank_k,
        rerank_candidates=config.setting("rerank_candidates", 8), max_rounds=config.setting("max_rounds", 3),
        qa_chunks=qa_chunk_selection(chunks, items, config.setting("qa_chunks", 20)),
        qa_store_name=f"{collection}-qa", progress=progress,
    )  # fmt: skip
    pipelines = build_pipelines(config.pipelines, resources)
    print(f"{len(items)} questions × {len(pipelines)} pipelines: {', '.join(pipelines)}")
    rows = evaluate(pipelines, items, llm, chunks, k=k, rank_k=rank_k, progress=progress)
    table = compare(rows, k=k, rank_k=rank_k)
    meta = {"model": model_banner(), "vector store": store_location(), "documents": str(config.documents),
            "chunks": len(chunks), "questions": config.questions if config.questions in ("gold", "generate") else Path(config.questions).name,
            "pipelines": ", ".join(pipelines), "k": k, "rank_k": rank_k}  # fmt: skip
    json_path, md_path = save_report(config.output, rows, table, items, meta)
    figure = plot_comparison(table, k, rank_k)
    figure.savefig(config.output / "comparison.png", dpi=110)
    print(f"\nwrote {json_path}, {md_path} and {config.output / 'comparison.png'} in {time.perf_counter() - started:.0f} s")
    print(USAGE.report())
    return {"json": json_path, "markdown": md_path, "table": table, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lessons.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("config", nargs="?", help="the config file (.toml or .json)")
    parser.add_argument("--example", action="store_true", help="print a commented example config and exit")
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N questions")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (for logs)")
    args = parser.parse_args(argv)
    if args.example:
        print(EXAMPLE_CONFIG, end="")
        return 0
    if not args.config:
        parser.error("give a config file, or --example to print one")
    import matplotlib

    from lessons.models import ModelError
    from lessons.settings import SettingsError
    from lessons.testset import TestSetError

    matplotlib.use("Agg")
    try:
        result = run(load_config(args.config), limit=args.limit, progress=not args.no_progress)
    except (ConfigError, TestSetError, SettingsError, ModelError, ConnectionError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print()
    print(result["markdown"].read_text(encoding="utf-8").split("## Judge failures")[0].split("## Pipelines compared")[1].strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
