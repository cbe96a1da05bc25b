"""The course's one answerability check: does the evidence state what THIS question asks for?

Introduced in notebook 04 (grading loop); used by the grading loop's gate, notebook 05's verifier, the
deep-research agent's decision to stop, notebook 06's pipelines and the service's `/v1/ask`.

A near miss is on topic: the passage is about the same company, product or policy, so a relevance score
(P(yes), the cross-encoder) is high — but it does not state the quarter, the office, the version, the
person or the amount the question asks about. A 1.5B judge cannot be trusted to notice that; it can be
made to **show its evidence**, and code can check the evidence:

1. One structured call (`Evidence`): the model copies the sentence or table row that answers, or leaves
   the quote empty, and names what the question asks for in the question's words (`asks_for`).
2. Code verifies the quote: it must be (near-)verbatim in one retrieved chunk (`locate_quote`; words the judge
   took from the question to frame it count as copied, but the chunk must add `MIN_EVIDENCE_SHARE` of it; a table
   row may be rewritten, "key: value", when every value of the quote is a cell of that one row), and
   every specific of the question (`question_specifics`: numbers, versions, years, quarters, dates, quoted terms,
   names, the unit of a "how many" — with their Chinese forms, 第三季度 ↔ Q3, 2026年 ↔ 2026, 9月19日 ↔
   September 19, 几周 ↔ weeks) must occur in or around it: figures, dates, units and quoted terms in the quote's
   neighbourhood (the chunk's header and `WINDOW_CHARS` either side), names anywhere in the retrieved chunks; a
   month or quarter asked must not be contradicted by the quote's own sentence, naming another (`other_period`).
   At least `MIN_FOCUS_SHARE` of the question's words among `asks_for` (`focus_terms`; Chinese cut into words) must
   occur there too — or, when `asks_for` names none of them, `MIN_QUESTION_SHARE` of the question's own words — and,
   whatever the judge named, `MIN_FOCUS_SHARE` of the noun that code reads after "which" / "what" / 什么 / 哪个 in a
   question that asks one thing (`asked_terms`: "which distance metric" needs a distance metric; 解决率是多少 a
   解决率). "Which version" asks for a version number; "how much / many / long / often", 多少, 多久 for an amount
   (a figure, a number word or a frequency; not a reference, a version or a date: #10868, v2.10.4) around the quote.
   A quote that repeats the question still counts when the chunk adds a figure the question lacks; when the judge
   copied the question as its quote, its answer, if it passes every check as a quote, is the evidence — and so is an
   answer of `MIN_ANSWER_WORDS` or more when the quote was found but failed a later check (the judge quoted the wrong
   sentence). With `check_answer`, the judge's short answer must also say something the question does not, and be
   stated.
3. The relevance signals the pipeline already has — the chat model's P(yes) per chunk, and the
   cross-encoder's score that the reranker records in `metadata[CROSS_ENCODER_KEY]` — must reach the
   language's thresholds (`AnswerabilityThresholds`; 0 switches a signal off). The check never scores again.

`AnswerabilityCheck(model)(question, documents, p_yes=...)` returns an `AnswerabilityVerdict`: the
decision, the reason in plain words, the quote, where it was found and which specifics were missing.

An option, off by default: `AnswerabilityCheck(model, asks_for_from_question=True)` asks for `asks_for` as one of the
question's own 1-3-word spans (`question_spans`; the schema of `evidence_schema`, an enum the grammar enforces). Left
free, the judge copies its field description ("what it asks for") in about half the rows, and then only
`MIN_QUESTION_SHARE` of the question's words is looked for (measured with `benchmarks/bench_answerability.py
--asks-for-enum`).
"""

from __future__ import annotations

import difflib
import functools
import itertools
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, create_model

from lessons.agents.answering import format_context
from lessons.agents.claim_check import claim_is_grounded, content_tokens, figures
from lessons.core.i18n import N_
from lessons.core.prompt_safety import DATA_RULE
from lessons.core.search_text import CONTEXT_HEADER
from lessons.core.structured import invoke_structured
from lessons.retrieval.rerank import RELEVANCE_SCORE
from lessons.text.language import detect_language
from lessons.text.normalise import is_rule_row, normalise_for_match, table_cells

CROSS_ENCODER_KEY = RELEVANCE_SCORE  # metadata key: the reranker's cross-encoder score for the passage
MIN_QUOTE_COVERAGE = 0.9  # share of the quote's characters that must match the chunk, in order
MIN_MATCH_BLOCK = 4  # shorter common runs are chance, not copying
MIN_QUOTE_CHARS = 8  # a shorter "quote" ("No", "Yes") states nothing a reader could check
MIN_ANSWER_WORDS = 4  # an answer this long (a Chinese character half a word) is a statement, not a bare value
MIN_EVIDENCE_SHARE = 0.25  # of the quote, found in the chunk and not in the question: less repeats the question
MIN_FOCUS_SHARE = 0.5  # of the words naming what is asked (the judge's asks_for, from the question), around the quote
MIN_QUESTION_SHARE = 0.2  # of the question's own words around the quote, when the judge's asks_for names none of them
MIN_TERM_COVERAGE = 0.0  # share of the question's content words around the quote (0: not required; see verify_evidence)
WINDOW_CHARS = 300  # the neighbourhood of a quote in which the question's figures must occur
CONTEXT_CHARS = 1200  # each chunk as the judge reads it


class Evidence(BaseModel):
    """The judge's evidence: the sentence or table row that answers, copied, or nothing; and what the question asks for."""

    # The quote comes first: asked for a verdict first, a small model decides before it has looked; asked to name what
    # the question asks for first, it left the quote empty far more often on the dev questions.
    # Every field is asked for, in this order (a grammar writes required fields first); `asks_for` keeps a default so
    # that evidence written before it existed (stored benchmark rows, scripted models) still reads.
    model_config = ConfigDict(json_schema_extra={"required": ["quote", "answer", "asks_for"]})

    quote: str = Field(
        description="the ONE sentence or table row, copied word for word from a document, that states the answer to "
        "exactly this question; empty if no document states it"
    )
    answer: str = Field(description="the answer in a few words, taken from the quote; empty if the quote is empty")
    asks_for: str = Field(
        default="", description="the few words of the question that name what it asks for, copied from the question"
    )


EVIDENCE_PROMPT = """Question: {question}

Find the evidence for this question in the documents below. <<DATA_RULE>>

{documents}

Copy, word for word, the ONE sentence or table row from the documents above (never from the question) that states
the answer to exactly this question — with what it asks for: the same quarter, year, version, office, person or
amount. A sentence on the same topic that does not state that is NOT evidence: then leave the quote empty. Last,
copy from the question the few words that name what it asks for.""".replace("<<DATA_RULE>>", DATA_RULE)

EVIDENCE_PROMPT_ZH = """问题：{question}

在下面的资料中找出这个问题的证据。<<DATA_RULE>>

{documents}

从上面的资料中（不要从问题中）逐字复制陈述了这个问题答案的那一句话或表格中的一行，保持原文的语言，不要翻译。它必须包含问题问的
具体内容：同一个季度、年份、版本、办公室、人物或金额。只是话题相同、却没有陈述这些内容的句子不是证据：这时引文留空。最后，从问题中
复制点明它问的是什么的几个词。""".replace("<<DATA_RULE>>", DATA_RULE)

EVIDENCE_PROMPTS = {"en": EVIDENCE_PROMPT, "zh": EVIDENCE_PROMPT_ZH}


# --- the question's specifics -------------------------------------------------------------------------------

