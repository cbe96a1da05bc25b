"""The other doctran jobs, the LangChain 1.x way: clean PDF text, extract dates, extract properties.

Introduced in notebook 03 (QA transformation). Three `BaseDocumentTransformer`s:

- `TextCleaner` — undoes what PDF text extraction does to prose: words hyphenated across lines,
  hard line wraps inside paragraphs, ligatures, soft hyphens. Markdown structure (headings, lists,
  tables, code blocks) and Chinese text (no spaces between lines) are kept intact. No model.
- `DateExtractor` — finds dates written as "2025-03-14", "14 March 2025", "Nov. 24, 2025",
  "March 2025", "2026年9月9日" or "2026 年 9 月" with patterns, turns them into dates with
  python-dateutil, and stores them as metadata you can filter on. No model.
- `PropertyExtractor` — fills a Pydantic schema you define from each document through structured
  output and stores the fields as metadata.
"""

from __future__ import annotations

import logging
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from dateutil import parser as dateparser
from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel
from tqdm.auto import tqdm

from lessons.core.prompt_safety import DATA_RULE, as_data
from lessons.core.structured import StructuredOutputError, invoke_structured
from lessons.text.cjk import CJK_WIDE
from lessons.text.normalise import code_fence_lines

logger = logging.getLogger(__name__)

# --- text cleaning ------------------------------------------------------------------------------

LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
SOFT_HYPHEN = "\u00ad"
# A line at least this share of the text's typical line width ran to the right margin: it was wrapped.
FULL_LINE_SHARE = 0.75
# Below this typical width (characters) the lines are not prose wrapped at a margin: leave them alone.
MIN_WRAP_WIDTH = 40
# After a finished sentence, a line shorter than this share of the width with no closing punctuation is a heading.
HEADING_SHARE = 0.6

_HYPHEN_BREAK = re.compile(r"([A-Za-z]+)-[ \t]*\n[ \t]*([a-z][A-Za-z]*)")
# A line that starts a block of its own (never joined to the line above) ...
_BLOCK_START = re.compile(r"^\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|>|\||```|~~~)")
# ... and a line that never continues on the next one (a list item or a quote may).
_SINGLE_LINE_BLOCK = re.compile(r"^\s*(#{1,6}\s|\||```|~~~)")
_CJK_CHAR = re.compile(rf"[{CJK_WIDE}]")
_SPACES = re.compile(r"[ \t]{2,}")
_CLOSING_PUNCTUATION = re.compile(r"[.!?:;,。！？：；，)\]\"”’]$")


