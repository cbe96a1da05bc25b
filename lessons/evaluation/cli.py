"""Command line: compare RAG pipelines on your own documents, with the same evaluation as notebook 06.

Introduced in notebook 06 (evaluation).

    python -m lessons.evaluation.cli --example > my_eval.toml     # a commented config to start from
    python -m lessons.evaluation.cli my_eval.toml                 # run it: progress bar, then the report
    python -m lessons.evaluation.cli my_eval.toml --limit 4       # a quick try on the first 4 questions
    python -m lessons.evaluation.cli --preset packages            # the second knowledge base (package READMEs), its gold set

The config (TOML or JSON) names the documents folder (or one document), the questions ("gold" — the course's
gold set, "generate" — made from your chunks, or a .jsonl file) and the pipelines. Relative paths are relative
to the config file. Every setting is checked before anything runs (names, types, bounds), and so is a questions
file, line by line (a question over `MAX_QUESTION_CHARS` is refused with its line); a local model server at
`AGENTIC_RAG_SERVER_URL` must answer before the documents are read; files of
the folder that cannot be read are listed with the reason and the rest is evaluated; a folder with
no readable file stops the run before any model call. The run writes `results.json`, `report.md`, `comparison.png` and the test set it
used into the output folder (and `gate_calibration.json` and `gate.json` when it calibrates the gate). Which model and which vector store are used is decided by settings
only (`.env` or the environment): `DEEPSEEK_API_KEY` / `AGENTIC_RAG_MODEL` for DeepSeek or the local
model, `AGENTIC_RAG_CHROMA_URL` for a Chroma server instead of the embedded store.

`[rerank]` sets the course's reranker for `hybrid+rerank` and the grading loop — `first_stage_weight` (its rank's fusion
with the first stage's: 0 is the cross-encoder's order alone) and `cross_lingual` (the route for a question none of
whose candidates is in its language) — so that plain `hybrid`, the default and its variants are compared on your
documents; the report names the reranker it used.

The grading loop's gate uses thresholds calibrated on the course corpus (`lessons.agents.grading.DEFAULT_GATE`,
from benchmarks/bench_gate.py); on any other documents the report says so plainly
(`lessons.evaluation.threshold_note`) — they are thresholds from elsewhere (notebook 06, section 8, shows how far
they travel). `[gate] calibrate = N` calibrates them on your documents instead: N questions of the test set
that are not evaluated (answerable ones and near misses — questions about your documents that they do not
answer, `"type": "out_of_kb"` in a questions file), one chat-model call per chunk the gate grades; the report
says what they were calibrated on and what they refuse there, and `gate.json` in the output folder holds them:
`AGENTIC_RAG_GATE_FILE=<output>/gate.json` makes later evaluations and the service's `/v1/ask` use them.
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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lessons.core.i18n import N_, argparse_in_course_language, for_reader, t, t_marked
from lessons.evaluation.pipelines import RANK_K, K, UnknownPipeline, check_pipeline_names

EXAMPLE_CONFIG = N_("""\
# Evaluate RAG pipelines on a folder of documents: python -m lessons.evaluation.cli this_file.toml
# Relative paths are relative to this file.

documents = "data/corpus"      # a folder of .pdf .docx .pptx .html .md .txt files
questions = "generate"         # "generate" (from your chunks), "gold" (the course's gold set) or a .jsonl file
pipelines = ["dense", "hybrid", "hybrid+rerank", "qa-hybrid", "grading-loop"]  # also: "three-agents",
#   "filtered+rerank", "routed+rerank", and "graph+rerank" / "raptor+rerank" (built with the chat model first)
# corpus = "packages"          # a knowledge base that ships with the course ("course" or "packages"): its folder is
#                              # read through its manifest, its chunks are the course's, "gold" means its gold set
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
rerank_candidates = 20         # hybrid candidates the reranker reads (a cross-encoder: no LLM calls)
qa_chunks = 20                 # chunks that get generated QA pairs (evidence chunks first): one LLM call each
max_rounds = 3                 # grading loop: retrieval rounds before it abstains

# [rerank]                     # the course's reranker in "hybrid+rerank" and the grading loop: try variants on your
#                              # documents ("hybrid" in pipelines is its input, the first stage alone)
# first_stage_weight = 0.2     # the first stage's share when its rank is fused with the cross-encoder's (RRF):
#                              # 0 = the cross-encoder's order alone, 1 = hybrid's order (default: 0.2)
# cross_lingual = true         # a question none of whose candidates is in its language is reordered by the
#                              # multilingual embedder (default: true; false keeps its language's route)