_ORDINALS = {"1": "first", "2": "second", "3": "third", "4": "fourth"}
_CN_DIGITS = {"一": "1", "二": "2", "三": "3", "四": "4", "五": "5", "六": "6", "七": "7", "八": "8", "九": "9"}
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]  # fmt: skip
_QUARTER = re.compile(
    r"\bq([1-4])\b|\b(first|second|third|fourth|1st|2nd|3rd|4th) quarter\b|第?([一二三四1-4])季度", re.IGNORECASE
)
_CN_DATE = re.compile(r"(\d{1,2})\s*月\s*(\d{1,2})\s*日")
_EN_DATE = re.compile(
    r"\b(" + "|".join(m[:3] for m in _MONTHS) + r")[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b|"
    r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(" + "|".join(m[:3] for m in _MONTHS) + r")[a-z]*\b",
    re.IGNORECASE,
)
# A month on its own ("in August 2026", 8 月) names a period, as a quarter does: the evidence must state it around the
# quote, not in some other retrieved chunk (blind set 11, nm11-course-en-04: August asked, September quoted, August in
# another chunk). "May" counts only before a year (else it is the verb).
_EN_MONTH = re.compile(
    r"\b(" + "|".join(m.capitalize() for m in _MONTHS if m != "may") + r"|May(?=,?\s+(?:19|20)\d\d))\b"
)
_CN_MONTH = re.compile(
    r"(?<![\d个])(1[0-2]|[1-9]|十[一二]|[一二三四五六七八九十])\s*月(?!\s*(?:\d{1,2}|[一二三四五六七八九十]+)\s*[日号])"
)
_YEAR = re.compile(r"(?<![\d.])((?:19|20)\d\d)(?![\d.])")
_QUOTED = re.compile(r"\"([^\"]{2,60})\"|“([^”]{2,60})”|「([^」]{2,60})」|『([^』]{2,60})』|‘([^’]{2,60})’")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-.+_][A-Za-z0-9]+)*")
_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")
_TAG = re.compile(r"</?\s*document[^>]*>")  # a judge that copies the data block's tags with the quote
_CAPITALISED = re.compile(r"(?<![\w-])[A-Z][A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
_LOWER_WORD = re.compile(r"(?<![\w-])[a-z][a-z0-9]+(?:-[a-z0-9]+)*(?![\w-])")
# Capitalised words that are no names: question words, auxiliaries, and words capitalised in titles.
_NOT_NAMES = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "has",
        "have",
        "had",
        "the",
        "a",
        "an",
        "in",
        "on",
        "at",
        "of",
        "for",
        "to",
        "and",
        "or",
        "if",
        "by",
        "with",
        "from",
        "as",
        "i",
    ]
)


# A hyphen after an English prefix makes an ordinary word ("re-reads", "pre-built", "non-profit"), no identifier: the
# documents say it in their own words ("synchronised"), so it is not a name they must repeat.
_PREFIXED_WORD = re.compile(r"(?:re|pre|co|non|un|anti|self|multi|semi|sub|post|mid)-[a-z]+(?:-[a-z]+)*")
_SENTENCE_START = re.compile(r"[.?!。？！]\s+$")
# Words naming the kind of document asked about ("according to the Matplotlib README"): the document need not say them.
_DOCUMENT_WORDS = frozenset(["readme", "readmes"])


@dataclass(frozen=True)
class Specific:
    """One thing the question asks about that the evidence must state: its text, the forms any of which
    counts (lower case), and its kind (quarter, date, year, figure, quoted, name, unit; shape: `pattern` instead)."""

    text: str
    forms: tuple[str, ...]
    kind: str
    pattern: str = ""  # kind "shape": what any answer of the kind looks like (a version number), instead of forms


# "How many weeks" asks for weeks: an amount of days is no answer. The unit or counted noun of "how many X" /
# "多少(个)X" must occur around the quote; time units with their other-language forms.
_UNITS = {
    "hour": ("hour", "hours", "h", "hr", "hrs", "小时"),
    "minute": ("minute", "minutes", "min", "mins", "分钟"),
    "day": ("day", "days", "天", "日"),
    "week": ("week", "weeks", "周", "星期"),
    "month": ("month", "months", "月"),
    "year": ("year", "years", "年"),
}
_UNITS_ZH = {"小时": "hour", "分钟": "minute", "天": "day", "周": "week", "星期": "week", "个月": "month", "年": "year"}
_HOW_MANY = re.compile(r"\bhow many ([a-z][a-z-]+(?: [a-z][a-z-]+){0,2})", re.IGNORECASE)
# Where the counted noun phrase of "how many unused leave days can ..." ends: a verb, an auxiliary or a preposition.
_PHRASE_END = frozenset(
    ["can", "could", "do", "does", "did", "are", "is", "was", "were", "have", "has", "had", "will", "would", "should",
     "may", "might", "must", "be", "been", "in", "on", "at", "of", "for", "to", "by", "with", "from", "per", "and",
     "or", "the", "a", "an", "that", "which", "who"]
)  # fmt: skip
# "从多少缩短到了多少" (from how much to how much) asks for two amounts: the word after the range's first 多少 is the
# verb of change (缩短, 提高), not what is counted; a counted noun is written after the second ("从多少天缩短到多少天").
_HOW_MANY_ZH = re.compile(
    r"(?<![从由])(?<![从由]\s)(?:多少|几)\s*(?:个|名|位|台|条|次|家|项)?\s*(小时|分钟|个月|星期|[天周年]|[\u4e00-\u9fff]{2})"
)


def _counted(question: str) -> list[Specific]:
    """The unit or counted noun of the question's "how many X" / "多少X" (kind "unit"): what the amount is of."""
    found = []
    for match in _HOW_MANY.finditer(question):
        words = list(itertools.takewhile(lambda w: w not in _PHRASE_END, match.group(1).lower().split()))
        if not words:
            continue
        # "how many unused leave days": the noun is the last word, an adjective or two may precede it; any counts
        stems = [re.sub(r"(?<=[^s])s$", "", word) for word in words]
        unit = _UNITS.get(stems[-1])
        forms = unit or tuple(dict.fromkeys(f for stem in stems for f in (stem, stem + "s", stem + "es")))
        found.append(Specific(match.group(0)[: len("how many ") + len(" ".join(words))], forms, "unit"))
    for match in _HOW_MANY_ZH.finditer(question):
        noun = match.group(1)
        unit = _UNITS_ZH.get(noun)
        found.append(Specific(match.group(0), _UNITS[unit] if unit else (noun,), "unit"))
    for match in _WHICH_VERSION.finditer(question):  # "which version" is answered by a version number, or not at all
        found.append(Specific(match.group(0), (), "shape", _VERSION_NUMBER))
    # "how long", "多久": a passage around the quote that states no amount at all is no answer
    amount = _HOW_MUCH.search(question)
    if amount:
        found.append(Specific(amount.group(0), (), "shape", _AMOUNT))
    return found


_WHICH_VERSION = re.compile(
    r"\b(?:which|what) (?:[a-z][\w-]* )?versions?\b|(?:哪个|哪一个|什么|哪些)\s*版本|版本号", re.IGNORECASE
)
_VERSION_NUMBER = r"(?<![\w.])v?\d+\.\d+"
# "How much / many / long / often", 多少, 多久, 几: the question asks for an amount, which a figure, a number word or a
# frequency states ("€45", "three days", "weekly", 两周). Looked for in the quote's window (lower case, as `_window`).
_HOW_MUCH = re.compile(
    r"\bhow (?:much|many|long|often|far|big|large|old|fast|soon)\b|多少|多久|多长|几(?!乎)", re.IGNORECASE
)
_AMOUNT = (
    # a figure, but not the digits of a reference or a label: #14171, pull/11319, v2.10.4, 2.10.4, 2024-12-18, p50
    r"(?<![#/A-Za-z0-9_.\-@])(?!\d+\.\d+\.\d)(?!\d{4}-\d\d-\d\d)\d|"
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|"
    r"thousand|million|billion|half|once|twice|daily|weekly|monthly|yearly|annually|quarterly|hourly)\b|"
    r"[一二两三四五六七八九十百千万半]"
)


def _quarter(match: re.Match) -> Specific:
    digit = match.group(1) or match.group(3) or ""
    if match.group(2):
        digit = {"first": "1", "second": "2", "third": "3", "fourth": "4"}.get(
            match.group(2).lower(), match.group(2)[0]
        )
    digit = _CN_DIGITS.get(digit, digit)
    cn = next(k for k, v in _CN_DIGITS.items() if v == digit)
    return Specific(
        match.group(0),
        (f"q{digit}", f"{_ORDINALS[digit]} quarter", f"{digit}q", f"第{cn}季度", f"{cn}季度", f"第{digit}季度"),
        "quarter",
    )


def _date(month: int, day: int, text: str) -> Specific:
    name = _MONTHS[month - 1]
    forms = {f"{month}月{day}日", f"{name} {day}", f"{name[:3]} {day}", f"{day} {name}", f"{day} {name[:3]}",
             f"-{month:02d}-{day:02d}", f"{month}/{day}"}  # fmt: skip
    return Specific(text, tuple(sorted(forms)), "date")


_CN_MONTHS = ("一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二")


def _month(name: str, text: str) -> Specific:
    """A month named alone: its English name and abbreviation, N月 (digits or Chinese numerals) and the -MM- of an
    ISO date."""
    if name.isdigit():
        number = int(name)
    elif name in _CN_MONTHS:
        number = _CN_MONTHS.index(name) + 1
    else:
        number = _MONTHS.index(name.lower()) + 1
    month = _MONTHS[number - 1]
    return Specific(text, (month, month[:3], f"{number}月", f"{_CN_MONTHS[number - 1]}月", f"-{number:02d}-"), "month")


