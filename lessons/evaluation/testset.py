"""Test sets for evaluation: the hand-written gold set, a file of your own, or questions generated from chunks.

Introduced in notebook 06 (evaluation). Every question becomes a `TestItem` with a reference answer
and its evidence: the ids of the chunks that hold the answer (and, for gold questions, the exact
quotes). A retrieved chunk counts as relevant when its id is an evidence id or it contains a quote,
so a test set keeps working when the same documents are chunked the same way again.

Generation (`generate_test_set`) asks the chat model, through structured output, for one
question/answer pair per chunk, and for questions that need *two* chunks from different pages or
documents. Every pair is checked before it is kept — grounded in its chunks (content-word overlap,
which works for Chinese as for English: no sentence rules), and not a near-duplicate of a question
already kept — and every pair that is not kept is reported with its reason, never dropped silently.
"""

from __future__ import annotations

import difflib
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, ValidationError

from lessons.core.i18n import t
from lessons.core.prompt_safety import DATA_RULE, as_data
from lessons.core.structured import invoke_structured
from lessons.ingest.corpus import GoldQuestion
from lessons.ingest.questions import (
    GENERATED_MULTI,
    GENERATED_SINGLE,
    OUT_OF_KB,
    QUESTION_TYPES,
    TEST_SET_LINE_KEYS,
    Question,
    balanced_sample,
)
from lessons.text.language import detect_language
from lessons.text.normalise import normalise_for_match
from lessons.transforms.qa_transform import (
    LANGUAGE_NAMES,
    chunk_id_of,
    evidence_chunk_ids,
    overlap_tokens,
    quote_overlap,
)

DUPLICATE_SIMILARITY = 0.8  # content-word Jaccard above which two questions count as the same question
MIN_ANSWER_GROUNDING = 0.6  # share of the answer's content words that must occur in its chunk(s)
# Keys a test-set line may have: the keys it is written with, and the gold format's `answer`, `sources`, `answerable`.
GOLD_FORMAT_KEYS = ("answer", "sources", "answerable")
_LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}$")


# A test set's questions are the course's one question model (`lessons.ingest.questions.Question`).
TestItem = Question


class TestSetError(ValueError):
    """A test-set file that cannot be used; the message names the file, the line and the fix."""

    __test__ = False  # not a pytest test class


def from_gold(questions: Iterable[GoldQuestion], chunks: Sequence[Document]) -> list[TestItem]:
    """Gold questions as test items, each with the ids of the chunks that contain its evidence quotes."""
    items = []
    for q in questions:
        ids = sorted(evidence_chunk_ids(chunks, q.evidence)) if q.answerable else []
        items.append(q.model_copy(update={"evidence_chunk_ids": ids, "origin": "gold"}, deep=True))
    return items