# [gate]                       # the grading loop's gate (default: thresholds calibrated on the course corpus)
# calibrate = 24               # calibrate it on 24 questions of the test set that are not evaluated (a third
#                              # out-of-KB; needs near misses: a gold set or a .jsonl file, not "generate")
# seed = 0

# [limits]                     # size limits of the documents (defaults: 25 MiB per file, 200 MiB in all)
# max_file_bytes = 27262976    # 26 MiB
# max_total_bytes = 209715200  # 200 MiB
""")

# (lowest, highest) allowed value of every numeric setting, by section and key: the bounds of the models below
BOUNDS: dict[str, dict[str, tuple[int, int]]] = {
    "generate": {"single": (0, 1000), "multi": (0, 1000), "seed": (0, 2**32 - 1)},
    "sample": {"in_kb": (0, 100_000), "out_of_kb": (0, 100_000), "seed": (0, 2**32 - 1)},
    "retrieval": {"k": (1, 50), "rank_k": (1, 1000), "rerank_candidates": (1, 100), "qa_chunks": (1, 100_000),
                  "max_rounds": (1, 10)},
    "gate": {"calibrate": (0, 100_000), "seed": (0, 2**32 - 1)},
    "limits": {"max_file_bytes": (1, 2**40), "max_total_bytes": (1, 2**40)},
}  # fmt: skip


def _bounded(section: str, key: str):
    """A whole-number setting bounded as `BOUNDS` says. Left out, it is None (the run's default applies); a null
    written in a JSON config is not a whole number and is refused (pydantic does not validate a default)."""
    low, high = BOUNDS[section][key]
    return Field(None, ge=low, le=high)


class _Section(BaseModel):
    """A [section] of the config: only its own keys, whole numbers only (no floats, no true/false)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class GenerateSection(_Section):
    single: int = _bounded("generate", "single")
    multi: int = _bounded("generate", "multi")
    seed: int = _bounded("generate", "seed")


class SampleSection(_Section):
    in_kb: int = _bounded("sample", "in_kb")
    out_of_kb: int = _bounded("sample", "out_of_kb")
    seed: int = _bounded("sample", "seed")


class RetrievalSection(_Section):
    k: int = _bounded("retrieval", "k")
    rank_k: int = _bounded("retrieval", "rank_k")
    rerank_candidates: int = _bounded("retrieval", "rerank_candidates")
    qa_chunks: int = _bounded("retrieval", "qa_chunks")
    max_rounds: int = _bounded("retrieval", "max_rounds")


class RerankSection(_Section):
    """[rerank]: the course's reranker as `hybrid+rerank` and the grading loop use it (`reranker_by_name`)."""

    first_stage_weight: float = Field(None, ge=0.0, le=1.0)
    cross_lingual: bool = None


class GateSection(_Section):
    calibrate: int = _bounded("gate", "calibrate")
    seed: int = _bounded("gate", "seed")


class LimitsSection(_Section):
    max_file_bytes: int = _bounded("limits", "max_file_bytes")
    max_total_bytes: int = _bounded("limits", "max_total_bytes")


class ConfigFile(_Section):
    """The config file as written (`load_config` checks it with this model, then the settings that go together).

    Introduced in notebook 06 (evaluation). A key left out is None; a null written in JSON is refused.
    """

    documents: str = None
    questions: str = None
    pipelines: list[str] = None
    output: str = None
    collection: str = None
    corpus: str = None
    generate: GenerateSection = None
    sample: SampleSection = None
    retrieval: RetrievalSection = None
    rerank: RerankSection = None
    gate: GateSection = None
    limits: LimitsSection = None


SECTION_MODELS: dict[str, type[_Section]] = {
    "generate": GenerateSection, "sample": SampleSection, "retrieval": RetrievalSection, "rerank": RerankSection,
    "gate": GateSection, "limits": LimitsSection,
}  # fmt: skip
TOP_LEVEL_TYPES = {"documents": "str", "questions": "str", "pipelines": "list", "output": "str", "collection": "str",
                   "corpus": "str"}  # fmt: skip


MAX_QUESTION_CHARS = 2000  # a question file's questions; the service's /v1/ask takes no longer one either


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
    corpus: str | None = None  # "course" or "packages": a knowledge base that ships with the course
    generate: dict[str, int] = field(default_factory=lambda: {"single": 6, "multi": 2, "seed": 0})
    sample: dict[str, int] = field(default_factory=dict)
    retrieval: dict[str, int] = field(default_factory=dict)
    rerank: dict[str, float | bool] = field(default_factory=dict)
    gate: dict[str, int] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)

    def setting(self, name: str, default: int) -> int:
        return int(self.retrieval.get(name, default))

    def ingest_limits(self):
        """The `lessons.ingest.files.IngestLimits` of the run: the defaults, with the config's [limits] applied."""
        from lessons.ingest.files import IngestLimits

        return IngestLimits(**self.limits)


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(t(
            "config file {path} does not exist — write one with `python -m lessons.evaluation.cli --example > {name}`",
            path=path, name=path.name,
        ))  # fmt: skip
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark (Windows editors write one) is fine
    except UnicodeDecodeError as error:
        from lessons.text.text_encoding import EncodingProblem, decode_text, encoding_label

        try:
            found = t("it looks like {encoding}", encoding=encoding_label(decode_text(data).encoding))
        except EncodingProblem:
            found = t("its encoding is unclear")
        raise ConfigError(t("{path}: not UTF-8 (byte 0x{byte} at offset {offset}; {found}) — save the config as UTF-8 "
                            "(in your editor: Save with Encoding → UTF-8)",
                            path=path, byte=f"{data[error.start]:02x}", offset=error.start, found=found)) from None  # fmt: skip
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise ConfigError(t(
            "{path}: not valid {kind} ({error}) — compare with `python -m lessons.evaluation.cli --example`",
            path=path, kind=kind, error=error,
        )) from None  # fmt: skip