def question_specifics(question: str) -> list[Specific]:
    """What the evidence for `question` must state: quarters, dates, years, other figures and versions, quoted
    terms, names (capitalised, CamelCase, acronyms, identifiers joined by hyphens, dots or underscores, read whole:
    "top_p", "permissions.sync_interval_minutes"; every Latin-script word of a Chinese question), and what a "how
    many" counts (its unit: "how many weeks" is not answered in days) and that a "how much / long / often" or 多少 / 多久
    asks for an amount (kind "shape": a figure, number word or frequency). Each with the forms that count, Chinese and
    English (introduced in notebook 04)."""
    text = normalise_for_match(question)
    found: list[Specific] = []
    taken: list[tuple[int, int]] = []

    def claim(match: re.Match, specific: Specific) -> None:
        found.append(specific)
        taken.append(match.span())

    for match in _QUARTER.finditer(text):
        claim(match, _quarter(match))
    for match in _CN_DATE.finditer(text):
        claim(match, _date(int(match.group(1)), int(match.group(2)), match.group(0)))
    for match in _EN_DATE.finditer(text):
        month_name = (match.group(1) or match.group(4)).lower()[:3]
        day = int(match.group(2) or match.group(3))
        month = next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(month_name))
        if 1 <= day <= 31:
            claim(match, _date(month, day, match.group(0)))
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g)
        claim(match, Specific(quoted, (quoted.casefold(),), "quoted"))

    def free(span: tuple[int, int]) -> bool:
        return all(span[1] <= a or span[0] >= b for a, b in taken)

    for match in [*_EN_MONTH.finditer(text), *_CN_MONTH.finditer(text)]:
        if free(match.span()):
            claim(match, _month(match.group(1), match.group(0)))
    for match in _YEAR.finditer(text):
        if free(match.span()):
            claim(match, Specific(match.group(1), (match.group(1),), "year"))
    for match in re.finditer(r"(?<![\w.])v?(\d+(?:[.,]\d+)*)(?![\w])", text):
        if free(match.span()):
            value = figures(match.group(1))[0]
            claim(match, Specific(match.group(0), (value,), "figure"))
    found.extend(_counted(text))
    chinese = detect_language(question) == "zh"
    words = list(_LATIN_WORD.finditer(text))
    for position, match in enumerate(words):
        word = re.sub(r"'s$", "", match.group(0))
        if not free(match.span()) or word.lower() in _NOT_NAMES or word.lower() in _DOCUMENT_WORDS or len(word) < 2:
            continue
        # a word capitalised because a sentence starts there ("... hamper. Up to what value ...") is no name
        first = (position == 0 and match.start() < 3) or bool(_SENTENCE_START.search(text[: match.start()]))
        name = (
            chinese
            or any(c.isupper() for c in word[1:])
            or (any(c in "-._" for c in word) and not _PREFIXED_WORD.fullmatch(word))
            or (word[0].isupper() and not first)
        )
        if name and not any(s.kind == "name" and s.forms[0] == word.casefold() for s in found):
            found.append(Specific(word, (word.casefold(),), "name"))
    return found


def other_period(specifics: Sequence[Specific], sentence: str) -> list[Specific]:
    """The asked months and quarters that the evidence's own sentence contradicts: it states a period of that kind (a
    month, or a date, for a month; a quarter for a quarter) and not the asked one. "Median first response time in
    September is 1 hour 31 minutes" does not answer a question about August, though "August" may stand a few lines
    away (blind set 11, nm11-course-en-04)."""
    stated = {s.kind for s in question_specifics(sentence)}
    said = _haystack(sentence)
    return [s for s in specifics if stated & _PERIOD_KINDS.get(s.kind, set()) and not occurs(s, said)]


_PERIOD_KINDS = {"month": {"month", "date"}, "quarter": {"quarter"}}  # an asked period's kind: the kinds that state one


def _haystack(text: str) -> str:
    """Text as the specifics are looked for in it: normalised, lower case, "_" and "/" as spaces."""
    return normalise_for_match(text).casefold().replace("_", " ")


def _unspaced(text: str) -> str:
    return re.sub(r"\s+", "", text)


_BEFORE = r"(?<![0-9A-Za-z])"
_BEFORE_DIGIT = r"(?<![0-9A-Za-uw-z.])"  # "v2.9" holds 2.9; "12.9" and "1.2.9" do not


def occurs(specific: Specific, text: str) -> bool:
    """Whether one of the specific's forms occurs in `text` (already `_haystack`-ed), as a whole token."""
    if specific.pattern:
        return re.search(specific.pattern, text) is not None
    if specific.kind == "name":  # "code-freeze" is "code freeze", "top_p" is "top p" (`_haystack`)
        text = text.replace("-", " ")
    for form in specific.forms:
        form = form.replace("-", " ").replace("_", " ") if specific.kind == "name" else form
        if _CJK_CHAR.search(form):  # "9 月 17 日" is "9月17日": Chinese text spaces figures or not
            if _unspaced(form) in _unspaced(text):
                return True
        elif form.startswith("-") or not form[0].isalnum():  # "-09-17", "€"
            if form in text:
                return True
        elif re.search(rf"{_BEFORE_DIGIT if form[0].isdigit() else _BEFORE}{re.escape(form)}(?![0-9A-Za-z])", text):
            return True
    return False


# --- the quote --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuoteMatch:
    """Where a quote was found: the chunk's position in the list, the share of the quote's characters that match
    it in order, and the matched span in the chunk's normalised text."""

    document: int
    coverage: float
    start: int
    end: int
    evidence: float = 1.0  # the share of the quote found in the chunk and NOT in the question: what it adds
    from_answer: bool = False  # the judge's answer, not its quote, is the evidence found (`verify_evidence`)


def _marks(blocks, size: int, offset_of_needle: int = 1) -> list[bool]:
    marked = [False] * size
    for block in blocks:
        start = block[offset_of_needle]
        for i in range(start, start + block.size):
            marked[i] = True
    return marked


def _normal(text: str) -> str:
    return normalise_for_match(text).casefold()


def _needle(quote: str) -> str:
    """The quote as it is looked for: normalised, the data block's tags and the framing punctuation removed."""
    return _normal(_TAG.sub(" ", quote)).strip(" .。…\"“”'")


def locate_quote(
    quote: str, documents: Sequence[Document], question: str = "", framing: bool = True
) -> QuoteMatch | None:
    """The chunk that holds `quote` (near-)verbatim, or None: exact after normalisation, else the chunk whose
    common runs of `MIN_MATCH_BLOCK`+ characters cover the most of the quote (introduced in notebook 04).
    A match below `MIN_QUOTE_COVERAGE` is returned too: the caller decides; an empty quote gives None.

    With `question`, `evidence` is the share the chunk adds beyond the question (a quote that repeats the question
    adds none); with `framing` too, words the judge took from the question to frame the quote ("The JupyterLab weekly
    dev meeting takes place on" + the chunk's "Wednesdays 9:00 AM Pacific Time") count as copied, not invented.

    A table row may be quoted rewritten: its cells joined otherwise ("permissions.sync_interval_minutes: 15" for the
    row `| permissions.sync_interval_minutes | 15 | ... |`), or as a sentence whose other words are the question's
    ("Tickets opened in Q3 2026 were 2,585"). Such a quote is found, in full, when its values are cells of ONE row of
    a Markdown table in the chunk (`_row_spans`)."""
    needle = _needle(quote)
    if not needle:
        return None
    asked = _normal(question)
    shared = difflib.SequenceMatcher(None, asked, needle, autojunk=False).get_matching_blocks() if asked else []
    from_question = _marks([b for b in shared if b.size >= MIN_MATCH_BLOCK], len(needle))
    best: QuoteMatch | None = None
    for index, document in enumerate(documents):
        hay = _normal(document.page_content)
        at = hay.find(needle)
        rows = _table_rows(document.page_content)
        if at >= 0:
            blocks = [difflib.Match(at, 0, len(needle))]
        else:
            matcher = difflib.SequenceMatcher(None, hay, needle, autojunk=False)
            blocks = [b for b in matcher.get_matching_blocks() if b.size >= MIN_MATCH_BLOCK]
        candidates = []
        if blocks:
            from_chunk = _marks(blocks, len(needle))
            coverage = sum(c or (q and framing) for c, q in zip(from_chunk, from_question)) / len(needle)
            added = sum(c and not q for c, q in zip(from_chunk, from_question)) / len(needle)
            candidates.append(QuoteMatch(index, coverage, blocks[0].a, blocks[-1].a + blocks[-1].size, added))
        if at < 0:
            for row in rows:
                spans = _row_spans(needle, row, question)
                if spans:
                    from_row = _marks([difflib.Match(0, a, b - a) for a, b in spans], len(needle))
                    added = sum(c and not q for c, q in zip(from_row, from_question)) / len(needle)
                    start = max(hay.find(row.text), 0)
                    candidates.append(QuoteMatch(index, 1.0, start, start + len(row.text), added))
        for match in candidates:
            if best is None or (match.coverage, match.evidence) > (best.coverage, best.evidence):
                best = match
    return best