def save_test_set(items: Sequence[TestItem], path: str | Path) -> Path:
    """Write `items` as JSON Lines (one item per line, UTF-8, Chinese kept readable)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(i.test_set_line(), ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    return path


def load_test_set(path: str | Path, chunks: Sequence[Document] | None = None) -> list[TestItem]:
    """Read a test set from JSON Lines: lines written by `save_test_set`, or gold-format lines
    (`answer`, `evidence`, `sources`). Evidence chunk ids are resolved from the quotes when `chunks`
    are given. Errors name the file, the line and what to fix.

    The schema is strict, because a misread line makes every figure of the run wrong without a word:
    an unknown key (a misspelt "refrence") or type ("out-of-kb") is an error with the closest valid
    name; `"answerable": false` means an out-of-KB question (type "out_of_kb", set when the line has
    no type; any other type beside it is a contradiction and an error), `"answerable": true` with type
    "out_of_kb" is an error too; a blank question is an error; with `chunks`, an evidence quote or
    chunk id found in none of the chunks is an error (copy the quote exactly from the document).
    """
    path = Path(path)
    if not path.is_file():
        raise TestSetError(
            f'test set {path} does not exist — give a .jsonl file of questions, or questions = "generate"'
        )
    items: list[TestItem] = []
    searchable = [(chunk_id_of(c), normalise_for_match(c.page_content)) for c in chunks or []]
    for number, line in enumerate(_test_set_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise TestSetError(
                f"{path}, line {number}: not valid JSON ({error.msg}) — one JSON object per line"
            ) from None
        if not isinstance(raw, dict):
            raise TestSetError(f'{path}, line {number}: expected a JSON object with at least "id" and "question"')
        where = f"{path}, line {number}"
        raw = _normalised_line(raw, where)
        try:
            item = TestItem.model_validate(raw)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
            raise TestSetError(f'{where}: {problems} — each line needs "id" and "question"') from None
        if chunks is not None:
            _check_evidence(item, searchable, where)
        items.append(item)
    if not items:
        raise TestSetError(f"test set {path} holds no questions")
    duplicates = sorted({i.id for i in items if sum(j.id == i.id for j in items) > 1})
    if duplicates:
        raise TestSetError(f"{path}: duplicate question ids {duplicates} — every id must be unique")
    return items


def _test_set_text(path: Path) -> str:
    """The file's text (UTF-8, a byte-order mark allowed); another encoding is an error that names it."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        from lessons.text.text_encoding import EncodingProblem, decode_text, encoding_label

        try:
            found = encoding_label(decode_text(data).encoding)
        except EncodingProblem:
            found = None
        how = (f"it looks like {found}: iconv -f {found} -t UTF-8 '{path.name}' > fixed.jsonl" if found
               else "re-save it as UTF-8 in your editor")  # fmt: skip
        raise TestSetError(f"test set {path} is not UTF-8 (byte 0x{data[error.start]:02x} at offset "
                           f"{error.start}) — test sets are UTF-8 JSON Lines; {how}") from None  # fmt: skip


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word.lower().replace("-", "_"), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _normalised_line(raw: dict, where: str) -> dict:
    """One line's keys checked and mapped onto `TestItem` (gold format, `answerable`, defaults)."""
    allowed = [*TEST_SET_LINE_KEYS, *GOLD_FORMAT_KEYS]
    for key in raw:
        if key not in allowed:
            raise TestSetError(f"{where}: unknown key {key!r}{_did_you_mean(key, allowed)} — allowed keys: "
                               f"{', '.join(allowed)}")  # fmt: skip
    raw = dict(raw)
    if "answer" in raw:
        if "reference" in raw:
            raise TestSetError(f'{where}: both "answer" and "reference" — give the reference answer once')
        raw["reference"] = raw.pop("answer")
    raw.pop("sources", None)
    answerable = raw.pop("answerable", None)
    if answerable is not None and not isinstance(answerable, bool):
        raise TestSetError(f"{where}: answerable = {answerable!r} must be true or false")
    kind = raw.get("type")
    if kind is not None and kind not in QUESTION_TYPES:
        raise TestSetError(f"{where}: unknown type {kind!r}{_did_you_mean(str(kind), QUESTION_TYPES)} — allowed "
                           f"types: {', '.join(QUESTION_TYPES)}")  # fmt: skip
    if answerable is False:
        if kind not in (None, OUT_OF_KB):
            raise TestSetError(f"{where}: \"answerable\": false but type {kind!r} — an unanswerable question has type "
                               f"\"{OUT_OF_KB}\"; fix one of the two")  # fmt: skip
        raw["type"] = OUT_OF_KB
    elif answerable is True and kind == OUT_OF_KB:
        raise TestSetError(f'{where}: "answerable": true but type "{OUT_OF_KB}" — fix one of the two')
    raw.setdefault("type", "fact")
    question = raw.get("question")
    if isinstance(question, str):
        if not question.strip():
            raise TestSetError(f"{where}: the question is blank — write the question, or remove the line")
        raw["question"] = question.strip()
        raw.setdefault("language", detect_language(question))
    language = raw.get("language")
    if isinstance(language, str) and not _LANGUAGE_CODE.match(language):
        raise TestSetError(f'{where}: language {language!r} is not a language code — use "en", "zh", …')
    if raw["type"] == OUT_OF_KB and (raw.get("evidence") or raw.get("evidence_chunk_ids")):
        raise TestSetError(f"{where}: an out-of-KB question has evidence — remove the evidence, or give the type "
                           "of an answerable question")  # fmt: skip
    return raw