def _check_keys(path: Path, raw: dict[str, Any]) -> None:
    """Validate the file against `ConfigFile`; its first problem becomes a `ConfigError` naming the key and the fix."""
    try:
        ConfigFile.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(_config_problem(path, raw, error.errors()[0])) from None
    _check_together(path, raw)


def _config_problem(path: Path, raw: dict[str, Any], problem: dict) -> str:
    """The message of one pydantic error on the config, in the words of the config (sections, keys, bounds)."""
    where, kind, value = problem["loc"], problem["type"], problem.get("input")
    key = str(where[0])
    if len(where) == 1:
        if kind == "extra_forbidden":
            return t("{path}: unknown key {key} — allowed: {allowed}",
                     path=path, key=repr(key), allowed=", ".join([*TOP_LEVEL_TYPES, *SECTION_MODELS]))  # fmt: skip
        if key in SECTION_MODELS:
            allowed = list(SECTION_MODELS[key].model_fields)
            return t("{path}: {key} = {value} — [{key}] is a section of settings, not a value: write it as\n"
                     "[{key}]\n{first} = …\n(allowed: {allowed})",
                     path=path, key=key, value=repr(value), first=allowed[0], allowed=", ".join(allowed))  # fmt: skip
        return t("{path}: {key} must be a {kind}, got {value}", path=path, key=key, kind=TOP_LEVEL_TYPES[key],
                 value=repr(value))  # fmt: skip
    if key == "pipelines":
        return t("{path}: pipelines must be a list of names, got {value}", path=path, value=repr(raw.get("pipelines")))
    inner = str(where[1])
    if kind == "extra_forbidden":
        return t("{path}: unknown key {inner} in [{key}] — allowed: {allowed}",
                 path=path, inner=repr(inner), key=key, allowed=", ".join(SECTION_MODELS[key].model_fields))  # fmt: skip
    if key == "rerank" and inner == "first_stage_weight":
        return t("{path}: [rerank] first_stage_weight = {value} — use a number from 0 to 1 (0.2 is the course's default)",
                 path=path, value=repr(value))  # fmt: skip
    if key == "rerank":
        return t("{path}: [rerank] {inner} = {value} — write true or false", path=path, inner=inner, value=repr(value))
    if kind in ("greater_than_equal", "less_than_equal"):
        low, high = BOUNDS[key][inner]
        return t("{path}: [{key}] {inner} = {value} is out of range — use a whole number from {low} to {high}",
                 path=path, key=key, inner=inner, value=value, low=low, high=high)  # fmt: skip
    return t(
        "{path}: [{key}] {inner} = {value} must be a whole number", path=path, key=key, inner=inner, value=repr(value)
    )