# --- table rows -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TableRow:
    """One body row of a Markdown table in a chunk: its cells and the header's (normalised, lower case; the header's
    empty when the chunk holds no header line for it) and the row as the chunk's normalised text holds it."""

    cells: tuple[str, ...]
    header: tuple[str, ...]
    text: str


def _table_rows(text: str) -> list[_TableRow]:
    """The body rows of the Markdown tables in `text` (the form tables take in our chunks: Docling and the PDF reader
    write pipe tables), each with its table's header cells when the header line is in `text`."""
    rows: list[_TableRow] = []
    block: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        cells = table_cells(line)
        if cells is not None:
            block.append(cells)
            continue
        ruled = len(block) > 1 and is_rule_row(block[1])
        header = tuple(_normal(cell) for cell in block[0]) if ruled else ()
        for cells in block[2:] if ruled else block:
            if not all(is_rule_row([cell]) or not cell.strip() for cell in cells):
                normal = tuple(_normal(cell) for cell in cells)
                rows.append(_TableRow(normal, header, " ".join(c for c in normal if c)))
        block = []
    return rows


def _cell_pattern(cell: str) -> re.Pattern:
    """A cell as a quote may write it: its words with any spacing ("2.5 小时" is "2.5小时"), never part of a longer
    word or number ("15" is not in "150", "2" not in "2.5")."""
    body = r"\s*".join(re.escape(word) for word in cell.split())
    before = r"(?<![0-9a-z_])(?<!\d[.,])" if cell[0].isascii() and cell[0].isalnum() else ""
    after = r"(?![0-9a-z_]|[.,]\d)" if cell[-1].isascii() and cell[-1].isalnum() else ""
    return re.compile(before + body + after)


def _separator(char: str) -> bool:
    return char.isspace() or unicodedata.category(char).startswith("P")


_TWO = frozenset({-1, -2})  # two cells or more of the row (`_row_spans`)


def _row_spans(needle: str, row: _TableRow, question: str = "") -> list[tuple[int, int]] | None:
    """Where `needle` (a quote as `locate_quote` looks for it) holds the cells of `row`, when the quote reads as that
    one row rewritten, else None. Read left to right, the quote is the row's cells, its header's cells, punctuation,
    and words of the question (no figure: every value must be a cell). At least two cells of the row, in the row's
    order, except that a header cell is followed by its own column's cell ("Q3 2026: 2,585", "Key: guard.mode")."""
    options: dict[str, list[tuple[str, int]]] = {}
    for kind, cells in (("cell", row.cells), ("header", row.header)):
        for column, cell in enumerate(cells):
            if cell and not all(_separator(c) for c in cell):
                options.setdefault(cell, []).append((kind, column))
    if len([c for c in row.cells if c]) < 2:
        return None
    patterns = [(_cell_pattern(cell), choices) for cell, choices in options.items()]
    asked = _normal(question)
    asked_words, asked_unspaced = set(re.findall(r"[0-9a-z]+", asked)), _unspaced(asked)

    def asked_words_only(text: str) -> bool:  # words of the question, no figure
        if any(c.isdigit() for c in text):
            return False
        if _CJK_CHAR.search(text):
            return _unspaced(text) in asked_unspaced
        return all(word in asked_words for word in re.findall(r"[0-9a-z]+", text))

    items: list[tuple[int, int, list[tuple[str, int]]]] = []  # (start, end, what it may be)
    residue_start, i = None, 0

    def close_residue(end: int) -> bool:
        return residue_start is None or asked_words_only(needle[residue_start:end])

    while i < len(needle):
        found = [(m.end(), choices) for pattern, choices in patterns if (m := pattern.match(needle, i))]
        if found:
            end = max(e for e, _ in found)
            if not close_residue(i):
                return None
            residue_start = None
            choices = [c for e, cs in found if e == end for c in cs]
            items.append((i, end, choices + ([("framing", -1)] if asked_words_only(needle[i:end]) else [])))
            i = end
        elif _separator(needle[i]):
            if not close_residue(i):
                return None
            residue_start, i = None, i + 1
        else:
            residue_start = i if residue_start is None else residue_start
            i += 1
    if not close_residue(len(needle)):
        return None

    @functools.cache
    def read(k: int, last: int, header: int | None, cells: frozenset[int]) -> list[tuple[int, int]] | None:
        if k == len(items):
            return [] if header is None and len(cells) >= 2 else None
        start, end, choices = items[k]
        for kind, column in choices:
            if header is not None and not (kind == "cell" and column == header):
                continue  # a header cell is followed by its column's cell
            if kind == "framing":
                rest = read(k + 1, last, None, cells)
            elif kind == "header":
                rest = read(k + 1, last, column, cells)
            elif header is None and column <= last:
                continue  # the row's cells in the row's order
            else:
                counted = cells | {column}  # which cells no longer matters once two are: few states to search
                rest = read(k + 1, last if header is not None else column, None, _TWO if len(counted) > 1 else counted)
            if rest is not None:
                return rest if kind == "framing" else [(start, end), *rest]
        return None

    return read(0, -1, None, frozenset())


# --- the verdict ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerabilityThresholds:
    """One language's thresholds on the relevance signals: the best P(yes) and the best cross-encoder score among
    the retrieved chunks must reach them (0.0 switches a signal off)."""

    p_yes: float = 0.0
    cross_encoder: float = 0.0


# With no calibration: the code check alone decides (the relevance signals switched off).
NO_THRESHOLDS = {"en": AnswerabilityThresholds(), "zh": AnswerabilityThresholds()}


# The verdict's reasons in plain words, marked for the catalogue: a notebook shows `t_marked(verdict.reason)`.
REASONS = (
    N_("answerable"),
    N_("no quote"),
    N_("quote not in the documents"),
    N_("quote repeats the question"),
    N_("specifics missing"),
    N_("asked-for missing"),
    N_("too few of the question's words"),
    N_("P(yes) below threshold"),
    N_("cross-encoder below threshold"),
)


@dataclass(frozen=True)
class AnswerabilityVerdict:
    """The check's decision and everything it rests on (introduced in notebook 04).

    `reason`: one of `REASONS`, in plain words. `missing`: the question's specifics absent around the quote (or, for
    "asked-for missing", the words naming what is asked).
    """

    answerable: bool
    reason: str
    quote: str = ""
    answer: str = ""
    asks_for: str = ""  # the judge's words for what the question asks (`focus_terms` reads the question's among them)
    document: int | None = None  # which retrieved chunk holds the quote
    coverage: float = 0.0
    specifics: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    term_coverage: float | None = None  # share of the question's content words around the quote (a measurement)
    p_yes: float | None = None
    cross_encoder: float | None = None
    evidence_ok: bool = field(default=False)  # the code check alone, before the relevance thresholds


def cross_encoder_scores(documents: Sequence[Document]) -> list[float | None]:
    """The cross-encoder score the reranker recorded for each chunk (`metadata[CROSS_ENCODER_KEY]`), None where absent."""
    return [
        float(d.metadata[CROSS_ENCODER_KEY]) if d.metadata.get(CROSS_ENCODER_KEY) is not None else None
        for d in documents
    ]


def _window(document: Document, match: QuoteMatch) -> str:
    text = _normal(document.page_content)
    header = _normal(str(document.metadata.get(CONTEXT_HEADER) or document.metadata.get("source") or ""))
    around = text[max(0, match.start - WINDOW_CHARS) : match.end + WINDOW_CHARS]
    return (header + " \n " + around).replace("_", " ")


_SENTENCE_END = re.compile(r"[.!?;](?=\s)|[。！？；\n]")


def _sentence(document: Document, match: QuoteMatch) -> str:
    """The sentence (or line) of the chunk that holds the matched quote: from the end of the one before to its own end."""
    text = normalise_for_match(document.page_content)  # as `_normal`, cased: a month is a capitalised name
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    start = max((e for e in ends if e <= match.start), default=0)
    end = min((e for e in ends if e >= match.end), default=len(text))
    return text[start:end]


