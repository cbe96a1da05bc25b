"""Deterministic checks of a draft's claims against the context: figures, words, character pairs.

Introduced in notebook 05 (three-agent verification). A 1.5B verifier is a noisy witness: asked for
the statements of a draft that the context does not state, it also lists phrases it copied from the
context, sentences the draft never said, and the draft itself when the context states it in other
words. These functions are the second opinion the workflow applies to every listed claim, and one
check no model is needed for:

- `unsupported_figures(draft, documents)` — every number in the draft must occur in the context
  (thousands separators and number words up to twenty are normalised). A changed figure is the most
  common hallucination, and string matching catches it every time.
- `claim_in_draft(claim, draft)` — a listed claim must be something the *draft* says.
- `claim_is_grounded(claim, documents)` — a listed claim whose figures all occur in the context and
  whose content words are all there too (one may be missing: a paraphrase) is not unsupported.
- `unsupported_sentences(draft, documents)` — a sentence of the draft that shares almost nothing with
  the context (three quarters of its words or character pairs missing) was not taken from it: an
  added sentence crediting an invented person, say. Paraphrases of the context stay well below that
  (notebook 05 measures it on correct drafts, Chinese ones rephrasing the most).

Words are English words of three letters or more outside a short stop list, with a light suffix
stem; Chinese text is compared as character pairs (bigrams), as notebook 02's BM25 does. Each missing
English word costs 1 and each missing Chinese pair 0.5 against a budget of 1, so "listens" for
"exposes" passes while an invented name ("Marcus Lindqvist", "林志远") does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from lessons.text.cjk import CJK_IDEOGRAPHS
from lessons.text.normalise import normalise_for_match

MISSING_BUDGET = 1.0  # what a grounded claim may miss: one English word, or two Chinese character pairs
CJK_PAIR_COST = 0.5
IN_DRAFT_SHARE = 0.5  # a listed claim must share at least half its words/pairs with the draft
NOVEL_SHARE = 0.75  # a draft sentence with this share of its words/pairs missing from the context is flagged
NOVEL_MIN_TOKENS = 3  # ... if it has at least this many (a two-word fragment proves nothing)

_CJK = CJK_IDEOGRAPHS
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_WORD = re.compile(r"[^\W\d_]+")
_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*")  # "4.3" is not a sentence end
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "that",
        "this",
        "with",
        "from",
        "its",
        "has",
        "have",
        "had",
        "not",
        "but",
        "you",
        "your",
        "all",
        "any",
        "can",
        "may",
        "one",
        "two",
        "per",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "these",
        "those",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "will",
        "would",
        "could",
        "should",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "also",
        "only",
        "such",
        "each",
        "other",
        "more",
        "most",
        "some",
        "our",
        "out",
        "use",
        "used",
        "using",
        "been",
        "being",
        "does",
        "did",
    ]
)
_NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "thirteen": "13",
    "fourteen": "14",
    "fifteen": "15",
    "sixteen": "16",
    "seventeen": "17",
    "eighteen": "18",
    "nineteen": "19",
    "twenty": "20",
    "一": "1",
    "二": "2",
    "两": "2",
    "三": "3",
    "四": "4",
    "五": "5",
    "六": "6",
    "七": "7",
    "八": "8",
    "九": "9",
    "十": "10",
}
_SUFFIXES = ("ing", "ies", "es", "ed", "ly", "s")


def _normal(text: str) -> str:
    return normalise_for_match(text).lower()


def figures(text: str) -> list[str]:
    """The numbers in `text` in order, without thousands separators ("1,200" → "1200", "2.5" stays).

    Introduced in notebook 05 (three-agent verification).
    """
    found = []
    for match in _FIGURE.finditer(normalise_for_match(text)):
        value = match.group()
        # a comma followed by exactly three digits is a thousands separator; anything else is kept
        value = re.sub(r",(?=\d{3}(?:\D|$))", "", value)
        found.append(value)
    return found


def _context_figures(documents: Iterable[Document]) -> set[str]:
    known: set[str] = set()
    for document in documents:
        known.update(figures(document.page_content))
        lowered = document.page_content.lower()
        known.update(digit for word, digit in _NUMBER_WORDS.items() if word in lowered)
    return known


@dataclass(frozen=True)
class ClaimContext:
    """What the checks compare a draft with, built once per draft (introduced in notebook 05).

    `figures`: every figure of the chunks (and number words up to twenty as digits); `text`: the
    chunks and the question, normalised; `instructions`: sentences of the chunks that address the
    model ("ignore all previous instructions …"), left out of `figures` and `text`. Every check
    accepts this or the chunks themselves.
    """

    figures: frozenset[str]
    text: str
    instructions: tuple[str, ...] = ()  # sentences addressed to the model (`lessons.core.prompt_safety`): not evidence

    @classmethod
    def of(cls, documents: Sequence[Document], question: str = "") -> ClaimContext:
        from lessons.core.prompt_safety import find_instructions, without_instructions

        instructions = tuple(i for d in documents for i in find_instructions(d.page_content))
        if instructions:  # an instruction planted in a document is no evidence for a draft that obeys it
            documents = [Document(without_instructions(d.page_content), metadata=d.metadata) for d in documents]
        text = " ".join(_normal(d.page_content) for d in documents) + " " + _normal(question)
        return cls(frozenset(_context_figures(documents)), text, instructions)


Context = Sequence[Document] | ClaimContext


def as_claim_context(context: Context, question: str = "") -> ClaimContext:
    """`context` itself when it is a `ClaimContext`, else one built from the chunks and the question (notebook 05)."""
    return context if isinstance(context, ClaimContext) else ClaimContext.of(context, question)


def unsupported_figures(draft: str, documents: Context) -> list[str]:
    """Figures of the draft that no context chunk contains, each once, in the draft's order.

    Introduced in notebook 05 (three-agent verification). A figure the draft *computed* (a sum of
    two prices) is reported too: the context does not state it, so the draft should show its sources.
    """
    known = as_claim_context(documents).figures
    return list(dict.fromkeys(f for f in figures(draft) if f not in known))


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_tokens(text: str) -> list[str]:
    """English content words (stemmed) and Chinese character pairs of `text`, in order.

    Introduced in notebook 05 (three-agent verification). A single Chinese character between
    non-Chinese text is kept as a one-character token.
    """
    normal = _normal(text)
    tokens = [_stem(w) for w in _WORD.findall(_CJK_RUN.sub(" ", normal)) if len(w) >= 3 and w not in _STOP]
    for run in _CJK_RUN.findall(normal):
        tokens += [run[i : i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]
    return tokens


def _missing_cost(tokens: Sequence[str], text: str) -> float:
    return sum(CJK_PAIR_COST if _CJK_RUN.fullmatch(t) else 1.0 for t in tokens if t not in text)


def claim_in_draft(claim: str, draft: str) -> bool:
    """Whether a listed claim is something the draft says: half or more of its words/pairs occur in the draft.

    Introduced in notebook 05 (three-agent verification). A claim with no content words (a bare
    figure) counts when its figures are in the draft.
    """
    tokens = content_tokens(claim)
    if not tokens:
        claim_figures = figures(claim)
        return bool(claim_figures) and all(f in figures(draft) for f in claim_figures)
    text = _normal(draft)
    return sum(t in text for t in tokens) >= IN_DRAFT_SHARE * len(tokens)


def claim_is_grounded(claim: str, documents: Context, question: str = "") -> bool:
    """Whether the context states the claim: all its figures occur there, and its words/pairs do (within the budget).

    Introduced in notebook 05 (three-agent verification). Each missing English word costs 1, each
    missing Chinese character pair 0.5; a claim within `MISSING_BUDGET` is grounded. Words of the
    `question` count as present: a draft that restates the question ("the update that stopped the
    server hogging RAM was 4.2.1") makes no claim with them. Figures must be in the context itself.
    A claim with neither figures nor content words is not grounded (there is nothing to find). Pass a
    `ClaimContext` (built with the question) to check many claims against the same chunks.
    """
    tokens = content_tokens(claim)
    claim_figures = figures(claim)
    if not tokens and not claim_figures:
        return False
    context = as_claim_context(documents, question)
    if any(f not in context.figures for f in claim_figures):
        return False
    return _missing_cost(tokens, context.text) <= MISSING_BUDGET


def sentences(text: str) -> list[str]:
    """The sentences of `text` (split after . ! ? ; and their Chinese forms). Introduced in notebook 05 (three-agent verification)."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def unsupported_sentences(draft: str, documents: Context, question: str = "") -> list[str]:
    """Sentences of the draft that share almost nothing with the context: `NOVEL_SHARE` of their tokens missing.

    Introduced in notebook 05 (three-agent verification). It never catches a changed detail inside a
    sentence the context supports (that is what the figure check and the verifier's list are for);
    it catches a sentence the writer added from elsewhere. Words of the `question` count as present.
    """
    text = as_claim_context(documents, question).text
    flagged = []
    for sentence in sentences(draft):
        tokens = content_tokens(sentence)
        missing = sum(t not in text for t in tokens)
        if len(tokens) >= NOVEL_MIN_TOKENS and missing >= NOVEL_SHARE * len(tokens):
            flagged.append(sentence)
    return flagged
