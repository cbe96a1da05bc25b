"""Question/answer pairs from chunks: the LangChain 1.x replacement for `DoctranQATransformer`.

Introduced in notebook 03 (QA transformation). `QATransformer` is a `BaseDocumentTransformer` that
asks the chat model, through structured output, for a bounded list of question/answer pairs per
chunk and returns them as Documents that trace back to their chunk:

- page_content is "Question: …\\nAnswer: …"; metadata holds question, answer, qa_index, the source
  chunk's `chunk_id`, its source, page and section, and `doc_type="qa"`;
- when a reply does not fit the schema, the chunk is asked again for fewer pairs (4 → 2 → 1); when
  even one pair fails, the chunk yields no pairs, which is logged and counted — never a crash;
- answers are cached in SQLite (JSON), keyed by the chunk's text, the model and the prompt, so
  rebuilding an index costs no LLM calls even with the LLM cache turned off;
- chunks run concurrently (asyncio and a semaphore; threads on the synchronous path) under a
  progress bar, and a chunk too large for the model's context window raises a warning first.

The module also holds what the notebook measures with: a hybrid Chroma index of chunks and QA
documents (`metadata["doc_type"]`), mapping QA hits back to their chunks, and evidence coverage.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import logging
import math
import random
import re
import time
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, create_model
from tqdm.auto import tqdm

from lessons.core.i18n import N_, t
from lessons.core.llm_cache import SQLiteFile
from lessons.core.prompt_safety import DATA_RULE, as_data
from lessons.core.settings import get_settings
from lessons.core.structured import StructuredOutputError, ainvoke_structured, invoke_structured
from lessons.text.cjk import CJK_WIDE
from lessons.text.language import detect_language
from lessons.text.normalise import normalise_for_match

logger = logging.getLogger(__name__)

DEFAULT_MAX_PAIRS = 4
MAX_PAIRS_LIMIT = 10
DOC_TYPE_CHUNK = "chunk"
DOC_TYPE_QA = "qa"
# Metadata a QA document copies from its chunk, when the chunk has it.
TRACE_KEYS = ("source", "page", "section", "section_path", "language", "format", "chunk_index")
DEFAULT_CONCURRENCY = {"local": 2, "deepseek": 8}
DEEPSEEK_CONTEXT_TOKENS = 65_536
CONTEXT_BUDGET_SHARE = 0.7
ANSWER_TOKENS_PER_PAIR = 100
LANGUAGE_NAMES = {"en": "English", "zh": "Simplified Chinese (简体中文)"}

QA_SYSTEM_PROMPT = """You write question-and-answer pairs that help a search engine find a text again later.

Rules:
- Use only the text you are given. Never add facts, numbers, names or advice that are not in it.
- Ask about the facts worth retrieving: figures and limits, definitions, the steps of a procedure, decisions and conclusions, who is responsible for what.
- Each question must make sense on its own, without the text: name the product, policy or document it is about.
- Each answer is short and copies figures, names and units exactly as the text gives them.
- Write at most {max_pairs} pairs. When the text holds fewer facts, write fewer pairs: one good pair is better than padding.
- Write every question and answer in {language_name}, the language of the text.
- <<DATA_RULE>>""".replace("<<DATA_RULE>>", DATA_RULE)

QA_USER_PROMPT = """Document: {source}
Section: {section}

Text:
{text}