def verify_evidence(
    question: str,
    evidence: Evidence,
    documents: Sequence[Document],
    subject: Collection[str] = (),
    *,
    min_coverage: float = MIN_QUOTE_COVERAGE,
    names_near_quote: bool = False,
    check_answer: bool = False,
    framing: bool = False,
    focus_share: float = MIN_FOCUS_SHARE,
    min_terms: float = MIN_TERM_COVERAGE,
) -> tuple[str, QuoteMatch | None, list[Specific], list[Specific], float | None]:
    """The code half of the check: (reason, where the quote is, the specifics, those missing, term coverage).

    `reason` is "answerable" when the quote is near-verbatim in a chunk (`min_coverage`) and every specific occurs
    around it (figures, dates, quoted terms; names too with `names_near_quote`) or in the retrieved chunks (names).
    Names in `subject` (`common_names` of the knowledge base) are not asked for. The specifics and the share of
    the question's content words around the quote are measured for any located quote, even one below
    `min_coverage` (benchmarks vary the cut-off). Introduced in notebook 04.

    `framing` (off by default) lets the quote's framing come from the question (`locate_quote`): a judge that wrote
    "HZ-Bench 上的 nDCG@10 是 0.80" from the question's words and one figure of the chunk then passes. Off, every
    character of the quote must come from the chunk; replayed on the stored rows of the seven result sets of
    benchmarks/bench_answerability.py (486 questions), that answered the same 181 of 245 answerable questions and
    refused 132 of 241 near misses instead of 128, never fewer on any set. Either way a quote must add
    `MIN_EVIDENCE_SHARE` of its characters from the chunk beyond the question's words, and at least `MIN_QUOTE_CHARS`
    of them or a figure the question does not hold ("marker is atlas-7420" for "What is the marker of atlas?"), else
    it "repeats the question".

    `check_answer` also checks the judge's short answer (`answer_problem`): it must say something the question
    does not, and the chunks must state it (off by default: measured in benchmarks/bench_answerability.py first).

    `focus_share`: of the words naming what is asked (`focus_terms` of the judge's `asks_for`; then `asked_terms`, read
    from the question by code), the share that must occur around the quote, else "asked-for missing" (the missing words come back as specifics of kind "focus");
    0 switches it off. `min_terms`: the share of the question's content words that must occur around the quote (the
    term coverage returned), else "too few of the question's words" (0, the default, switches it off). When the
    judge's `asks_for` names no word of the question, `MIN_QUESTION_SHARE` of the question's own words must occur
    around the quote instead."""
    specifics = [s for s in question_specifics(question) if not (s.kind == "name" and s.forms[0] in subject)]
    if check_answer:
        problem = answer_problem(question, evidence.answer, documents)
        if problem:
            return problem, None, specifics, [], None
    options = (documents, subject, specifics, min_coverage, names_near_quote, framing, focus_share, min_terms)
    checked = _check_quote(question, evidence.quote, evidence.asks_for, *options)
    answer = evidence.answer.strip()
    if answer != evidence.quote.strip() and (
        checked[0] in _QUOTE_FAILURES or (checked[0] != "answerable" and _words(answer) >= MIN_ANSWER_WORDS)
    ):
        # The judge copied the question (or a heading) as its quote and the answering passage as its answer, or
        # quoted the wrong sentence and wrote the right one as its answer: the answer is checked as the quote would
        # be, and stands in for it only if it passes every check. After a quote that failed a later check (specifics,
        # what is asked), only an answer that is a statement of its own (`MIN_ANSWER_WORDS`): a bare value
        # ("workaround", "768 dimensions") occurs in passages that do not answer.
        instead = _check_quote(question, evidence.answer, evidence.asks_for, *options)
        if instead[0] == "answerable":
            return instead[0], replace(instead[1], from_answer=True), *instead[2:]
    return checked


_QUOTE_FAILURES = ("no quote", "quote not in the documents", "quote repeats the question")
_WORD = re.compile(r"[a-z0-9]+(?:[.,'][a-z0-9]+)*")


def _words(text: str) -> float:
    """How many words `text` holds, a Chinese character counting as half of one (`MIN_ANSWER_WORDS`)."""
    normal = _normal(text)
    return len(_WORD.findall(normal)) + len(_CJK_CHAR.findall(normal)) / 2


def _check_quote(
    question: str,
    quote: str,
    asks_for: str,
    documents: Sequence[Document],
    subject: Collection[str],
    specifics: list[Specific],
    min_coverage: float,
    names_near_quote: bool,
    framing: bool,
    focus_share: float,
    min_terms: float,
) -> tuple[str, QuoteMatch | None, list[Specific], list[Specific], float | None]:
    """`verify_evidence` for one quote."""
    quoted = len(_needle(quote))
    if quoted < MIN_QUOTE_CHARS:
        return "no quote", None, specifics, [], None
    match = locate_quote(quote, documents, question, framing)
    if match is None:
        return "quote not in the documents", None, specifics, [], None
    window = _window(documents[match.document], match)
    missing = _missing(specifics, window, documents, names_near_quote)
    terms = content_tokens(question)
    coverage = sum(term in window for term in terms) / len(terms) if terms else None
    if match.coverage < min_coverage:
        return "quote not in the documents", match, specifics, missing, coverage
    added = match.evidence * quoted
    # "port 7420" for "which port?", "Atlas 从 4.0 版开始使用 jieba" for "从哪个版本开始使用 jieba": a figure the question
    # lacks, stated by the chunk, is what the quote adds, however much of the question it repeats around it
    new = set(figures(quote)) - set(figures(question))
    new_figure = any(f in figures(window) and added >= len(f) for f in new)  # the chunk adds at least the figure
    if not new_figure and (match.evidence < MIN_EVIDENCE_SHARE or added < MIN_QUOTE_CHARS):
        return "quote repeats the question", match, specifics, missing, coverage
    if any(s.kind in _PERIOD_KINDS for s in specifics):  # a month or quarter asked: does its sentence name another?
        missing += [s for s in other_period(specifics, _sentence(documents[match.document], match)) if s not in missing]
    if missing:
        return "specifics missing", match, specifics, missing, coverage
    focus, share = focus_terms(question, asks_for, subject), focus_share
    if not focus:  # the judge named nothing of the question ("what it asks for"): the question's own words, fewer
        focus, share = question_focus(question, subject), min(focus_share, MIN_QUESTION_SHARE)
    absent = focus_missing(focus, window, share) if focus_share else []
    asked = asked_terms(question, subject) if focus_share and not absent else []  # read only when it can decide
    if not absent and focus_share:  # and the noun of "which X" / 什么X / X是谁, read by code, whatever the judge named
        absent = focus_missing(asked, window, focus_share)
    if not absent and focus_share:  # enough of them occur, but one is replaced by a sibling: another officer, not it
        absent = contrasted_focus(question, list(dict.fromkeys([*focus, *asked])), window)
    if absent:
        return "asked-for missing", match, specifics, [Specific(t, (t,), "focus") for t in absent], coverage
    if min_terms and coverage is not None and coverage < min_terms:
        return "too few of the question's words", match, specifics, missing, coverage
    return "answerable", match, specifics, missing, coverage


def focus_terms(question: str, asks_for: str, subject: Collection[str] = ()) -> list[str]:
    """The words that name what `question` asks for: the content words (`content_tokens`) of the judge's `asks_for`
    that the question holds — a word the judge made up is not the question's — less the corpus's subject names.
    Chinese is cut into words (jieba), not character pairs: a pair across two words ("索和" of "检索和语义") is no
    word a passage that answers must repeat; a word counts when the question holds it. Introduced in notebook 04."""
    asked = set(content_tokens(_QUESTION_ZH.sub(" ", question)))
    asked_text = _unspaced(_normal(question))
    wanted = _asked_words(asks_for, subject)
    return [t for t in wanted if (t in asked_text if _CJK_CHAR.search(t) else t in asked)]


def question_focus(question: str, subject: Collection[str] = ()) -> list[str]:
    """The question's own content words (`_focus_words`: Chinese as words), less the subject's names and the words
    that ask: what is looked for around the quote when the judge's `asks_for` names no word of the question."""
    return _asked_words(question, subject)


def _asked_words(text: str, subject: Collection[str]) -> list[str]:
    """`text`'s content words (`_focus_words`), once each, less the subject's names and the words that ask."""
    names = {token for name in subject for token in content_tokens(name)}
    words = _focus_words(_QUESTION_ZH.sub(" ", text))
    return list(dict.fromkeys(t for t in words if t not in names and t not in _QUESTION_WORDS))