def _check_evidence(item: TestItem, searchable: Sequence[tuple[str, str]], where: str) -> None:
    """Resolve the evidence chunk ids from the quotes; a quote or id found in no chunk is an error.

    `searchable` holds (chunk id, `normalise_for_match` text) per chunk, as `evidence_chunk_ids` matches.
    """
    found: set[str] = set()
    for quote in item.evidence:
        key = normalise_for_match(quote)
        holding = {chunk_id for chunk_id, text in searchable if key in text}
        if not key or not holding:
            raise TestSetError(f"{where}: evidence quote {quote!r} is in none of the chunks — copy it exactly from the "
                               "document (or remove it); was the question written for other documents?")  # fmt: skip
        found |= holding
    unknown = [i for i in item.evidence_chunk_ids if i not in {chunk_id for chunk_id, _ in searchable}]
    if unknown:
        raise TestSetError(f"{where}: evidence chunk id(s) {unknown} are in none of the chunks — the documents or "
                           "their chunking changed since the test set was made: give evidence quotes instead")  # fmt: skip
    if item.evidence and not item.evidence_chunk_ids:
        item.evidence_chunk_ids = sorted(found)


# --- generation ------------------------------------------------------------------------------------


class GeneratedQuestion(BaseModel):
    """A question a reader could ask, and its answer, taken only from the given text."""

    question: str = Field(
        min_length=2, description="a self-contained question that the text answers, in the text's language"
    )
    answer: str = Field(
        min_length=1, description="the answer, only from the text; figures, names and units exactly as written"
    )


SINGLE_PROMPT = """Write ONE question that a user could ask a help desk, and its answer, using ONLY the text below.
The question must make sense on its own (name the product, policy or document it is about) and must be answered by
the text. The answer is short and copies figures, names and units exactly. Write both in {language}.
<<DATA_RULE>>

Document: {source}
Text:
{text}""".replace("<<DATA_RULE>>", DATA_RULE)

MULTI_PROMPT = """Write ONE question that can only be answered by combining a fact from text A with a fact from
text B, and its answer, using ONLY these two texts. The question must make sense on its own; the answer is short,
states both facts, and copies figures, names and units exactly. Write both in {language}.
<<DATA_RULE>>

Text A ({source_a}):
{text_a}

Text B ({source_b}):
{text_b}""".replace("<<DATA_RULE>>", DATA_RULE)


@dataclass(frozen=True)
class Rejected:
    """A generated pair that was not kept, with the reason (model failure, not grounded, duplicate)."""

    chunk_ids: tuple[str, ...]
    question: str
    reason: str


@dataclass
class GenerationReport:
    """The kept items, and every pair that was not kept with its reason."""

    items: list[TestItem] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)

    def __str__(self) -> str:
        reasons: dict[str, int] = {}
        for r in self.rejected:
            key = r.reason.split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
        singles = sum(i.type == GENERATED_SINGLE for i in self.items)
        return t("{kept} questions kept ({singles} from one chunk, {pairs} from two); {rejected} not kept",
                 kept=len(self.items), singles=singles, pairs=len(self.items) - singles,
                 rejected=len(self.rejected)) + (f": {reasons}" if reasons else "")  # fmt: skip


def _source(chunk: Document) -> str:
    page = chunk.metadata.get("page")
    return f"{chunk.metadata.get('source', 'unknown')}" + (f", page {page}" if page else "")


def _language(chunks: Sequence[Document]) -> str:
    return str(chunks[0].metadata.get("language") or detect_language(chunks[0].page_content))