Call the function with the question-and-answer pairs about this text."""


class QAPair(BaseModel):
    """One question a reader could ask, answered only from the text."""

    # The descriptions (this docstring too) are marked (N_) so that notebook 03 shows the schema in the reader's
    # language (`lessons.core.i18n.schema_for_reader`); the model reads the English.
    question: str = Field(
        min_length=2, description=N_("A self-contained question that the text answers, in the text's language")
    )
    answer: str = Field(
        min_length=1,
        description=N_("The answer, taken only from the text; figures, names and units exactly as written"),
    )


N_("One question a reader could ask, answered only from the text.")  # QAPair's docstring: the items' description


class QAPairList(BaseModel):
    """Question-and-answer pairs about one text."""

    pairs: list[QAPair] = Field(
        min_length=1,
        max_length=DEFAULT_MAX_PAIRS,
        description=N_("Between 1 and the allowed number of question-and-answer pairs, most useful first"),
    )


@lru_cache(maxsize=MAX_PAIRS_LIMIT)
def qa_pair_list_schema(max_pairs: int) -> type[QAPairList]:
    """`QAPairList` with at most `max_pairs` pairs (the local server's grammar enforces the bound).

    Introduced in notebook 03 (QA transformation).
    """
    if not 1 <= max_pairs <= MAX_PAIRS_LIMIT:
        raise ValueError(f"max_pairs={max_pairs} is out of range — ask for 1 to {MAX_PAIRS_LIMIT} pairs per chunk")
    if max_pairs == DEFAULT_MAX_PAIRS:
        return QAPairList
    description = QAPairList.model_fields["pairs"].description
    return create_model(
        "QAPairList",
        __base__=QAPairList,
        __doc__=QAPairList.__doc__,
        pairs=(list[QAPair], Field(min_length=1, max_length=max_pairs, description=description)),
    )


def fewer_pairs_schedule(max_pairs: int) -> list[int]:
    """How many pairs each attempt asks for: `max_pairs`, then half as many, down to 1 (4 → [4, 2, 1]).

    Introduced in notebook 03 (QA transformation).
    """
    if max_pairs < 1:
        raise ValueError(f"max_pairs={max_pairs} must be at least 1")
    counts = [max_pairs]
    while counts[-1] > 1:
        counts.append(counts[-1] // 2)
    return counts


def ask_with_fewer_pairs(ask: Callable[[int], list[QAPair]], max_pairs: int) -> tuple[list[QAPair], list[int]]:
    """Call `ask(n)` for n in `fewer_pairs_schedule(max_pairs)` until it succeeds; `([], tried)` when none did.

    Introduced in notebook 03 (QA transformation). Only `StructuredOutputError` moves on to fewer
    pairs; any other error (a server that is down) propagates.
    """
    tried: list[int] = []
    for count in fewer_pairs_schedule(max_pairs):
        tried.append(count)
        try:
            return ask(count), tried
        except StructuredOutputError as error:
            logger.info("no valid %d-pair answer (%s); asking for fewer", count, error.cause)
    return [], tried


async def aask_with_fewer_pairs(
    ask: Callable[[int], Awaitable[list[QAPair]]], max_pairs: int
) -> tuple[list[QAPair], list[int]]:
    """Async `ask_with_fewer_pairs`.

    Introduced in notebook 03 (QA transformation).
    """
    tried: list[int] = []
    for count in fewer_pairs_schedule(max_pairs):
        tried.append(count)
        try:
            return await ask(count), tried
        except StructuredOutputError as error:
            logger.info("no valid %d-pair answer (%s); asking for fewer", count, error.cause)
    return [], tried


def chunk_id_of(document: Document) -> str:
    """The chunk's `metadata["chunk_id"]`, or a hash of its text when it has none.

    Introduced in notebook 03 (QA transformation).
    """
    chunk_id = document.metadata.get("chunk_id")
    return str(chunk_id) if chunk_id else hashlib.sha256(document.page_content.encode()).hexdigest()[:16]


def language_of(document: Document) -> str:
    """The chunk's `metadata["language"]`, or the language detected from its text.

    Introduced in notebook 03 (QA transformation).
    """
    return str(document.metadata.get("language") or detect_language(document.page_content))


def qa_messages(document: Document, max_pairs: int, system_prompt: str = QA_SYSTEM_PROMPT) -> list[BaseMessage]:
    """The QA request for one chunk: the rules (in the system message) and the chunk with its source.

    Introduced in notebook 03 (QA transformation).
    """
    language = language_of(document)
    rules = system_prompt.format(max_pairs=max_pairs, language_name=LANGUAGE_NAMES.get(language, "the text's language"))
    request = QA_USER_PROMPT.format(
        source=document.metadata.get("source", "unknown"),
        section=document.metadata.get("section_path") or document.metadata.get("section") or "-",
        text=as_data(document.page_content.strip()),
    )
    return [SystemMessage(rules), HumanMessage(request)]


def qa_documents(chunk: Document, pairs: Sequence[QAPair]) -> list[Document]:
    """One Document per pair, "Question: …\\nAnswer: …", with metadata that leads back to `chunk`.

    Introduced in notebook 03 (QA transformation).
    """
    trace = {key: chunk.metadata[key] for key in TRACE_KEYS if chunk.metadata.get(key) is not None}
    return [
        Document(
            page_content=f"Question: {pair.question}\nAnswer: {pair.answer}",
            metadata={
                **trace,
                "chunk_id": chunk_id_of(chunk),
                "doc_type": DOC_TYPE_QA,
                "qa_index": index,
                "question": pair.question,
                "answer": pair.answer,
            },
        )
        for index, pair in enumerate(pairs)
    ]


def clean_pairs(pairs: Iterable[QAPair]) -> list[QAPair]:
    """Pairs with surrounding whitespace removed and repeated questions dropped.

    Introduced in notebook 03 (QA transformation).
    """
    kept, seen = [], set()
    for pair in pairs:
        question, answer = pair.question.strip(), pair.answer.strip()
        key = normalise_for_match(question)
        if question and answer and key not in seen:
            seen.add(key)
            kept.append(QAPair(question=question, answer=answer))
    return kept


# --- the cache -----------------------------------------------------------------------------------


def model_identity(model: BaseChatModel) -> str:
    """What identifies a model's answers in a cache key: provider, model name and temperature.

    Introduced in notebook 03 (QA transformation).
    """
    provider = getattr(model, "provider", None) or model._llm_type
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    return f"{provider}:{name}:t={getattr(model, 'temperature', None)}"


def prompt_version(system_prompt: str = QA_SYSTEM_PROMPT) -> str:
    """A short hash of the prompt and the schema: changing either one starts a new cache generation.

    Introduced in notebook 03 (QA transformation).
    """
    schema = json.dumps(QAPairList.model_json_schema(), sort_keys=True)
    return hashlib.sha256(f"{system_prompt}\x00{QA_USER_PROMPT}\x00{schema}".encode()).hexdigest()[:12]


def qa_cache_key(text: str, model_id: str, version: str, max_pairs: int) -> str:
    """The cache key of one chunk's pairs: its text, the model, the prompt version and the pair budget.

    Introduced in notebook 03 (QA transformation).
    """
    payload = json.dumps({"text": text, "model": model_id, "prompt": version, "max_pairs": max_pairs}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class QACache(SQLiteFile):
    """Question/answer pairs per chunk in one SQLite file, stored as JSON (never pickle).

    Introduced in notebook 03 (QA transformation). Safe to share between threads and processes.
    """

    def __init__(self, path: str | Path | None = None):
        self._open(
            Path(path) if path else get_settings().cache_dir / "qa-cache.sqlite",
            "CREATE TABLE IF NOT EXISTS qa_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)",
        )

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for `key`, or None (also for an entry that no longer parses)."""
        row = self._connect().execute("SELECT value FROM qa_cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except json.JSONDecodeError:
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store `value` (JSON-serialisable) under `key`, replacing any older entry."""
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO qa_cache (key, value, created) VALUES (?, ?, ?)",
                (key, json.dumps(value, ensure_ascii=False), time.time()),
            )

    def clear(self) -> None:
        """Forget every entry."""
        with self._connect() as db:
            db.execute("DELETE FROM qa_cache")

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM qa_cache").fetchone()[0]


# --- the context budget --------------------------------------------------------------------------

_CJK = re.compile(rf"[{CJK_WIDE}]")


def estimate_tokens(text: str) -> int:
    """A conservative token count without a tokenizer: one per CJK character, one per 4 other characters.

    Introduced in notebook 03 (QA transformation).
    """
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def context_window_of(model: BaseChatModel) -> int:
    """The context window, in tokens, of DeepSeek (64k) or the local server (`AGENTIC_RAG_CTX`).

    Introduced in notebook 03 (QA transformation).
    """
    return DEEPSEEK_CONTEXT_TOKENS if getattr(model, "provider", None) == "deepseek" else get_settings().n_ctx


@dataclass(frozen=True)
class ContextBudget:
    """The token budget of one QA request against the share of the context window it may use."""

    chunk_id: str
    chunk_tokens: int
    answer_tokens: int
    overhead_tokens: int
    context_window: int

    @property
    def total(self) -> int:
        return self.chunk_tokens + self.answer_tokens + self.overhead_tokens

    @property
    def limit(self) -> int:
        return int(self.context_window * CONTEXT_BUDGET_SHARE)

    @property
    def exceeded(self) -> bool:
        return self.total > self.limit


class ContextBudgetWarning(UserWarning):
    """A chunk plus the answer and the schema would use more than ~70% of the model's context window."""


def request_overhead_tokens(max_pairs: int, system_prompt: str = QA_SYSTEM_PROMPT) -> int:
    """Tokens of a QA request without the chunk: the rules, the request frame and the function schema.

    Introduced in notebook 03 (QA transformation).
    """
    schema = json.dumps(convert_to_openai_tool(qa_pair_list_schema(max_pairs)))
    frame = system_prompt + QA_USER_PROMPT
    return estimate_tokens(schema) + estimate_tokens(frame)


def context_budgets(
    documents: Sequence[Document], max_pairs: int, context_window: int, system_prompt: str = QA_SYSTEM_PROMPT
) -> list[ContextBudget]:
    """The budget of every chunk's QA request.

    Introduced in notebook 03 (QA transformation).
    """
    overhead = request_overhead_tokens(max_pairs, system_prompt)
    return [
        ContextBudget(
            chunk_id_of(doc),
            estimate_tokens(doc.page_content),
            ANSWER_TOKENS_PER_PAIR * max_pairs,
            overhead,
            context_window,
        )
        for doc in documents
    ]


def warn_if_over_budget(budgets: Sequence[ContextBudget]) -> list[ContextBudget]:
    """Warn (`ContextBudgetWarning`) about the requests that exceed their budget; return them.

    Introduced in notebook 03 (QA transformation).
    """
    over = [budget for budget in budgets if budget.exceeded]
    if over:
        worst = max(over, key=lambda budget: budget.total)
        warnings.warn(
            ContextBudgetWarning(
                t(
                    "{n} chunk(s) need more than {share:.0%} of the {window}-token context window; the largest, "
                    "chunk {chunk_id}, needs ≈{total} tokens ({chunk} chunk + {answer} answer + {overhead} prompt "
                    "and schema). Answers may be cut off. Fix: split such chunks smaller, ask for fewer pairs "
                    "(max_pairs), or serve the local model with a larger window (AGENTIC_RAG_CTX=8192).",
                    n=len(over),
                    share=CONTEXT_BUDGET_SHARE,
                    window=worst.context_window,
                    chunk_id=worst.chunk_id,
                    total=worst.total,
                    chunk=worst.chunk_tokens,
                    answer=worst.answer_tokens,
                    overhead=worst.overhead_tokens,
                )
            ),
            stacklevel=3,
        )
    return over


# --- the transformer -----------------------------------------------------------------------------

Status = Literal["ok", "fewer", "failed", "error"]


@dataclass
class ChunkQA:
    """The outcome for one chunk: its pairs, how they were obtained, and how long that took."""

    chunk_id: str
    pairs: list[QAPair]
    status: Status  # ok: first attempt; fewer: after asking for fewer; failed: no valid reply; error: model unreachable
    tried: list[int] = field(default_factory=list)  # pair counts asked for, in order (empty when from the cache)
    generation_seconds: float = 0.0  # time the model took when the pairs were made (also for cached entries)
    from_cache: bool = False
    error: str | None = None

    def to_cache(self) -> dict[str, Any]:
        return {
            "pairs": [pair.model_dump() for pair in self.pairs],
            "status": self.status,
            "tried": self.tried,
            "generation_seconds": round(self.generation_seconds, 3),
        }

    @classmethod
    def from_cache_entry(cls, chunk_id: str, entry: dict[str, Any]) -> ChunkQA:
        return cls(
            chunk_id=chunk_id,
            pairs=[QAPair.model_validate(pair) for pair in entry["pairs"]],
            status=entry["status"],
            tried=list(entry.get("tried", [])),
            generation_seconds=float(entry.get("generation_seconds", 0.0)),
            from_cache=True,
        )


@dataclass(frozen=True)
class QAReport:
    """Counts over one batch of chunks: how many got pairs, on which attempt, and from where."""

    chunks: int
    ok: int
    fewer: int
    failed: int
    errors: int
    from_cache: int
    pairs: int
    generation_seconds: float

    @property
    def schema_success_rate(self) -> float:
        """Share of chunks that got at least one valid pair (after asking for fewer, if needed)."""
        return (self.ok + self.fewer) / self.chunks if self.chunks else 0.0

    @property
    def first_try_rate(self) -> float:
        """Share of chunks whose first request (the full pair budget) was valid."""
        return self.ok / self.chunks if self.chunks else 0.0

    def __str__(self) -> str:
        return t(
            "{chunks} chunks → {pairs} pairs · schema success {rate:.1%} (first try {ok}, with fewer pairs {fewer}, "
            "failed {failed}, errors {errors}) · {cached} from the QA cache",
            chunks=self.chunks,
            pairs=self.pairs,
            rate=self.schema_success_rate,
            ok=self.ok,
            fewer=self.fewer,
            failed=self.failed,
            errors=self.errors,
            cached=self.from_cache,
        )


def qa_report(results: Sequence[ChunkQA]) -> QAReport:
    """Add up the outcomes of a batch.

    Introduced in notebook 03 (QA transformation).
    """
    counts = Counter(result.status for result in results)
    return QAReport(
        chunks=len(results),
        ok=counts["ok"],
        fewer=counts["fewer"],
        failed=counts["failed"],
        errors=counts["error"],
        from_cache=sum(result.from_cache for result in results),
        pairs=sum(len(result.pairs) for result in results),
        generation_seconds=sum(result.generation_seconds for result in results),
    )


def default_concurrency(model: BaseChatModel) -> int:
    """2 parallel requests for the local server (2 cores gain nothing from more), 8 for DeepSeek.

    Introduced in notebook 03 (QA transformation).
    """
    return DEFAULT_CONCURRENCY["deepseek" if getattr(model, "provider", None) == "deepseek" else "local"]


class QATransformer(BaseDocumentTransformer):
    """Turns each chunk into question/answer Documents through structured output; cached and bounded.

    Introduced in notebook 03 (QA transformation). `await qa.atransform_documents(chunks)` in a
    notebook (asyncio + semaphore), `qa.transform_documents(chunks)` in scripts (a thread pool of the
    same size). `qa.last_results` keeps the per-chunk outcomes of the last batch, `qa.report()` sums them.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        max_pairs: int = DEFAULT_MAX_PAIRS,
        cache: QACache | Literal[False] | None = None,
        concurrency: int | None = None,
        retries: int = 1,
        progress: bool = True,
        system_prompt: str = QA_SYSTEM_PROMPT,
        context_window: int | None = None,
    ):
        temperature = getattr(model, "temperature", None)
        if temperature not in (None, 0, 0.0):
            raise ValueError(
                f"QATransformer needs a model at temperature 0 (got {temperature}): its cache assumes the same "
                "chunk always gives the same pairs. Pass get_chat_model() (temperature 0 by default)."
            )
        qa_pair_list_schema(max_pairs)  # validates the range
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"concurrency={concurrency} must be at least 1")
        self.model = model
        self.max_pairs = max_pairs
        self.cache: QACache | None = QACache() if cache is None else (cache if cache is not False else None)
        self.concurrency = concurrency or default_concurrency(model)
        self.retries = retries
        self.progress = progress
        self.system_prompt = system_prompt
        self.context_window = context_window or context_window_of(model)
        self.model_id = model_identity(model)
        self.version = prompt_version(system_prompt)
        self.last_results: list[ChunkQA] = []

    # one chunk --------------------------------------------------------------------------------

    def _key(self, document: Document) -> str:
        return qa_cache_key(document.page_content, self.model_id, self.version, self.max_pairs)

    def _cached(self, document: Document) -> ChunkQA | None:
        entry = self.cache.get(self._key(document)) if self.cache is not None else None
        return ChunkQA.from_cache_entry(chunk_id_of(document), entry) if entry else None

    def _remember(self, document: Document, result: ChunkQA) -> None:
        # An unreachable model is not an answer: only outcomes the model gave are cached.
        if self.cache is not None and result.status != "error":
            self.cache.put(self._key(document), result.to_cache())

    def _outcome(self, document: Document, pairs: list[QAPair], tried: list[int], started: float) -> ChunkQA:
        seconds = time.perf_counter() - started
        if not pairs:
            logger.warning(
                "no QA pairs for chunk %s (%s): no valid reply when asked for %s pair(s); it is indexed without QA",
                chunk_id_of(document), document.metadata.get("source", "?"), tried,
            )  # fmt: skip
            return ChunkQA(chunk_id_of(document), [], "failed", tried, seconds)
        status: Status = "ok" if len(tried) == 1 else "fewer"
        return ChunkQA(chunk_id_of(document), clean_pairs(pairs), status, tried, seconds)

    def _unreachable(self, document: Document, error: Exception, started: float) -> ChunkQA:
        logger.warning("QA for chunk %s failed: %s: %s", chunk_id_of(document), type(error).__name__, error)
        return ChunkQA(
            chunk_id_of(document),
            [],
            "error",
            [],
            time.perf_counter() - started,
            error=f"{type(error).__name__}: {error}",
        )

    def generate_one(self, document: Document) -> ChunkQA:
        """The pairs of one chunk (from the cache when possible); never raises for a model failure."""
        if (cached := self._cached(document)) is not None:
            return cached
        started = time.perf_counter()

        def ask(count: int) -> list[QAPair]:
            messages = qa_messages(document, count, self.system_prompt)
            return invoke_structured(self.model, qa_pair_list_schema(count), messages, retries=self.retries).pairs

        try:
            pairs, tried = ask_with_fewer_pairs(ask, self.max_pairs)
        except Exception as error:  # noqa: BLE001 - an unreachable or broken model: recorded for this chunk, the batch goes on
            return self._unreachable(document, error, started)
        result = self._outcome(document, pairs, tried, started)
        self._remember(document, result)
        return result

    async def agenerate_one(self, document: Document, semaphore: asyncio.Semaphore | None = None) -> ChunkQA:
        """Async `generate_one`; cache hits never wait for the semaphore."""
        if (cached := self._cached(document)) is not None:
            return cached

        async def ask(count: int) -> list[QAPair]:
            messages = qa_messages(document, count, self.system_prompt)
            return (
                await ainvoke_structured(self.model, qa_pair_list_schema(count), messages, retries=self.retries)
            ).pairs

        async with semaphore or asyncio.Semaphore(1):
            started = time.perf_counter()
            try:
                pairs, tried = await aask_with_fewer_pairs(ask, self.max_pairs)
            except Exception as error:  # noqa: BLE001 - an unreachable or broken model: recorded for this chunk, the batch goes on
                return self._unreachable(document, error, started)
        result = self._outcome(document, pairs, tried, started)
        self._remember(document, result)
        return result

    # a batch ----------------------------------------------------------------------------------

    def check_budget(self, documents: Sequence[Document]) -> list[ContextBudget]:
        """Warn about chunks whose request would exceed ~70% of the context window; return them."""
        return warn_if_over_budget(context_budgets(documents, self.max_pairs, self.context_window, self.system_prompt))

    def _bar(self, total: int) -> tqdm:
        return tqdm(total=total, desc=t("QA pairs"), unit="chunk", disable=not self.progress)

    def generate(self, documents: Sequence[Document]) -> list[ChunkQA]:
        """Every chunk's outcome, in input order, with `concurrency` threads (each in a copy of the caller's
        context, so a `lessons.core.usage.metered()` block around the call counts their calls)."""
        self.check_budget(documents)
        results: list[ChunkQA | None] = [None] * len(documents)
        with self._bar(len(documents)) as bar, ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {
                pool.submit(contextvars.copy_context().run, self.generate_one, doc): i
                for i, doc in enumerate(documents)
            }
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update(1)
        self.last_results = [result for result in results if result is not None]
        return self.last_results

    async def agenerate(self, documents: Sequence[Document]) -> list[ChunkQA]:
        """Every chunk's outcome, in input order, with at most `concurrency` requests in flight."""
        self.check_budget(documents)
        semaphore = asyncio.Semaphore(self.concurrency)
        with self._bar(len(documents)) as bar:

            async def one(document: Document) -> ChunkQA:
                result = await self.agenerate_one(document, semaphore)
                bar.update(1)
                return result

            self.last_results = list(await asyncio.gather(*(one(doc) for doc in documents)))
        return self.last_results

    def to_documents(self, documents: Sequence[Document], results: Sequence[ChunkQA]) -> list[Document]:
        """The QA Documents of a batch, chunk by chunk."""
        return [qa for doc, result in zip(documents, results, strict=True) for qa in qa_documents(doc, result.pairs)]

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[Document]:
        """The QA Documents of `documents` (synchronous; use `atransform_documents` in a notebook)."""
        return self.to_documents(documents, self.generate(documents))

    async def atransform_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[Document]:
        """The QA Documents of `documents`, generated concurrently."""
        return self.to_documents(documents, await self.agenerate(documents))

    def report(self) -> QAReport:
        """Counts over the last batch."""
        return qa_report(self.last_results)


# --- the hybrid index and its evaluation ---------------------------------------------------------


def mark_doc_type(documents: Iterable[Document], doc_type: str) -> list[Document]:
    """Copies of `documents` with `metadata["doc_type"] = doc_type` (and a `chunk_id` on chunks).

    Introduced in notebook 03 (QA transformation).
    """
    marked = []
    for doc in documents:
        metadata = {**doc.metadata, "doc_type": doc_type}
        metadata.setdefault("chunk_id", chunk_id_of(doc))
        marked.append(Document(page_content=doc.page_content, metadata=metadata))
    return marked


def to_source_chunks(hits: Sequence[Document], chunks_by_id: dict[str, Document], k: int) -> list[Document]:
    """The first `k` distinct source chunks of ranked hits: a QA hit stands for the chunk it came from.

    Introduced in notebook 03 (QA transformation). Hits whose chunk is unknown are skipped.
    """
    ranked, seen = [], set()
    for hit in hits:
        chunk_id = hit.metadata.get("chunk_id")
        if chunk_id in seen or chunk_id not in chunks_by_id:
            continue
        seen.add(chunk_id)
        ranked.append(chunks_by_id[chunk_id])
        if len(ranked) == k:
            break
    return ranked


RetrievalMode = Literal["chunks", "qa", "hybrid"]
MODE_FILTERS: dict[str, dict[str, str] | None] = {
    "chunks": {"doc_type": DOC_TYPE_CHUNK},
    "qa": {"doc_type": DOC_TYPE_QA},
    "hybrid": None,
}


def search_source_chunks(
    store,
    query_vector: list[float],
    mode: RetrievalMode,
    chunks_by_id: dict[str, Document],
    k: int = 5,
    fetch_k: int = 20,
) -> list[Document]:
    """Top-`k` source chunks for a query vector from chunks only, QA documents only, or both.

    Introduced in notebook 03 (QA transformation). Several QA documents may come from one chunk, so
    `fetch_k` hits are fetched and mapped back to distinct chunks.
    """
    if mode not in MODE_FILTERS:
        raise ValueError(f"mode={mode!r} is not one of {list(MODE_FILTERS)}")
    hits = store.similarity_search_by_vector(query_vector, k=max(k, fetch_k), filter=MODE_FILTERS[mode])
    return to_source_chunks(hits, chunks_by_id, k)


def evidence_chunk_ids(chunks: Sequence[Document], evidence: Sequence[str]) -> set[str]:
    """Ids of the chunks that contain at least one of the evidence quotes (normalised match).

    Introduced in notebook 03 (QA transformation).
    """
    quotes = [normalise_for_match(quote) for quote in evidence]
    return {chunk_id_of(c) for c in chunks if any(q in normalise_for_match(c.page_content) for q in quotes)}


def select_chunks(
    chunks: Sequence[Document], gold: Sequence, n: int, seed: int = 3, evidence_share: float = 0.7
) -> list[Document]:
    """A seeded sample of `n` chunks: evidence chunks of randomly drawn gold questions, then distractors.

    Introduced in notebook 03 (QA transformation). About `evidence_share` of the sample holds gold
    evidence (so the gold questions can be asked of it); the rest are other chunks, so retrieval
    still has to pick the right one. Returned in knowledge-base order.
    """
    rng = random.Random(seed)
    questions = [q for q in gold if q.answerable]
    rng.shuffle(questions)
    quota = max(1, round(n * evidence_share))
    picked: set[str] = set()
    for question in questions:
        ids = evidence_chunk_ids(chunks, question.evidence) - picked
        if ids and len(picked) + len(ids) <= quota:
            picked |= ids
    others = [chunk_id_of(c) for c in chunks if chunk_id_of(c) not in picked]
    picked |= set(rng.sample(others, min(len(others), n - len(picked))))
    return [c for c in chunks if chunk_id_of(c) in picked]


@dataclass(frozen=True)
class EvidenceCoverage:
    """Of the gold evidence quotes found in the sampled chunks, how many have QA pairs behind them."""

    quotes: int  # evidence quotes that occur in at least one sampled chunk
    chunk_covered: int  # ... and at least one of those chunks produced a pair
    answer_covered: int  # ... and some pair from those chunks repeats most of the quote

    @property
    def chunk_rate(self) -> float:
        return self.chunk_covered / self.quotes if self.quotes else 0.0

    @property
    def answer_rate(self) -> float:
        return self.answer_covered / self.quotes if self.quotes else 0.0


_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*|[\u3400-\u9fff]")


_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "which",
        "with",
    ]
)