def _focus_words(text: str) -> list[str]:
    """Content words of `text`: English as `content_tokens` reads them (stemmed), Chinese words as jieba cuts them,
    less the one-character function words (的, 和, 把: they name nothing)."""
    from lessons.retrieval.retrievers import tokenize_jieba

    english = [t for t in content_tokens(text) if not _CJK_CHAR.search(t)]
    if not _CJK_CHAR.search(text):  # jieba loads its dictionary (about a second) on first use: only for Chinese
        return english
    chinese = [w for w in tokenize_jieba(_normal(text)) if _CJK_CHAR.search(w) and w not in _ZH_FUNCTION_WORDS]
    return english + [w for w in chinese if not _QUESTION_ZH.fullmatch(w)]


def asked_terms(question: str, subject: Collection[str] = ()) -> list[str]:
    """What a question that asks one thing asks for, read from its wording by code: the noun after "which" / "what"
    ("Which distance metric does ..." -> distance, metric; "What is the default recursion limit of ..." -> default,
    recursion; "Who is the head of ..." -> head), after 什么 / 哪个 / 哪种 / 哪些 ... (哪个厂区 -> 厂区), or before 是什么
    (网址是什么 -> 网址), before 是谁 (法务负责人是谁 -> 法务, 负责人) or 是多少 / 有多少 (工单量有多少 -> 工单量); and
    the role a "who" question asks about by its verb ("Who chairs the council?" -> chair; 由谁负责管理 -> 负责, 管理;
    `ROLE_VERBS`, `ROLE_VERBS_ZH`): at most
    `ASKED_WORDS` words, content words as `content_tokens` reads them (Chinese as jieba cuts it), less the subject's
    names. None for a question that asks two things (two question words or two question
    marks: the quote may answer either), for "what is Atlas", "what does ... do", "what happens", "what else", and for
    when / where / why / how questions, "which day", "what year", 哪天, 哪里 (what they ask is a time, a place, an
    amount: no noun to look for; "how many" and "how much" have their own steps). At least `MIN_FOCUS_SHARE` of them must occur around the quote (a quote on
    the topic that names no distance metric does not say which one). Introduced in notebook 04."""
    chinese = bool(_CJK_CHAR.search(question))
    asked = _WH_ZH.findall(question) if chinese else _WH_EN.findall(question)
    if len(asked) != 1 or len([part for part in re.split(r"[?？]", question) if part.strip()]) > 1:
        return []
    if chinese:
        words = _asked_zh(question)
    else:
        english = _asked_en(question)
        words = [] if any(word in _GENERIC_ASKED for word in english) else content_tokens(" ".join(english))
    names = {token for name in subject for token in content_tokens(name)}
    return list(dict.fromkeys(w for w in words if w not in names and w not in _QUESTION_WORDS))


ASKED_WORDS = 2  # words of the asked noun phrase read (asked_terms): "insurance company", 融合 算法
_WH_EN = re.compile(
    r"\b(?:what|which|who|whom|whose|when|where|why|how)\b|\b(?:do|does|did|is|are|can|will)\s+(?:i|we|you)\b",
    re.IGNORECASE,
)
_WH_ZH = re.compile("什么|哪|多少|几|怎么|怎样|如何|谁|吗|是否|为什么")
_ASKED_AUX = frozenset(["is", "are", "was", "were"])
_ASKED_DETERMINERS = frozenset(
    ["the", "a", "an", "my", "our", "your", "its", "their", "this", "that", "these", "those"]
)
_ASKED_KIND = frozenset(["kind", "type", "sort", "kinds", "types", "sorts"])
_ASKED_END = _PHRASE_END | {"does", "do", "did", "i", "we", "you", "they", "it", "he", "she"}
# "What happens", "what else": nothing named. "Which day", "what year": a time, as "when" asks (no noun to look for).
_GENERIC_ASKED = frozenset(
    ["happen", "happens", "happened", "else", "thing", "things", "way", "ways", "person", "one", "year", "years",
     "date", "dates", "day", "days", "month", "months", "time", "times"]
)  # fmt: skip
_ASKED_ZH = ("哪一个", "哪个", "哪种", "哪些", "哪家", "哪位", "哪条", "哪项", "哪类", "哪款", "哪台", "什么")
_NOT_ASKED_ZH = ("哪天", "哪年", "哪月", "哪里", "哪儿", "什么时候")  # a time or a place: no noun to look for


# A "who" question that asks by its verb asks for the holder of that role: "Who chairs the Jupyter Frontends
# Council?" is not answered by a list of the project's maintainers (blind set 10, nm10-packages-en-01). Verbs whose
# role shares their stem (chair, leads, manages ...), as `content_tokens` stems them; "led", "ran", "oversaw" do not.
ROLE_VERBS = frozenset(
    ["chair", "chairs", "chaired", "lead", "leads", "head", "heads", "headed", "manage", "manages", "managed",
     "maintain", "maintains", "maintained", "run", "runs", "own", "owns", "owned", "approve", "approves", "approved",
     "sign", "signs", "signed", "supervise", "supervises", "supervised", "moderate", "moderates", "moderated",
     "coordinate", "coordinates", "coordinated", "present", "presents", "presented"]
)  # fmt: skip
ROLE_VERBS_ZH = ("负责", "管理", "主持", "领导", "审批", "批准", "签署", "签字", "维护", "主管", "牵头", "分管", "主导")


