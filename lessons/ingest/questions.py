"""The course's one question model and its one sampler.

Introduced in notebook 01 (chunking), where the gold set is first loaded. Every evaluation question —
a hand-written gold question (`lessons.ingest.corpus.load_gold`), a line of a test-set file of your
own, or a generated question (`lessons.evaluation.testset`) — is a `Question`: the question, its
language and type, the reference answer, and its evidence (exact quotes, and the ids of the chunks
that hold them). `GoldQuestion` and `TestItem` are this same class under the names the notebooks use.

`balanced_sample` is the one way a notebook or the evaluation command draws a sample of questions
(or of chunks): seeded and deterministic (the same items and seed, the same sample in every copy of a
notebook), balanced across languages, optionally spread over question types, with named items always taken.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, Field, ValidationInfo, model_validator

# "code" and "config" ask about a code block or a configuration setting (the packages gold set).
QuestionType = Literal["fact", "table", "multi_hop", "paraphrase", "contradiction", "out_of_kb", "code", "config"]
GOLD_LANGUAGES = ("en", "zh")
# Who takes the odd item when a sample does not split evenly between languages (`balanced_sample`).
ODD_SHARE_ORDER = ("zh", "en")
OUT_OF_KB = "out_of_kb"
GENERATED_SINGLE = "generated"
GENERATED_MULTI = "generated_multi"
# The question types a question may have: the gold set's, and those of generated questions.
QUESTION_TYPES = (*QuestionType.__args__, GENERATED_SINGLE, GENERATED_MULTI)
# The keys of a test-set line written by `Question.test_set_line` (and `save_test_set`), in order.
TEST_SET_LINE_KEYS = ("id", "question", "language", "type", "reference", "evidence", "evidence_chunk_ids", "origin")


class SourceRef(BaseModel):
    file: str
    section: str | None = None
    page: int | None = None


class Question(BaseModel):
    """One evaluation question: reference answer, evidence quotes and evidence chunk ids.

    `answer` is the reference answer (`reference` is the same field, the test-set files' name for it).
    A gold question (validated with context `{"gold": True}`, as `load_gold` does) must also be English
    or Chinese, of a gold type, and an answerable one needs sources and evidence quotes.
    """

    __test__ = False  # not a pytest test class
    model_config = {"extra": "forbid", "populate_by_name": True}

    id: str
    question: str = Field(min_length=1)
    language: str
    type: str
    answer: str = Field(default="", validation_alias=AliasChoices("answer", "reference"))
    sources: list[SourceRef] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    evidence_chunk_ids: list[str] = Field(default_factory=list)
    origin: Literal["gold", "generated", "file"] = "file"

    @property
    def answerable(self) -> bool:
        return self.type != OUT_OF_KB

    @property
    def reference(self) -> str:
        """The reference answer (the name test-set files use for `answer`)."""
        return self.answer

    def test_set_line(self) -> dict[str, Any]:
        """The question as one line of a test-set file (the keys of `TEST_SET_LINE_KEYS`)."""
        data = self.model_dump(exclude={"sources"})
        data["reference"] = data.pop("answer")
        return {key: data[key] for key in TEST_SET_LINE_KEYS}

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Question:
        if self.type not in QUESTION_TYPES:
            raise ValueError(f"{self.id}: unknown type {self.type!r} — allowed types: {', '.join(QUESTION_TYPES)}")
        if info.context and info.context.get("gold"):
            _check_gold(self)
        return self


def _check_gold(q: Question) -> None:
    """The gold set's rules: English or Chinese, a gold type, evidence exactly when answerable."""
    if q.language not in GOLD_LANGUAGES:
        raise ValueError(f"{q.id}: language {q.language!r} — a gold question is one of {list(GOLD_LANGUAGES)}")
    if q.type not in QuestionType.__args__:
        raise ValueError(f"{q.id}: type {q.type!r} is not a gold question type ({', '.join(QuestionType.__args__)})")
    if q.answerable and not (q.evidence and q.sources):
        raise ValueError(f"{q.id}: an answerable question needs sources and evidence quotes")
    if not q.answerable and (q.evidence or q.sources or q.answer):
        raise ValueError(f"{q.id}: an out_of_kb question has no sources, evidence or answer")


T = TypeVar("T")


def _language_attribute(item: Any) -> str:
    return item.language


def _type_attribute(item: Any) -> str:
    return item.type


def balanced_sample(
    items: Sequence[T],
    n: int,
    seed: int | random.Random = 0,
    *,
    n_out_of_kb: int | None = None,
    languages: Sequence[str] | None = None,
    by_type: bool = False,
    include: Sequence[str] = (),
    in_order: bool = False,
    language_of: Callable[[T], str] = _language_attribute,
    type_of: Callable[[T], str] = _type_attribute,
) -> list[T]:
    """A seeded sample of `n` items, balanced across languages. The course's one sampler.

    - Languages: `n` is split over `languages` (default: the languages present, sorted — "en" before
      "zh"); when `n` does not divide, the odd items go to the languages in `ODD_SHARE_ORDER` (Chinese
      first), in every copy of a notebook and whatever the reader's language: the English and the Chinese
      copy draw the same sample, so a quick run with `n=1` asks the same Chinese question in both and the
      second copy's chat-model calls come from the LLM cache. Chinese first because the Chinese copy shows
      its reader no English sentence it did not mean to, while an English reader may meet a Chinese question.
      Named `languages` get the odd ones in the order given. A language with fewer items than its share
      gives all it has (the sample is then smaller than `n`; it is not topped up from another language).
    - Within a language: a plain seeded draw (`random.Random.sample`); with `by_type`, each question
      type is shuffled and one of each type (in sorted order) is taken in turn, so the sample spreads
      over the types.
    - Items whose `id` is in `include` are always taken (they count towards their language's share).
    - Deterministic: the same items in the same order, `n` and `seed` give the same sample, in either language's
      copy of a notebook. Pass a `random.Random` as `seed` to draw several samples from one
      stream (answerable, then out-of-KB).
    - With `n_out_of_kb`, `n` counts answerable items and `n_out_of_kb` out-of-KB ones: two samples
      as above, answerable first, drawn from one seeded stream (what a test set's sample uses).
    - Order: language by language, each in the order drawn; with `in_order`, the order of `items`.

    `language_of` and `type_of` read an item's language and type (default: its `.language` and
    `.type`), so the same sampler draws chunks too.
    """
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    if n_out_of_kb is not None:
        options = dict(languages=languages, by_type=by_type, include=include, language_of=language_of, type_of=type_of)
        sample = [*balanced_sample([i for i in items if i.answerable], n, rng, **options),
                  *balanced_sample([i for i in items if not i.answerable], n_out_of_kb, rng, **options)]  # fmt: skip
        return _in_order(items, sample) if in_order else sample
    by_language: dict[str, list[T]] = defaultdict(list)
    for item in items:
        by_language[language_of(item)].append(item)
    chosen_languages = sorted(by_language) if languages is None else list(languages)
    odd_first = chosen_languages if languages is not None else _odd_share_first(chosen_languages)
    sample: list[T] = []
    for language in chosen_languages:  # drawn in this order, so an even `n` gives the same sample in every language
        share = n // len(chosen_languages) + (1 if odd_first.index(language) < n % len(chosen_languages) else 0)
        pool = by_language.get(language, [])
        forced = [item for item in pool if getattr(item, "id", None) in include][:share]
        rest = [item for item in pool if not any(item is f for f in forced)]
        wanted = min(share - len(forced), len(rest))
        drawn = _round_robin_by_type(rest, wanted, rng, type_of) if by_type else rng.sample(rest, wanted)
        sample += forced + drawn
    return _in_order(items, sample) if in_order else sample


def _odd_share_first(languages: list[str]) -> list[str]:
    """`languages` in the order the odd items of a split go to: `ODD_SHARE_ORDER` first, the others after."""
    first = [language for language in ODD_SHARE_ORDER if language in languages]
    return [*first, *(language for language in languages if language not in first)]


def take_turns(table: Any, by: Sequence[str], n: int | None = None) -> Any:
    """The rows of a question table (a pandas DataFrame with a `language` column) taking turns over the groups `by`:
    the first row of every group, then the second of every group, …; within a turn the reader's language
    (`course_language()`) first, then the groups in sorted order. The first `n` rows (None: all).

    Introduced in notebook 09 (routing, filters, cache): a deterministic order that spreads a small sample over
    routes, corpora and languages. No draw: `balanced_sample` stays the course's one random sampler; this only
    orders rows already chosen (their own order kept within a group).
    """
    from lessons.core.i18n import course_language

    turns = table.assign(
        _turn=table.groupby(list(by), sort=False).cumcount(), _other=table["language"] != course_language()
    )
    ordered = turns.sort_values(["_turn", "_other", *by], kind="stable").drop(columns=["_turn", "_other"])
    return ordered if n is None else ordered.head(n)


def _in_order(items: Sequence[T], sample: Sequence[T]) -> list[T]:
    picked = {id(item) for item in sample}
    return [item for item in items if id(item) in picked]


def _round_robin_by_type(items: list[T], n: int, rng: random.Random, type_of: Callable[[T], str]) -> list[T]:
    """Shuffle each type's items (types in order of first appearance), then take one of each type in turn."""
    by_type: dict[str, list[T]] = defaultdict(list)
    for item in items:
        by_type[type_of(item)].append(item)
    for group in by_type.values():
        rng.shuffle(group)
    taken: list[T] = []
    while len(taken) < n:
        for kind in sorted(by_type):
            if by_type[kind] and len(taken) < n:
                taken.append(by_type[kind].pop())
    return taken