def overlap_tokens(text: str) -> set[str]:
    """Lower-case words and numbers (minus a few stop words), and single Chinese characters.

    Introduced in notebook 03 (QA transformation). What a quote and an answer are compared on (a set, single
    Chinese characters); the claim checks' `lessons.agents.claim_check.content_tokens` (stemmed words, Chinese
    character pairs, in order) is the finer tokenization notebook 05 grounds claims with.
    """
    return set(_WORD.findall(normalise_for_match(text).lower())) - _STOPWORDS


def quote_overlap(quote: str, text: str) -> float:
    """Share of the quote's tokens (`overlap_tokens`) that also occur in `text`.

    Introduced in notebook 03 (QA transformation).
    """
    tokens = overlap_tokens(quote)
    return len(tokens & overlap_tokens(text)) / len(tokens) if tokens else 0.0


def evidence_coverage(
    chunks: Sequence[Document], results: Sequence[ChunkQA], gold: Sequence, answer_overlap: float = 0.5
) -> EvidenceCoverage:
    """Coverage of gold evidence by generated pairs, at chunk level and at answer level.

    Introduced in notebook 03 (QA transformation). A quote is *chunk-covered* when a sampled chunk
    that contains it produced at least one pair; *answer-covered* when one of those pairs (question
    and answer together) holds at least `answer_overlap` of the quote's words (Chinese: characters).
    """
    pairs_by_chunk = {result.chunk_id: result.pairs for result in results}
    quotes = chunk_covered = answer_covered = 0
    for question in gold:
        for quote in question.evidence:
            holders = evidence_chunk_ids(chunks, [quote])
            if not holders:
                continue
            quotes += 1
            pairs = [pair for chunk_id in holders for pair in pairs_by_chunk.get(chunk_id, [])]
            chunk_covered += bool(pairs)
            answer_covered += any(quote_overlap(quote, f"{p.question} {p.answer}") >= answer_overlap for p in pairs)
    return EvidenceCoverage(quotes, chunk_covered, answer_covered)