def _asked_en(question: str) -> list[str]:
    """The words of "which X" / "what (is the) X" / "who is the X" / "whose X", up to the verb, or the verb of
    "who chairs ..." (`ROLE_VERBS`) (`asked_terms`)."""
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*(?:[-.+_'][A-Za-z0-9]+)*", question)]
    for i, word in enumerate(words):
        follows = words[i + 1] if i + 1 < len(words) else ""
        if word == "who" and follows in ROLE_VERBS:
            return [follows]
        if word not in ("which", "what", "whose") and not (word == "who" and follows in _ASKED_AUX):
            continue
        j = i + 1
        if follows in _ASKED_AUX:
            j += 1
            if word != "who" and (j >= len(words) or words[j] not in _ASKED_DETERMINERS):
                return []  # "what is Atlas": the whole thing is asked, no noun names it
        while j < len(words) and words[j] in _ASKED_DETERMINERS:
            j += 1
        if j + 1 < len(words) and words[j] in _ASKED_KIND and words[j + 1] == "of":
            j += 2
        found = []
        while j < len(words) and words[j] not in _ASKED_END and len(found) < ASKED_WORDS:
            found.append(words[j])
            j += 1
        return found
    return []


def _asked_zh(question: str) -> list[str]:
    """The words after 什么 / 哪个 / 哪种 ..., or before 是什么 at the question's end (`asked_terms`)."""
    from lessons.retrieval.retrievers import tokenize_jieba

    if any(word in question for word in _NOT_ASKED_ZH):  # looked for in the text: jieba cuts 哪天开 as 哪 | 天开
        return []
    tokens = [token for token in tokenize_jieba(_normal(question)) if token.strip()]

    def content(token: str) -> bool:
        return bool(_CJK_CHAR.search(token)) and token not in _ZH_FUNCTION_WORDS and not _QUESTION_ZH.fullmatch(token)

    def ends(i: int) -> bool:  # tokens[i] ends the question (吗 / 呢 or punctuation may follow)
        return i + 1 >= len(tokens) or not _CJK_CHAR.search(tokens[i + 1]) or tokens[i + 1] in ("吗", "呢")

    def noun_before(words: list[str]) -> list[str]:  # the content words at the end of `words`, in order
        return list(itertools.takewhile(content, reversed(words)))[:ASKED_WORDS][::-1]

    for i, token in enumerate(tokens):
        if not (token in _ASKED_ZH or (token.startswith("哪") and len(token) <= 3)):
            continue
        after = list(itertools.takewhile(content, tokens[i + 1 :]))[:ASKED_WORDS]
        if after:
            return after
        if token == "什么" and ends(i) and i >= 1 and tokens[i - 1] == "是":
            return noun_before(tokens[: i - 1])
        return []
    if "多少" in tokens:  # 首次联系解决率是多少 -> 解决, 率: the amount of THAT (有多少, 为多少 alike)
        i = tokens.index("多少")
        if ends(i) and i >= 1 and tokens[i - 1] in ("是", "有", "为"):  # 延迟大概是多少: 大概 names nothing
            return noun_before([t for t in tokens[: i - 1] if t not in _HEDGES_ZH])
    if "谁" in tokens:
        i = tokens.index("谁")
        if ends(i) and i >= 1 and tokens[i - 1] == "是":  # 市场部的负责人是谁 -> 负责人 (的 ends the noun)
            return noun_before(tokens[: i - 1])
        after = "".join(itertools.takewhile(content, tokens[i + 1 :]))  # 由谁负责管理 -> 负责, 管理
        return [verb for verb in ROLE_VERBS_ZH if verb in after][:ASKED_WORDS]
    return []


_HEDGES_ZH = frozenset(
    ["大概", "大约", "约", "一共", "总共", "共", "平均", "最多", "最少", "至少", "分别", "通常", "一般"]
)
_ZH_FUNCTION_WORDS = frozenset(
    "的了和与或在是把被对从给地得着过也都就而及其之这那有为以于到会能要可让向将个吗呢啊吧么每该"
)


# How a question asks, not what it asks for: "how much", "which", 多少, 什么, 哪些 name nothing the evidence must say.
_QUESTION_WORDS = frozenset(["how", "much", "many", "what", "which", "who", "whom", "whose", "when", "where", "why"])
_QUESTION_ZH = re.compile("为什么|多少|什么|哪些|哪个|哪里|哪儿|哪|几|怎么|怎样|如何|是否|谁|吗|呢")


# Leading a team, a lab or a meeting is said in more than one way: "Who leads the Hangzhou Search Lab?" is answered by
# "The Hangzhou Search Lab, led by Lin Xiaowen" (blind set 11, ans11-course-en-02, refused by the first version of the
# role-verb rule, which looked for "lead" only). Those words, looked for as focus or asked terms (the role verbs of
# `ROLE_VERBS` and the nouns "head", "chair"), are present when any of them is.
_LEADING = ("lead", "led", "head", "chair", "manag", "direct", "in charge")
_LEADS = re.compile(r"(?<![a-z])(?:" + "|".join((*_LEADING, "run", "ran")) + ")")

# A word that names the kind of answer is stated by an answer of that shape: "which version" by "v0.19.0".
_ANSWER_SHAPES = {
    "version": re.compile(_VERSION_NUMBER),
    "版本": re.compile(rf"{_VERSION_NUMBER}|\d+(?:\.\d+)*\s*版"),
    **{verb: _LEADS for verb in ("lead", "head", "chair", "run", "manag")},
}


def focus_missing(terms: Sequence[str], window: str, min_share: float = MIN_FOCUS_SHARE) -> list[str]:
    """The focus terms absent from the quote's `window`, when fewer than `min_share` of them occur there (else none):
    "the vesting schedule of stock options" answered by "You may work from home up to three days per week".
    A Chinese term is not asked of English evidence (a Chinese question about an English README); "version" / "版本"
    is present when the window states a version number."""
    english = not _CJK_CHAR.search(window)
    if english:  # a Chinese role word is looked for in English evidence in its English forms (ROLES_EN)
        terms = [t for t in terms if not _CJK_CHAR.search(t) or t in ROLES_EN]
    unspaced = _unspaced(window)
    absent = [
        t
        for t in terms
        if (t not in (unspaced if _CJK_CHAR.search(t) else window))
        and not (t in _ANSWER_SHAPES and _ANSWER_SHAPES[t].search(window))
        and not (english and t in ROLES_EN and re.search(ROLES_EN[t], window))
    ]
    return absent if terms and len(terms) - len(absent) < min_share * len(terms) else []


# A Chinese question about an English README asks for a role in Chinese: 负责人, 首席执行官, 组长 (blind set 11,
# nm11-packages-zh-01 and -02, passed because no Chinese word can be looked for in English). The English forms that
# name the same role, as regular expressions over the window (lower case). Introduced in notebook 04.
_LEADING_EN = r"(?<![a-z])(?:" + "|".join((*_LEADING, "responsib", "maintain", "owner")) + ")"  # a 负责人
ROLES_EN = {
    "负责人": _LEADING_EN, "负责": _LEADING_EN, "组长": r"(?<![a-z])(?:lead|led|head)",
    "首席": r"(?<![a-z])(?:chief|ceo|cto|cfo|coo)(?![a-z])", "执行官": r"(?<![a-z])(?:executive|ceo)(?![a-z])",
    "总经理": r"general manager|managing director|chief executive|(?<![a-z])ceo(?![a-z])",
    "经理": r"(?<![a-z])manager", "总监": r"(?<![a-z])(?:director|head)", "主任": r"(?<![a-z])(?:director|head|chair)",
    "主席": r"(?<![a-z])chair", "维护": r"(?<![a-z])maintain", "主持": r"(?<![a-z])(?:chair|host|run|ran|lead|led)",
    "管理": r"(?<![a-z])(?:manag|maintain|run|moderat|admin)",
}  # fmt: skip

_SLOT_WORD = r"[a-z0-9][a-z0-9-]*"
_QUESTION_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def contrasted_focus(question: str, terms: Sequence[str], window: str) -> list[str]:
    """The focus terms absent from the quote's `window` whose place the window fills with another word between the
    same two neighbours: "Who is the chief financial officer?" against "its chief executive, and Chen Siyuan, its chief
    technology officer" — two of the three words occur (enough for `focus_missing`), but the passage names a sibling of
    what is asked, not it. English words only; both neighbours must be content words of the question (not "of", "the"),
    and so must the word in the slot ("__pydantic_private__ is set" holds no sibling of "still").
    Introduced in notebook 04."""
    words = _QUESTION_WORD.findall(_normal(question))
    unspaced = _unspaced(window)
    contrasted = []
    for term in terms:
        chinese = bool(_CJK_CHAR.search(term))
        if term in (unspaced if chinese else window):
            continue
        if chinese:
            if _CJK_CHAR.search(window) and _contrasted_zh(question, term, window):
                contrasted.append(term)
            continue
        for i in range(1, len(words) - 1):
            before, word, after = words[i - 1], words[i], words[i + 1]
            if not word.startswith(term) or not content_tokens(before) or not content_tokens(after):
                continue
            head = re.escape(after.removesuffix("s"))  # "officer" or "officers"
            sibling = re.compile(
                rf"(?<![a-z0-9]){re.escape(before)}[a-z]*\s+(?!{re.escape(term)})({_SLOT_WORD})\s+{head}s?(?![a-z0-9])"
            )
            # the word in the slot must name something ("technology"), not be a function word ("private is set")
            if any(content_tokens(match.group(1)) for match in sibling.finditer(window)):
                contrasted.append(term)
                break
    return contrasted


ROLE_NOUNS_ZH = ("人", "长", "官", "主任", "经理", "总监", "主席", "总裁", "董事", "主管", "专员", "代表")


def _contrasted_zh(question: str, term: str, window: str) -> bool:
    """Whether the Chinese `window` fills the place of `term` with another word before the same head noun: 法务负责人
    asked (法务 absent), 各部门负责人 stated (blind set 10, nm10-course-zh-09). The head is the question's next content
    word after `term` (的 skipped), a role of a person (`ROLE_NOUNS_ZH`: 负责人, 总监, 主任 ...); the word before it in the
    window must be a content word (jieba), not a function word (的, 和) or punctuation."""
    from lessons.retrieval.retrievers import tokenize_jieba

    asked = [w for w in tokenize_jieba(_normal(question)) if w.strip() and w != "的"]
    if term not in asked or asked.index(term) + 1 >= len(asked):
        return False
    head = asked[asked.index(term) + 1]
    if len(head) < 2 or not head.endswith(ROLE_NOUNS_ZH):  # a person's role: 负责人, 总监, 主任, 经理 ...
        return False
    stated = [w for w in tokenize_jieba(window) if w.strip()]
    return any(
        word == head and k > 0 and _CJK_CHAR.search(stated[k - 1]) and stated[k - 1] not in _ZH_FUNCTION_WORDS
        and stated[k - 1] != term
        for k, word in enumerate(stated)
    )  # fmt: skip


def answer_problem(question: str, answer: str, documents: Sequence[Document]) -> str | None:
    """Why the judge's short answer is no answer, or None: "no answer" (empty), "answer repeats the question" (no
    word or figure the question lacks: "ROCm" for "Which AMD cards does the ROCm wheel support?"), "answer not in
    the documents" (`claim_is_grounded` fails: a figure or words the chunks do not state). Introduced in notebook 04."""
    if not answer.strip():
        return "no answer"
    asked, asked_figures = set(content_tokens(question)), set(figures(question))
    novel = [t for t in content_tokens(answer) if t not in asked] + [
        f for f in figures(answer) if f not in asked_figures
    ]
    if not novel:
        return "answer repeats the question"
    if not claim_is_grounded(answer, documents, question):
        return "answer not in the documents"
    return None


def _missing(
    specifics: Sequence[Specific],
    window: str,
    documents: Sequence[Document],
    names_near_quote: bool,
) -> list[Specific]:
    """The specifics absent from the evidence: figures, dates and quoted terms from `window`, names (unless
    `names_near_quote`) from every retrieved chunk."""
    everywhere = " ".join(_haystack(d.page_content) + " " + _haystack(str(d.metadata.get(CONTEXT_HEADER) or ""))
                          for d in documents)  # fmt: skip
    # A Chinese term cannot be looked for in English evidence (a Chinese question about an English README).
    checkable = [
        s for s in specifics if s.pattern or _CJK_CHAR.search(window) or not all(_CJK_CHAR.search(f) for f in s.forms)
    ]

    def absent(specific: Specific) -> bool:
        if specific.kind != "name" or names_near_quote:
            return not occurs(specific, window)
        return not occurs(specific, everywhere)

    return [s for s in checkable if absent(s)]


def common_names(chunks: Sequence[Document], min_share: float = 0.3) -> frozenset[str]:
    """Capitalised names (lower case) that occur in at least `min_share` of the knowledge base's source files: the
    corpus's subject ("Tidewell", "Atlas"), which says nothing about which passage answers and which a chunk need
    not repeat. Fewer than three files: none (a subject cannot be told from a specific). Introduced in notebook 04.

    A name is a word the corpus writes capitalised more often than in lower case, and a file counts when it writes
    it capitalised: a word capitalised only where a sentence or bullet starts ("And", "Check", "Console" in prose
    that says "console") is no name, so it stays a specific a question can ask about."""
    capitalised: dict[str, dict[str, int]] = {}  # name -> source -> capitalised occurrences
    lower: dict[str, int] = {}
    sources = set()
    for chunk in chunks:
        source = str(chunk.metadata.get("source", ""))
        sources.add(source)
        for word in _CAPITALISED.findall(chunk.page_content):
            per_file = capitalised.setdefault(word.casefold(), {})
            per_file[source] = per_file.get(source, 0) + 1
        for word in _LOWER_WORD.findall(chunk.page_content):
            lower[word] = lower.get(word, 0) + 1
    if len(sources) < 3:
        return frozenset()
    needed = min_share * len(sources)
    return frozenset(
        name
        for name, per_file in capitalised.items()
        if len(per_file) >= needed and sum(per_file.values()) > lower.get(name, 0)
    )


SPAN_WORDS = 3  # the longest span of the question `asks_for` may be, in words (`question_spans`)
MAX_SPANS = 40  # the most spans offered: the enum goes into every judge prompt (about 60 tokens at 40)
_SPAN_EN = re.compile(r"[A-Za-z0-9][\w.+'-]*[\w+]|[A-Za-z0-9]")
_SPAN_STOP = _PHRASE_END | _QUESTION_WORDS | _NOT_NAMES | {"i", "we", "my", "our", "me", "you", "your"}


def question_spans(question: str, longest: int = SPAN_WORDS, limit: int = MAX_SPANS) -> list[str]:
    """The question's runs of 1 to `longest` words, as written in it, that neither start nor end with a function word
    or a question word ("the", "of", "which", 的, 多少): single words first, then pairs, then triples, at most `limit`,
    once each; the question itself when it has none. Chinese is cut into words (jieba). A run never crosses
    punctuation. The values `asks_for` may take with `asks_for_from_question` (`evidence_schema`)."""
    from lessons.retrieval.retrievers import tokenize_jieba

    lowered = question.lower()
    source = question if len(lowered) == len(question) else lowered  # offsets of the lower-cased text hold
    if _CJK_CHAR.search(question):
        tokens, spans, cursor = [], [], 0
        for token in tokenize_jieba(question):
            start = lowered.find(token, cursor)
            if start < 0 or not token.strip() or re.fullmatch(r"[\W_]+", token):
                continue
            cursor = start + len(token)
            tokens.append(token)
            spans.append((start, cursor))
    else:
        matches = list(_SPAN_EN.finditer(question))
        tokens, spans = [m.group().lower() for m in matches], [m.span() for m in matches]

    def stop(token: str) -> bool:
        return token in _SPAN_STOP or token in _ZH_FUNCTION_WORDS or _QUESTION_ZH.fullmatch(token) is not None

    found = []
    for n in range(1, longest + 1):
        for i in range(len(tokens) - n + 1):
            if stop(tokens[i]) or stop(tokens[i + n - 1]):
                continue
            gaps = [source[spans[j][1] : spans[j + 1][0]] for j in range(i, i + n - 1)]
            if all(not gap.strip() for gap in gaps):  # words in a row, no punctuation between them
                found.append(source[spans[i][0] : spans[i + n - 1][1]])
    return list(dict.fromkeys(found))[:limit] or [question.strip()]


@functools.lru_cache(maxsize=256)
def evidence_schema(question: str) -> type[Evidence]:
    """`Evidence` with `asks_for` one of `question_spans(question)`: an enum in the JSON schema, so the grammar lets the
    judge write only words of the question there (`AnswerabilityCheck(asks_for_from_question=True)`)."""
    spans = tuple(question_spans(question))
    return create_model(
        "Evidence",
        __base__=Evidence,
        asks_for=(Literal[spans], Field(description="the few words of the question that name what it asks for")),
    )


def _best(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


class AnswerabilityCheck:
    """Ask the judge for its evidence (one structured call) and check it in code, then against the relevance
    thresholds of the question's language (introduced in notebook 04).

    `p_yes`: the chat model's P(yes) per chunk when the caller has read it (the grading loop's gate does);
    the cross-encoder's scores are read from the chunks' metadata. A signal with no value is not applied.
    `subject`: the knowledge base's `common_names`, which no chunk needs to repeat.
    `check_answer`: also check the judge's short answer (`answer_problem`; `verify_evidence`).
    `asks_for_from_question`: the judge's `asks_for` must be one of the question's spans (`evidence_schema`); off by
    default (the course's measured setting).
    """

    def __init__(
        self,
        model: BaseChatModel,
        thresholds: Mapping[str, AnswerabilityThresholds] | None = None,
        prompts: Mapping[str, str] = EVIDENCE_PROMPTS,
        max_chars: int = CONTEXT_CHARS,
        subject: Collection[str] = (),
        check_answer: bool = False,
        asks_for_from_question: bool = False,
    ):
        self.model, self.prompts, self.max_chars = model, dict(prompts), max_chars
        self.check_answer, self.asks_for_from_question = check_answer, asks_for_from_question
        self.subject = frozenset(name.casefold() for name in subject)
        self.thresholds = dict(thresholds or NO_THRESHOLDS)
        missing = {"en", "zh"} - set(self.thresholds)
        if missing:
            raise ValueError(f"no answerability thresholds for {sorted(missing)}: give one per language (en, zh)")

    def evidence(self, question: str, documents: Sequence[Document]) -> Evidence:
        """The judge's quote and short answer from `documents` (one chat-model call)."""
        prompt = self.prompts[detect_language(question)].format(
            question=question, documents=format_context(documents, max_chars=self.max_chars, pages=False)
        )
        schema = evidence_schema(question) if self.asks_for_from_question else Evidence
        return invoke_structured(self.model, schema, prompt)

    def judge(
        self,
        question: str,
        evidence: Evidence,
        documents: Sequence[Document],
        p_yes: Sequence[float | None] | None = None,
    ) -> AnswerabilityVerdict:
        """The verdict from evidence already asked for: the code check, then the thresholds (no model call)."""
        reason, match, specifics, missing, terms = verify_evidence(
            question, evidence, documents, self.subject, check_answer=self.check_answer
        )
        best_p, best_ce = _best(p_yes or []), _best(cross_encoder_scores(documents))
        gate = self.thresholds[detect_language(question)]
        verdict = reason
        if reason == "answerable" and best_p is not None and best_p < gate.p_yes:
            verdict = "P(yes) below threshold"
        elif reason == "answerable" and best_ce is not None and best_ce < gate.cross_encoder:
            verdict = "cross-encoder below threshold"
        return AnswerabilityVerdict(
            answerable=verdict == "answerable",
            reason=verdict,
            quote=(evidence.answer if match and match.from_answer else evidence.quote).strip(),
            answer=evidence.answer.strip(),
            asks_for=evidence.asks_for.strip(),
            document=match.document if match else None,
            coverage=match.coverage if match else 0.0,
            specifics=tuple(s.text for s in specifics),
            missing=tuple(s.text for s in missing),
            term_coverage=terms,
            p_yes=best_p,
            cross_encoder=best_ce,
            evidence_ok=reason == "answerable",
        )

    def __call__(
        self, question: str, documents: Sequence[Document], p_yes: Sequence[float | None] | None = None
    ) -> AnswerabilityVerdict:
        """Whether `documents` state what `question` asks for: one call for the evidence, then code."""
        if not documents:
            return AnswerabilityVerdict(False, "no quote")
        return self.judge(question, self.evidence(question, documents), documents, p_yes)