def _check_together(path: Path, raw: dict[str, Any]) -> None:
    """Settings that are each in range but do not make sense together."""
    retrieval = raw.get("retrieval", {})
    k, rank_k = retrieval.get("k", K), retrieval.get("rank_k", RANK_K)
    if rank_k < k:
        raise ConfigError(t("{path}: [retrieval] rank_k = {rank_k} is less than k = {k} — rank_k is the depth of MRR "
                            "and nDCG and must be at least k", path=path, rank_k=rank_k, k=k))  # fmt: skip
    generate = {"single": 6, "multi": 2, **raw.get("generate", {})}
    if raw.get("questions") == "generate" and generate["single"] + generate["multi"] == 0:
        raise ConfigError(t("{path}: [generate] single = 0 and multi = 0 — ask for at least one question", path=path))
    sample = raw.get("sample", {})
    if sample and sample.get("in_kb", 1) + sample.get("out_of_kb", 1) == 0:
        raise ConfigError(
            t(
                "{path}: [sample] in_kb = 0 and out_of_kb = 0 — sample at least one question, or remove [sample]",
                path=path,
            )
        )
    if raw.get("questions") == "generate" and raw.get("gate", {}).get("calibrate", 0):
        raise ConfigError(t('{path}: [gate] calibrate needs out-of-KB questions (near misses) and a generated test set '
                            'has none — give questions = "gold" or a .jsonl file with some "type": "out_of_kb" '
                            "questions, or remove calibrate", path=path))  # fmt: skip
    limits = raw.get("limits", {})
    if limits.get("max_total_bytes", 200 * 2**20) < limits.get("max_file_bytes", 0):
        raise ConfigError(t("{path}: [limits] max_total_bytes is less than max_file_bytes — the total must be at least "
                            "the per-file limit", path=path))  # fmt: skip
    pipelines = raw.get("pipelines")
    if isinstance(pipelines, list):
        repeated = sorted({name for name in pipelines if pipelines.count(name) > 1})
        if repeated:
            raise ConfigError(t("{path}: pipelines {repeated} are listed more than once — list each pipeline once",
                                path=path, repeated=repeated))  # fmt: skip


def load_config(path: str | Path) -> EvalConfig:
    """Read and check a config file; every problem is a `ConfigError` naming the file and the fix."""
    path = Path(path)
    raw = _read(path)
    if not isinstance(raw, dict):
        raise ConfigError(
            t(
                "{path}: expected a table of settings — compare with `python -m lessons.evaluation.cli --example`",
                path=path,
            )
        )
    _check_keys(path, raw)
    corpus = raw.get("corpus")
    if corpus is not None:
        from lessons.ingest.corpus import CORPORA, corpus_folder

        if corpus not in CORPORA:
            raise ConfigError(t("{path}: corpus = {corpus} — choose one of {choices}, or leave it out and set documents "
                                "to your folder", path=path, corpus=repr(corpus), choices=", ".join(map(repr, CORPORA))))  # fmt: skip
        if (
            "documents" in raw
            and (path.resolve().parent / raw["documents"]).resolve() != corpus_folder(corpus).resolve()
        ):
            raise ConfigError(t("{path}: corpus = {corpus} reads {folder}, but documents = {documents} — remove one of "
                                "the two", path=path, corpus=repr(corpus), folder=corpus_folder(corpus),
                                documents=repr(raw["documents"])))  # fmt: skip
        raw = {**raw, "documents": str(corpus_folder(corpus))}
    for required in ("documents", "questions", "pipelines"):
        if required not in raw:
            raise ConfigError(t("{path}: missing {key} — see `python -m lessons.evaluation.cli --example`",
                                path=path, key=repr(required)))  # fmt: skip
    base = path.resolve().parent
    documents = (base / raw["documents"]).resolve()
    _check_documents(path, documents)
    try:
        check_pipeline_names(raw["pipelines"], where=str(path))
    except UnknownPipeline as error:
        raise ConfigError(str(error)) from None
    questions = raw["questions"]
    if questions not in ("gold", "generate"):
        file = (base / questions).resolve()
        if not file.is_file():
            raise ConfigError(t(
                '{path}: questions file {file} does not exist — give a .jsonl file, "gold" or "generate"',
                path=path, file=file,
            ))  # fmt: skip
        check_questions_file(file)
        questions = str(file)
    return EvalConfig(
        path=path, documents=documents, questions=questions, pipelines=list(raw["pipelines"]),
        output=(base / raw.get("output", "runs/evaluation")).resolve(), collection=raw.get("collection"), corpus=corpus,
        generate={"single": 6, "multi": 2, "seed": 0, **raw.get("generate", {})},
        sample=dict(raw.get("sample", {})), retrieval=dict(raw.get("retrieval", {})), rerank=dict(raw.get("rerank", {})),
        gate=dict(raw.get("gate", {})), limits=dict(raw.get("limits", {})),
    )  # fmt: skip