def grounding(pair: GeneratedQuestion, chunks: Sequence[Document]) -> str | None:
    """None when the pair is grounded in `chunks`, else why not.

    Grounded: most of the answer's content words (Chinese: characters) occur in the chunks, and with
    two chunks each one contributes a content word to the question or answer that the other lacks.
    """
    text = " ".join(c.page_content for c in chunks)
    share = quote_overlap(pair.answer, text)
    if share < MIN_ANSWER_GROUNDING:
        return t("not grounded: only {share:.0%} of the answer's words are in the text", share=share)
    if len(chunks) > 1:
        asked = overlap_tokens(f"{pair.question} {pair.answer}")
        for i, chunk in enumerate(chunks):
            others = set().union(*(overlap_tokens(c.page_content) for j, c in enumerate(chunks) if j != i))
            if not (asked & (overlap_tokens(chunk.page_content) - others)):
                return t("not grounded: nothing in the question or answer comes from text {which} alone", which="AB"[i])
    return None


def question_similarity(a: str, b: str) -> float:
    """Jaccard similarity of two questions' content words (Chinese: characters)."""
    ta, tb = overlap_tokens(a), overlap_tokens(b)
    return len(ta & tb) / len(ta | tb) if ta | tb else 1.0


def find_duplicate(question: str, kept: Sequence[str], threshold: float = DUPLICATE_SIMILARITY) -> str | None:
    """The first kept question that `question` repeats (same text or near-identical words), or None."""
    key = normalise_for_match(question).casefold()
    for other in kept:
        if normalise_for_match(other).casefold() == key or question_similarity(question, other) >= threshold:
            return other
    return None


def pick_chunks(chunks: Sequence[Document], n: int, seed: int = 0, min_chars: int = 200) -> list[Document]:
    """`n` chunks with enough text to ask about, half English and half Chinese where both exist; seeded."""
    usable = [c for c in chunks if len(c.page_content.strip()) >= min_chars]
    return balanced_sample(usable, n, seed, language_of=lambda chunk: _language([chunk]))


def pair_chunks(
    chunks: Sequence[Document], n: int, embeddings: Embeddings, seed: int = 0, min_chars: int = 200
) -> list[tuple[Document, Document]]:
    """`n` pairs of related chunks in the same language from different pages or documents.

    For each seeded start chunk, its partner is the most similar chunk (by embedding) that sits on
    another page or in another document — related enough for one question to need both.
    """
    starts = pick_chunks(chunks, n, seed=seed + 1, min_chars=min_chars)
    usable = [c for c in chunks if len(c.page_content.strip()) >= min_chars]
    if not starts or len(usable) < 2:
        return []
    vectors = np.array(embeddings.embed_documents([c.page_content for c in usable]))
    start_vectors = np.array(embeddings.embed_documents([c.page_content for c in starts]))

    def place(c: Document) -> tuple:
        return c.metadata.get("source"), c.metadata.get("page")

    pairs = []
    for start, vector in zip(starts, start_vectors):
        order = np.argsort(-(vectors @ vector))
        partner = next((usable[i] for i in order if place(usable[i]) != place(start)
                        and _language([usable[i]]) == _language([start])), None)  # fmt: skip
        if partner is not None:
            pairs.append((start, partner))
    return pairs


def _ask(model: BaseChatModel, chunks: Sequence[Document]) -> GeneratedQuestion:
    language = LANGUAGE_NAMES.get(_language(chunks), "the language of the text")
    if len(chunks) == 1:
        prompt = SINGLE_PROMPT.format(
            language=language, source=_source(chunks[0]), text=as_data(chunks[0].page_content.strip())
        )
    else:
        a, b = chunks
        prompt = MULTI_PROMPT.format(language=language, source_a=_source(a), text_a=as_data(a.page_content.strip()),
                                     source_b=_source(b), text_b=as_data(b.page_content.strip()))  # fmt: skip
    return invoke_structured(model, GeneratedQuestion, prompt)