def _normalise_characters(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace(SOFT_HYPHEN, "").replace("\u00a0", " ")
    for ligature, letters in LIGATURES.items():
        text = text.replace(ligature, letters)
    return text


def dehyphenate(text: str) -> str:
    """Join words split across lines ("retriev-\\nal" → "retrieval").

    Introduced in notebook 03 (QA transformation). The hyphen stays ("self-\\nhosted" →
    "self-hosted") when the hyphenated spelling occurs elsewhere in the text.
    """
    flat = text.replace("\n", " ").lower()

    def join(match: re.Match) -> str:
        head, tail = match.group(1), match.group(2)
        hyphenated = f"{head}-{tail}".lower()
        return f"{head}-{tail}" if flat.count(hyphenated) > 0 else head + tail

    return _HYPHEN_BREAK.sub(join, text)


def typical_line_width(lines: Sequence[str]) -> int:
    """The 80th-percentile length of the non-empty lines: where the right margin was.

    Introduced in notebook 03 (QA transformation).
    """
    lengths = sorted(len(line.rstrip()) for line in lines if line.strip())
    if len(lengths) < 2:
        return 0
    return int(statistics.quantiles(lengths, n=5)[-1])


def _joiner(left: str, right: str) -> str:
    return "" if _CJK_CHAR.match(left[-1:]) or _CJK_CHAR.match(right[:1]) else " "


def unwrap_lines(text: str) -> str:
    """Join hard-wrapped lines of a paragraph; keep blank lines, short lines and Markdown structure.

    Introduced in notebook 03 (QA transformation). A line is joined to the next when it reached the
    margin (at least 75% of the typical width), it is no heading or table row, and the next line does
    not start a block (heading, list item, table row, quote, code fence) nor look like a PDF heading
    (short, unpunctuated, after a finished sentence); lines inside code fences are never touched.
    Chinese lines are joined without a space.
    """
    lines = text.split("\n")
    width = typical_line_width(lines)
    if width < MIN_WRAP_WIDTH:
        return text
    out: list[str] = []
    joinable = False
    for line, code in zip(lines, code_fence_lines(lines), strict=True):
        if code:  # a fence or a line inside one: kept as it is, and nothing joins onto it
            out.append(line)
            joinable = False
            continue
        sentence_ended = bool(out) and bool(_CLOSING_PUNCTUATION.search(out[-1].rstrip()))
        heading_next = sentence_ended and _looks_like_heading(line, width)
        if joinable and line.strip() and not _BLOCK_START.match(line) and not heading_next:
            previous = out[-1].rstrip()
            out[-1] = previous + _joiner(previous, line.lstrip()) + line.strip()
        else:
            out.append(line)
        current = line.rstrip()
        joinable = (
            bool(current.strip()) and not _SINGLE_LINE_BLOCK.match(line) and len(current) >= FULL_LINE_SHARE * width
        )
    return "\n".join(out)


def _looks_like_heading(line: str, width: int) -> bool:
    """A short line without closing punctuation after a finished sentence: a PDF heading, not a wrap."""
    stripped = line.strip()
    return bool(stripped) and len(stripped) < HEADING_SHARE * width and not _CLOSING_PUNCTUATION.search(stripped)


def clean_text(text: str) -> str:
    """PDF-extracted text made readable: characters normalised, hyphenation and hard wraps undone.

    Introduced in notebook 03 (QA transformation).
    """
    text = dehyphenate(_normalise_characters(text))
    text = unwrap_lines(text)
    lines = [
        _SPACES.sub(" ", line).rstrip() if not line.startswith("    ") else line.rstrip() for line in text.split("\n")
    ]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


class TextCleaner(BaseDocumentTransformer):
    """Applies `clean_text` to every document; metadata is kept.

    Introduced in notebook 03 (QA transformation).
    """

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[Document]:
        return [Document(page_content=clean_text(doc.page_content), metadata=dict(doc.metadata)) for doc in documents]


# --- dates --------------------------------------------------------------------------------------

Precision = Literal["day", "month"]

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_YEAR = r"(?:19|20)\d{2}"
# (pattern, precision, needs a default year, parser) — the longest match at a position wins.
_ENGLISH_PATTERNS: list[tuple[re.Pattern, Precision, bool]] = [
    (re.compile(rf"\b{_YEAR}-\d{{1,2}}-\d{{1,2}}\b"), "day", False),
    (re.compile(rf"\b{_YEAR}/\d{{1,2}}/\d{{1,2}}\b"), "day", False),
    (re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+{_YEAR}\b"), "day", False),
    (re.compile(rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+{_YEAR}\b"), "day", False),
    (re.compile(rf"\b{_MONTH}\s+{_YEAR}\b"), "month", False),
    (re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}(?![\w.])"), "day", True),
    (re.compile(rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!,?\s*\d)"), "day", True),
]
_ZH_DAY = re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_ZH_MONTH = re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月(?!\s*\d)")
_ZH_DAY_NO_YEAR = re.compile(r"(?<![\d年])(?<!年\s)(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")


@dataclass(frozen=True)
class FoundDate:
    """A date found in a text: the words as written, the date, and whether the day was given."""

    text: str
    value: date
    precision: Precision
    start: int

    @property
    def iso(self) -> str:
        """ "2026-09-09" for a day, "2026-09" for a month."""
        return self.value.isoformat() if self.precision == "day" else self.value.strftime("%Y-%m")


def _english_date(text: str, default_year: int | None) -> date | None:
    default = datetime(default_year or 1900, 1, 1)
    try:
        return dateparser.parse(text.replace(".", " "), default=default, dayfirst=False).date()
    except (ValueError, OverflowError):
        return None


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


@dataclass(frozen=True)
class _Candidate:
    match: re.Match
    value: date | None  # None: looks like a date but is none ("31 February 2026"); still claims its words
    precision: Precision


def _english_candidates(text: str, default_year: int | None) -> list[_Candidate]:
    found = []
    for pattern, precision, needs_year in _ENGLISH_PATTERNS:
        if needs_year and default_year is None:
            continue
        for match in pattern.finditer(text):
            found.append(
                _Candidate(match, _english_date(match.group(), default_year if needs_year else None), precision)
            )
    return found


def _chinese_candidates(text: str, default_year: int | None) -> list[_Candidate]:
    found = [_Candidate(m, _safe_date(int(m[1]), int(m[2]), int(m[3])), "day") for m in _ZH_DAY.finditer(text)]
    found += [_Candidate(m, _safe_date(int(m[1]), int(m[2]), 1), "month") for m in _ZH_MONTH.finditer(text)]
    if default_year is not None:
        found += [
            _Candidate(m, _safe_date(default_year, int(m[1]), int(m[2])), "day") for m in _ZH_DAY_NO_YEAR.finditer(text)
        ]
    return found


def _longest_first(candidates: list[_Candidate]) -> list[_Candidate]:
    kept: list[_Candidate] = []
    for candidate in sorted(candidates, key=lambda c: (c.match.start(), -len(c.match.group()))):
        if kept and candidate.match.start() < kept[-1].match.end():
            continue
        kept.append(candidate)
    return kept


def extract_dates(text: str, default_year: int | None = None) -> list[FoundDate]:
    """Every date in `text`, in order of appearance, English and Chinese styles.

    Introduced in notebook 03 (QA transformation). Where two patterns overlap, the longer match
    wins; an impossible date ("31 February 2026") is dropped. Dates without a year ("18 August",
    "9 月 4 日") are found only when `default_year` is given. A bare year ("2019") is not a date here.
    """
    candidates = _longest_first(_english_candidates(text, default_year) + _chinese_candidates(text, default_year))
    return [
        FoundDate(c.match.group(), c.value, c.precision, c.match.start()) for c in candidates if c.value is not None
    ]


def date_metadata(found: Sequence[FoundDate]) -> dict[str, Any]:
    """Chroma-safe metadata for the dates of one document (scalars only).

    Introduced in notebook 03 (QA transformation). `dates` lists them ("2026-09-09; 2025-10"),
    `earliest_date` / `latest_date` are whole numbers (20250314) so a filter like
    `{"latest_date": {"$gte": 20260101}}` works.
    """
    if not found:
        return {}
    ordered = sorted({d.value for d in found})
    return {
        "dates": "; ".join(dict.fromkeys(d.iso for d in found)),
        "earliest_date": _as_number(ordered[0]),
        "latest_date": _as_number(ordered[-1]),
    }


def _as_number(day: date) -> int:
    return day.year * 10_000 + day.month * 100 + day.day


class DateExtractor(BaseDocumentTransformer):
    """Adds `dates`, `earliest_date` and `latest_date` to each document's metadata (see `date_metadata`).

    Introduced in notebook 03 (QA transformation).
    """

    def __init__(self, default_year: int | None = None):
        self.default_year = default_year

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[Document]:
        return [
            Document(
                page_content=doc.page_content,
                metadata={**doc.metadata, **date_metadata(extract_dates(doc.page_content, self.default_year))},
            )
            for doc in documents
        ]


# --- properties ---------------------------------------------------------------------------------

PROPERTY_PROMPT = """Fill in the properties of the function from the document below.
Use only the document. When it does not give a property, leave it empty (null) instead of guessing.
<<DATA_RULE>>

{text}""".replace("<<DATA_RULE>>", DATA_RULE)


def flatten_for_metadata(values: dict[str, Any], prefix: str = "") -> dict[str, str | int | float | bool]:
    """Properties as Chroma-safe metadata: nested models flattened with "_", lists joined with "; ", None dropped.

    Introduced in notebook 03 (QA transformation).
    """
    flat: dict[str, str | int | float | bool] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if value is None or value == []:
            continue
        if isinstance(value, dict):
            flat.update(flatten_for_metadata(value, prefix=f"{name}_"))
        elif isinstance(value, (list, tuple, set)):
            flat[name] = "; ".join(str(item) for item in value)
        elif isinstance(value, (str, int, float, bool)):
            flat[name] = value
        else:
            flat[name] = str(value)
    return flat


class PropertyExtractor(BaseDocumentTransformer):
    """Fills `schema` from each document through structured output and adds the fields to its metadata.

    Introduced in notebook 03 (QA transformation). A document whose reply never fits the schema keeps
    its metadata plus `properties_error`; it is logged and counted in `failures`, never raised.
    """

    def __init__(
        self,
        model: BaseChatModel,
        schema: type[BaseModel],
        *,
        prefix: str = "",
        retries: int = 1,
        progress: bool = True,
    ):
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(
                f"schema must be a Pydantic model class, got {schema!r}: define `class MyProps(BaseModel): ...`"
            )
        self.model = model
        self.schema = schema
        self.prefix = prefix
        self.retries = retries
        self.progress = progress
        self.failures = 0

    def extract(self, document: Document) -> BaseModel:
        """The schema filled from one document; raises `StructuredOutputError` when no reply fits."""
        prompt = PROPERTY_PROMPT.format(text=as_data(document.page_content.strip()))
        return invoke_structured(self.model, self.schema, prompt, retries=self.retries)

    def _transform_one(self, document: Document) -> Document:
        metadata = dict(document.metadata)
        try:
            properties = self.extract(document)
        except StructuredOutputError as error:
            self.failures += 1
            logger.warning(
                "no %s for %s: %s", self.schema.__name__, document.metadata.get("chunk_id", "a document"), error
            )
            metadata["properties_error"] = f"no valid {self.schema.__name__}"
        else:
            metadata.update(flatten_for_metadata(properties.model_dump(mode="json"), prefix=self.prefix))
        return Document(page_content=document.page_content, metadata=metadata)

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[Document]:
        self.failures = 0
        return [
            self._transform_one(doc) for doc in tqdm(documents, desc=self.schema.__name__, disable=not self.progress)
        ]