def _check_documents(path: Path, documents: Path) -> None:
    """`documents` is a folder, or one document (a file of a supported type); anything else is a `ConfigError`."""
    from lessons.ingest.files import SUPPORTED_SUFFIXES

    if documents.is_dir():
        return
    if documents.is_file():
        if documents.suffix.lower() in SUPPORTED_SUFFIXES:
            return  # one document: it is evaluated alone
        raise ConfigError(t(
            "{config}: documents = {documents} is a file, not a folder, and not a document the course reads "
            "(supported: {supported}) — set documents to a folder of documents, or to one document",
            config=path, documents=documents, supported=" ".join(SUPPORTED_SUFFIXES),
        ))  # fmt: skip
    raise ConfigError(t("{path}: documents folder {documents} does not exist — set documents to a folder of "
                        ".pdf .docx .pptx .html .md .txt files", path=path, documents=documents))  # fmt: skip


def check_questions_file(file: Path) -> None:
    """Read and check a questions file before anything is ingested or asked (`lessons.evaluation.testset`).

    Introduced in notebook 06 (evaluation). Raises `TestSetError` naming the line: a line the test-set reader
    refuses, or a question longer than `MAX_QUESTION_CHARS`. Evidence quotes are checked later, against the chunks.
    """
    from lessons.evaluation.testset import TestSetError, load_test_set

    load_test_set(file)
    for number, line in enumerate(file.read_text(encoding="utf-8-sig").splitlines(), 1):
        question = json.loads(line).get("question", "") if line.strip() else ""
        if isinstance(question, str) and len(question.strip()) > MAX_QUESTION_CHARS:
            raise TestSetError(t(
                "{file}, line {line}: the question is {n:,} characters long, over the limit of {limit:,} — "
                "a question that long is more than the embedder and the chat model read: shorten it, or split it",
                file=file, line=number, n=len(question.strip()), limit=MAX_QUESTION_CHARS,
            ))  # fmt: skip


def check_chat_model_reachable() -> None:
    """A local chat model at `AGENTIC_RAG_SERVER_URL` must answer before the run ingests anything.

    Raises `lessons.core.local_server.ServerError` (naming the address) when it does not; a local server
    the course starts itself, and DeepSeek, are not contacted here.
    """
    from lessons.core.models import active_model_info
    from lessons.core.settings import get_settings

    if get_settings().server_url and active_model_info().provider == "local":
        from lessons.core.local_server import ensure_server

        ensure_server()


PRESETS = {
    "packages": """\
# The second knowledge base that ships with the course: ten package READMEs and their hand-written gold set
corpus = "packages"
questions = "gold"
pipelines = ["dense", "hybrid", "hybrid+rerank", "grading-loop"]
output = "runs/evaluation-packages"

[sample]
in_kb = 8
out_of_kb = 4
seed = 0

[gate]                         # the gate calibrated on these READMEs, not the course's: 24 gold questions outside
calibrate = 24                 # the sample (a third of them near misses), about 70 short chat-model calls
seed = 0
""",
    "course": """\
# The course's knowledge base (Tidewell) and its gold set
corpus = "course"
questions = "gold"
pipelines = ["dense", "hybrid", "hybrid+rerank", "grading-loop"]
output = "runs/evaluation-course"

[sample]
in_kb = 8
out_of_kb = 4
seed = 0
""",
}


def preset_config(name: str) -> EvalConfig:
    """A preset config (relative to the project root): `python -m lessons.evaluation.cli --preset packages`."""
    from lessons.core.settings import PROJECT_ROOT

    if name not in PRESETS:
        raise ConfigError(
            t("unknown preset {name} — choose one of {choices}", name=repr(name), choices=", ".join(PRESETS))
        )
    path = PROJECT_ROOT / "runs" / f"preset-{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PRESETS[name], encoding="utf-8")
    return load_config(path)


def collection_for(documents: Path) -> str:
    """The Chroma collection of a documents folder: the course's "kb" for the course corpus, else one per folder."""
    from lessons.ingest.corpus import CORPUS_DIR

    if documents.resolve() == CORPUS_DIR.resolve():
        return "kb"
    return "eval-" + hashlib.sha256(str(documents.resolve()).encode()).hexdigest()[:12]


def question_set(config: EvalConfig, chunks, llm, progress: bool = True):
    """The questions of a run: the gold set, a file, or generated from the chunks (sampled if asked)."""
    return question_pool(config, chunks, llm, progress)[1]