def qa_findings(rows: Sequence[dict], k: int = 5, coverage: EvidenceCoverage | None = None) -> str:
    """What the chunks / QA / hybrid comparison measured, as Markdown: figures and direction words from `rows`.

    Introduced in notebook 03 (QA transformation). `rows` hold one dict per question and mode ("chunks",
    "qa", "hybrid") with "id", "mode", f"hit@{k}" and f"MRR@{k}". A difference of at most one
    question's worth of MRR is called a tie.
    """
    modes = ("chunks", "qa", "hybrid")
    if not rows:
        return t("No gold question has its evidence in the sample: raise `N_QA_CHUNKS` to measure retrieval.")
    per_question = {mode: {row["id"]: row for row in rows if row["mode"] == mode} for mode in modes}
    if not per_question["chunks"] or any(per_question[mode].keys() != per_question["chunks"].keys() for mode in modes):
        raise ValueError("qa_findings() needs one row per question for each of the modes chunks, qa and hybrid")
    n = len(per_question["chunks"])

    def mean(mode: str, metric: str) -> float:
        return sum(row[metric] for row in per_question[mode].values()) / n

    hit, mrr = f"hit@{k}", f"MRR@{k}"
    step = 1 / n

    def compare(mode: str) -> tuple[str, float]:
        difference = mean(mode, mrr) - mean("chunks", mrr)
        more = round((mean(mode, hit) - mean("chunks", hit)) * n)
        direction = t("higher than") if difference > 0 else t("lower than") if difference < 0 else t("the same as")
        found = (
            t("as many questions")
            if not more
            else t("{count} question more", count=1)
            if more == 1
            else t("{count} questions more", count=more)
            if more > 0
            else t("{count} question fewer", count=1)
            if more == -1
            else t("{count} questions fewer", count=-more)
        )
        return t(
            "{mrr} {value:.2f}, {direction} the chunks' {chunks:.2f}; evidence in the top {k} for {found} ({hit} "
            "{hit_value:.2f} against {chunks_hit:.2f})",
            mrr=mrr,
            value=mean(mode, mrr),
            direction=direction,
            chunks=mean("chunks", mrr),
            k=k,
            found=found,
            hit=hit,
            hit_value=mean(mode, hit),
            chunks_hit=mean("chunks", hit),
        ), difference

    qa_text, qa_difference = compare("qa")
    hybrid_text, hybrid_difference = compare("hybrid")
    helped = sum(per_question["hybrid"][q][mrr] > per_question["chunks"][q][mrr] for q in per_question["chunks"])
    hurt = sum(per_question["hybrid"][q][mrr] < per_question["chunks"][q][mrr] for q in per_question["chunks"])
    lines = [
        t("On {n} gold questions (one question moves {mrr} by up to {step:.2f}):", n=n, mrr=mrr, step=step),
        "",
        t("- **QA documents alone**: {text}.", text=qa_text),
    ]
    if qa_difference < 0 and coverage is not None:
        lines.append(
            t(
                "  The pairs repeat {rate:.0%} of the evidence quotes (section 7): a question about a fact that got "
                "no pair can only land on some other pair.",
                rate=coverage.answer_rate,
            )
        )
    lines.append(
        t(
            "- **Hybrid, QA next to the chunks**: {text}. The evidence moves up for {helped} question(s), down for "
            "{hurt}, and stays put for {same}.",
            text=hybrid_text,
            helped=helped,
            hurt=hurt,
            same=n - helped - hurt,
        )
    )
    if abs(hybrid_difference) <= step:
        verdict = t(
            "the hybrid index and the chunks alone are within one question of each other: on this sample, "
            "one LLM call per chunk at indexing time bought no measurable gain"
        )
    elif hybrid_difference > 0:
        verdict = t(
            "the hybrid index ranks the evidence higher than the chunks alone by more than one question's worth"
        )
    else:
        verdict = t("the hybrid index ranks the evidence lower than the chunks alone by more than one question's worth")
    lines += ["", t("In this run {verdict}. Read the per-question counts, not the third decimal.", verdict=verdict)]
    return "\n".join(lines)