def generate_test_set(
    model: BaseChatModel,
    chunks: Sequence[Document],
    *,
    n_single: int,
    n_multi: int,
    embeddings: Embeddings | None = None,
    seed: int = 0,
    progress: bool = True,
) -> GenerationReport:
    """Questions grounded in `n_single` chunks and in `n_multi` pairs of chunks; checked and de-duplicated.

    Ids are `gen-001`, `gen-002`, … in generation order; a failed model call is reported as rejected
    with its cause.
    """
    from tqdm.auto import tqdm

    groups: list[tuple[Document, ...]] = [(c,) for c in pick_chunks(chunks, n_single, seed=seed)]
    if n_multi:
        if embeddings is None:  # the disk-cached course embedder: a re-run (or another copy) embeds nothing again
            from lessons.chunking import cached_embeddings

            embeddings = cached_embeddings()
        groups += pair_chunks(chunks, n_multi, embeddings, seed=seed)
    report = GenerationReport()
    for group in tqdm(groups, desc=t("test questions"), disable=not progress):
        ids = tuple(chunk_id_of(c) for c in group)
        try:
            pair = _ask(model, group)
        except Exception as error:  # noqa: BLE001 - one failed request must not stop the set, and is reported
            failure = f"{type(error).__name__}: {str(error)[:200]}"
            report.rejected.append(Rejected(ids, "", t("model failed: {error}", error=failure)))
            continue
        pair = GeneratedQuestion(question=pair.question.strip(), answer=pair.answer.strip())
        problem = grounding(pair, group)
        duplicate = find_duplicate(pair.question, [i.question for i in report.items])
        if problem is None and duplicate is not None:
            problem = t("duplicate: repeats {question!r}", question=duplicate)
        if problem is not None:
            report.rejected.append(Rejected(ids, pair.question, problem))
            continue
        report.items.append(TestItem(
            id=f"gen-{len(report.items) + 1:03d}", question=pair.question, language=detect_language(pair.question),
            type=GENERATED_SINGLE if len(group) == 1 else GENERATED_MULTI, reference=pair.answer,
            evidence_chunk_ids=list(ids), origin="generated",
        ))  # fmt: skip
    return report


def describe(items: Sequence[TestItem]) -> dict[str, float]:
    """A few numbers to compare test sets: size, languages, share needing two chunks, lengths."""
    answerable = [i for i in items if i.answerable]

    def mean(values):
        return float(np.mean(values)) if values else 0.0

    return {
        "questions": len(items),
        "English": sum(i.language == "en" for i in items),
        "Chinese": sum(i.language == "zh" for i in items),
        "out-of-KB": len(items) - len(answerable),
        "needs 2+ chunks": sum(
            len(i.evidence_chunk_ids) > 1 or i.type in ("multi_hop", GENERATED_MULTI) for i in answerable
        ),
        "question chars (mean)": mean([len(i.question) for i in items]),
        "reference chars (mean)": mean([len(i.reference) for i in answerable]),
        "evidence chunks per question": mean([len(i.evidence_chunk_ids) for i in answerable]),
    }


def words_shared_with_evidence(item: TestItem, chunks_by_id: dict[str, Document]) -> float:
    """Share of the question's content words that appear in its evidence chunks (how "easy" lexically)."""
    text = " ".join(chunks_by_id[i].page_content for i in item.evidence_chunk_ids if i in chunks_by_id)
    return quote_overlap(item.question, text) if text else 0.0


def qa_chunk_selection(chunks: Sequence[Document], items: Sequence[TestItem], n: int, seed: int = 0) -> list[Document]:
    """`n` chunks to make QA pairs for: the evidence chunks of `items` first, then seeded others.

    QA pairs cost one LLM call per chunk; on a laptop, transform a sample rather than everything.
    """
    evidence = {i for item in items for i in item.evidence_chunk_ids}
    picked = [c for c in chunks if chunk_id_of(c) in evidence][:n]
    others = [c for c in chunks if chunk_id_of(c) not in evidence]
    picked_ids = {chunk_id_of(c) for c in picked}
    picked_ids |= {chunk_id_of(c) for c in random.Random(seed).sample(others, min(len(others), n - len(picked)))}
    return [c for c in chunks if chunk_id_of(c) in picked_ids]