def question_pool(config: EvalConfig, chunks, llm, progress: bool = True):
    """(every question of the source, the questions evaluated): the gold set, a file, or generated from the
    chunks, sampled if the config asks — the questions outside the sample are what `[gate] calibrate` uses."""
    from lessons.evaluation.testset import from_gold, generate_test_set, load_test_set
    from lessons.ingest.questions import balanced_sample

    if config.questions == "generate":
        report = generate_test_set(llm, chunks, n_single=config.generate["single"], n_multi=config.generate["multi"],
                                   seed=config.generate["seed"], progress=progress)  # fmt: skip
        print(report)
        if not report.items:
            raise RuntimeError(
                f"no usable questions were generated from {config.documents} ({report}; generation "
                "uses chunks of at least 200 characters): give a questions file instead"
            )
        return report.items, report.items
    if config.questions == "gold":
        from lessons.ingest.corpus import load_gold

        items = from_gold(load_gold(corpus=config.corpus or "course"), chunks)
    else:
        items = load_test_set(config.questions, chunks)
    if config.sample:
        sampled = balanced_sample(items, config.sample.get("in_kb", len(items)), config.sample.get("seed", 0),
                                  n_out_of_kb=config.sample.get("out_of_kb", 0), by_type=True, in_order=True)  # fmt: skip
        return items, sampled
    return items, items


def calibration_questions(config: EvalConfig, pool, evaluated):
    """The `[gate] calibrate` questions: a seeded draw (balanced by language, a third out-of-KB) from the
    questions that are not evaluated; when there are none with an out-of-KB question among them, the
    evaluated questions themselves (in-sample, and the report says so). (questions, in_sample)."""
    from lessons.evaluation.pipelines import gate_sample

    n, seed = config.gate.get("calibrate", 0), config.gate.get("seed", 0)
    evaluated_ids = {item.id for item in evaluated}
    rest = [item for item in pool if item.id not in evaluated_ids]
    if any(not item.answerable for item in rest):
        return gate_sample([], rest, n, seed), False
    if any(not item.answerable for item in evaluated):
        return gate_sample([], list(evaluated), n, seed), True
    raise ConfigError(t('{path}: [gate] calibrate = {n} needs out-of-KB questions (near misses: questions about '
                        'your documents that they do not answer) and {questions} has none — add some with '
                        '"type": "out_of_kb", or remove calibrate', path=config.path, n=n, questions=config.questions))  # fmt: skip


class NoDocuments(ConfigError):
    """The documents folder has no file that converts: the run stops before any model call."""


def read_documents(config: EvalConfig, progress: bool = True):
    """The chunks of the folder's files that convert; the others are printed with their reasons.

    Introduced in notebook 06 (evaluation). Raises `NoDocuments` (naming every file and why) when no
    file converts — an empty folder, or only bad files — so no model is asked anything.
    """
    from lessons.ingest.files import FileTooLarge, TotalSizeExceeded, ingest
    from lessons.retrieval.index import chunk_converted

    result = ingest(config.documents, limits=config.ingest_limits(), progress=progress)
    if result.skipped or not result.documents:
        print(result.summary())
    if any(s.reason.startswith((FileTooLarge.__name__, TotalSizeExceeded.__name__)) for s in result.skipped):
        print("  " + t("(to raise a size limit, add to {name}: [limits] max_file_bytes = … / max_total_bytes = …)",
                       name=config.path.name))  # fmt: skip
    if not result.documents:
        reasons = "; ".join(f"{Path(s.path).name}: {s.reason}" for s in result.skipped)
        raise NoDocuments(f"{config.path}: no file in {config.documents} could be read"
                          + (f" ({reasons})" if reasons else " (the folder is empty)")
                          + " — put .pdf .docx .pptx .html .md .txt files there, or fix the ones listed")  # fmt: skip
    return chunk_converted(result.documents), result


def run(config: EvalConfig, *, limit: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Run one evaluation as configured; returns the paths written and the comparison table."""
    from lessons.agents.grading import save_gate
    from lessons.core.models import get_chat_model, model_banner
    from lessons.core.usage import USAGE
    from lessons.core.vectorstore import store_location
    from lessons.evaluation.pipelines import (
        Resources,
        build_measured,
        calibrate_gate_on,
        compare,
        evaluate,
        plot_comparison,
        save_report,
    )
    from lessons.evaluation.testset import qa_chunk_selection, save_test_set
    from lessons.retrieval.index import build_index

    started = time.perf_counter()
    print(model_banner())
    print(t("vector store: {location}", location=for_reader(store_location())))
    check_chat_model_reachable()
    if config.corpus is not None:  # a knowledge base of the course: read through its manifest, its own collection
        from lessons.ingest.files import IngestResult
        from lessons.retrieval.index import INDEX_NAMES, chunk_knowledge_base

        chunks, ingested = (
            chunk_knowledge_base(folder=config.documents, limits=config.ingest_limits()),
            IngestResult([], []),
        )
        collection = config.collection or INDEX_NAMES[config.corpus]
    else:
        chunks, ingested = read_documents(config, progress)
        collection = config.collection or collection_for(config.documents)
    store = build_index(chunks, collection)
    print(t("{n} chunks from {documents} in collection '{collection}'", n=len(chunks), documents=config.documents,
            collection=collection))  # fmt: skip
    llm = get_chat_model()
    pool, items = question_pool(config, chunks, llm, progress)
    items = items[: limit or None]
    calibrating = bool(config.gate.get("calibrate", 0)) and "grading-loop" in config.pipelines
    calibration_items, in_sample = calibration_questions(config, pool, items) if calibrating else ([], False)
    config.output.mkdir(parents=True, exist_ok=True)
    save_test_set(items, config.output / "test_set.jsonl")
    k, rank_k = config.setting("k", K), config.setting("rank_k", RANK_K)
    weight, cross_lingual = rerank_options(config)
    resources = Resources(
        chunks=chunks, store=store, llm=llm, k=k, rank_k=rank_k,
        rerank_candidates=config.setting("rerank_candidates", 20), max_rounds=config.setting("max_rounds", 3),
        qa_chunks=qa_chunk_selection(chunks, items, config.setting("qa_chunks", 20)),
        qa_store_name=f"{collection}-qa", progress=progress,
        first_stage_weight=weight, cross_lingual=cross_lingual, knowledge_base=collection,
    )  # fmt: skip
    calibration = calibrate_gate_on(calibration_items, resources, in_sample=in_sample) if calibrating else None
    if calibration is not None:
        resources.gate_thresholds = calibration.thresholds
        # each calibration question's best P(yes): what the thresholds were chosen from, for a reader to check
        calibration.scores.to_json(
            config.output / "gate_calibration.json", orient="records", force_ascii=False, indent=1
        )
        save_gate(config.output / "gate.json", calibration.thresholds, calibration.facts(str(config.documents)))
    gate_line = None
    if "grading-loop" in config.pipelines:
        gate_line = calibration.note(str(config.documents)) if calibration else gate_note(config)
        print(gate_line)
    pipelines, builds = build_measured(config.pipelines, resources)
    print(t("{n} questions × {m} pipelines: {names}", n=len(items), m=len(pipelines), names=", ".join(pipelines)))
    rows = evaluate(pipelines, items, llm, chunks, k=k, rank_k=rank_k, progress=progress)
    table = compare(rows, k=k, rank_k=rank_k)
    meta = {"model": model_banner(), "vector store": store_location(), "documents": str(config.documents),
            "chunks": len(chunks), "questions": config.questions if config.questions in ("gold", "generate") else Path(config.questions).name,
            "pipelines": ", ".join(pipelines), "k": k, "rank_k": rank_k,
            "files skipped": "; ".join(f"{Path(s.path).name}: {s.reason}" for s in ingested.skipped) or t("none")}  # fmt: skip
    if any(name in config.pipelines for name in ("hybrid+rerank", "grading-loop")):
        meta["reranker"] = rerank_note(config)
    if gate_line is not None:
        meta["gate thresholds"] = gate_line
    built = builds[builds["llm_calls"] > 0]
    if len(built):  # graph+rerank, raptor+rerank: chat-model calls before the first question
        meta["build cost"] = "; ".join(t("{name}: {calls} chat-model calls ({cached} cached), {tokens} tokens, "
                                         "{seconds:.0f} s", name=name, calls=int(row.llm_calls),
                                         cached=int(row.cached_calls), tokens=int(row.tokens), seconds=row.seconds)
                                       for name, row in built.iterrows())  # fmt: skip
    meta["semantic cache"] = cache_note(items, chunks, config.output)
    json_path, md_path = save_report(config.output, rows, table, items, meta)
    figure = plot_comparison(table, k, rank_k)
    figure.savefig(config.output / "comparison.png", dpi=110)
    print("\n" + t("wrote {json}, {markdown} and {figure} in {seconds:.0f} s", json=json_path, markdown=md_path,
                   figure=config.output / "comparison.png", seconds=time.perf_counter() - started))  # fmt: skip
    print(USAGE.report())
    return {"json": json_path, "markdown": md_path, "table": table, "rows": rows, "skipped": list(ingested.skipped)}


def cache_note(items, chunks, output: Path) -> str:
    """The semantic cache's line in the report (`cache_rows`): the evaluated answerable questions stored with their
    reference answers, each asked again with itself left out — how many answers it served, and how many were another
    question's wrong answer. Embeds the questions through the course's embedding cache (`cached_embeddings`: a
    question embedded before, by this run's retrieval or an earlier run, is not embedded again); no chat-model call."""
    from lessons.chunking.strategies import cached_embeddings
    from lessons.evaluation.pipelines import cache_rows
    from lessons.retrieval.semantic_cache import SemanticCache, knowledge_base_version

    if not any(item.answerable for item in items):
        return t("not measured (no answerable question to store)")
    path = output / "semantic_cache.sqlite"
    path.unlink(missing_ok=True)  # the questions of this run only
    try:
        cache = SemanticCache(path, cached_embeddings(), knowledge_base_version(chunks))
    except ValueError as error:  # an embedder without a calibrated threshold
        return t("not measured ({error})", error=error)
    row = cache_rows(items, cache).iloc[0]
    return t("in front of any pipeline, at threshold {threshold:.3f} with its guard: {n} evaluated questions stored, "
             "each asked again as a new one (itself left out) was served {served} stored answer(s), {wrong} of them "
             "another question's wrong answer", threshold=cache.threshold, n=row["lookups"],
             served=row["answers served"], wrong=row["wrong"])  # fmt: skip


def rerank_options(config: EvalConfig) -> tuple[float, bool]:
    """The reranker's first-stage weight and cross-lingual route: the config's `[rerank]`, else the course's defaults."""
    from lessons.retrieval.rerank import DEFAULT_FIRST_STAGE_WEIGHT

    return config.rerank.get("first_stage_weight", DEFAULT_FIRST_STAGE_WEIGHT), config.rerank.get("cross_lingual", True)


def rerank_note(config: EvalConfig) -> str:
    """The report's line on the reranker the run used: the first-stage weight and the cross-lingual route ([rerank])."""
    from lessons.retrieval.rerank import DEFAULT_FIRST_STAGE_WEIGHT

    weight, cross_lingual = rerank_options(config)
    route = t("on") if cross_lingual else t("off")
    if weight == DEFAULT_FIRST_STAGE_WEIGHT and cross_lingual:
        return t("default_reranker, first-stage weight {weight:g}, cross-lingual route {route} (the course's default)",
                 weight=weight, route=route)  # fmt: skip
    return t("default_reranker, first-stage weight {weight:g}, cross-lingual route {route}", weight=weight, route=route)


def gate_note(config: EvalConfig) -> str:
    """What the report says about the grading loop's thresholds on these documents (never left unsaid)."""
    from lessons.evaluation.pipelines import threshold_note
    from lessons.ingest.corpus import CORPUS_DIR

    if config.documents.resolve() == CORPUS_DIR.resolve():
        return threshold_note(str(config.documents), at_home=True)
    return threshold_note(str(config.documents))


def argument_parser() -> argparse.ArgumentParser:
    """The command's parser, its texts in the course language (build it inside `argparse_in_course_language`, which
    puts argparse's own texts, "usage:" and the error lines, in the course language too)."""
    parser = argparse.ArgumentParser(
        prog="python -m lessons.evaluation.cli",
        description=t(
            "Command line: compare RAG pipelines on your own documents, with the same evaluation as notebook 06."
        ),
    )
    parser.add_argument("config", nargs="?", help=t("the config file (.toml or .json)"))
    parser.add_argument("--example", action="store_true", help=t("print a commented example config and exit"))
    parser.add_argument("--limit", type=int, default=None, metavar="N", help=t("evaluate only the first N questions"))
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help=t("run a preset instead of a config file (packages: the second knowledge base and its gold set)"),
    )
    parser.add_argument("--no-progress", action="store_true", help=t("no progress bars (for logs)"))
    return parser


def main(argv: list[str] | None = None) -> int:
    with argparse_in_course_language():
        parser = argument_parser()
        args = parser.parse_args(argv)
        if not args.example and not args.config and not args.preset:
            parser.error(t("give a config file, --preset packages, or --example to print one"))
        if not args.example and args.config and args.preset:
            parser.error(t("give a config file or --preset, not both"))
    if args.example:
        print(t_marked(EXAMPLE_CONFIG), end="")
        return 0
    import matplotlib

    from lessons.core.local_server import ServerError
    from lessons.core.models import ModelError
    from lessons.core.settings import SettingsError
    from lessons.evaluation.testset import TestSetError

    matplotlib.use("Agg")
    try:
        config = preset_config(args.preset) if args.preset else load_config(args.config)
        result = run(config, limit=args.limit, progress=not args.no_progress)
    except (ConfigError, TestSetError, SettingsError, ModelError, ServerError, ConnectionError) as error:
        print(t("error: {error}", error=error), file=sys.stderr)
        return 2
    print()
    print(
        result["markdown"]
        .read_text(encoding="utf-8")
        .split(t("## Judge failures"))[0]
        .split(t("## Pipelines compared"))[1]
        .strip()
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
