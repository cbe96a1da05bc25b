"""The course knowledge base and its gold question set.

Introduced in notebook 01 (chunking). `load_corpus()` converts every document in `data/corpus/` with
Docling (cached), `load_gold()` reads the hand-written questions in `data/eval/gold_*.jsonl`, typed
and validated. `find_evidence()` locates a gold quote in any text, whatever the chunking.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from lessons.ingest import IngestLimits, IngestResult, ingest, normalise_for_match
from lessons.settings import PROJECT_ROOT

CORPUS_DIR = PROJECT_ROOT / "data" / "corpus"
GOLD_DIR = PROJECT_ROOT / "data" / "eval"
DEFAULT_LIMITS = IngestLimits()

QuestionType = Literal["fact", "table", "multi_hop", "paraphrase", "contradiction", "out_of_kb"]


class SourceRef(BaseModel):
    file: str
    section: str | None = None
    page: int | None = None


class GoldQuestion(BaseModel):
    """One question of the gold set: the reference answer and the exact evidence quotes."""

    id: str
    question: str
    language: Literal["en", "zh"]
    type: QuestionType
    answer: str
    sources: list[SourceRef] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return self.type != "out_of_kb"

    @model_validator(mode="after")
    def _evidence_matches_type(self) -> GoldQuestion:
        if self.answerable and not (self.evidence and self.sources):
            raise ValueError(f"{self.id}: an answerable question needs sources and evidence quotes")
        if not self.answerable and (self.evidence or self.sources or self.answer):
            raise ValueError(f"{self.id}: an out_of_kb question has no sources, evidence or answer")
        return self


def load_gold(folder: Path = GOLD_DIR) -> list[GoldQuestion]:
    """Every gold question, English then Chinese, validated; ids must be unique."""
    questions = []
    for path in sorted(folder.glob("gold_*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    questions.append(GoldQuestion.model_validate(json.loads(line)))
                except ValueError as error:
                    raise ValueError(f"{path.name}, line {number}: {error}") from None
    duplicates = [qid for qid, n in Counter(q.id for q in questions).items() if n > 1]
    if duplicates:
        raise ValueError(f"duplicate gold question ids: {duplicates}")
    return questions


def sample_by_language(questions: Sequence[GoldQuestion], n: int, seed: int) -> list[GoldQuestion]:
    """A seeded sample of `n` gold questions, half English (the odd one) and half Chinese.

    Introduced in notebook 04 (the grading loop); notebooks 05 and 07 draw their samples with it.
    English first, then Chinese, each in the order the seeded draw picked them. A language with
    fewer questions than its half gives all it has.
    """
    rng = random.Random(seed)
    english = [q for q in questions if q.language == "en"]
    chinese = [q for q in questions if q.language == "zh"]
    half = n // 2
    return rng.sample(english, min(n - half, len(english))) + rng.sample(chinese, min(half, len(chinese)))


def load_corpus(folder: Path = CORPUS_DIR, progress: bool = False, limits: IngestLimits = DEFAULT_LIMITS) -> IngestResult:
    """Convert the knowledge base with Docling (cached by content hash); fails loudly on any skipped file."""
    result = ingest(folder, progress=progress, limits=limits)
    if result.skipped:
        raise RuntimeError("the course knowledge base has files that did not convert:\n" + result.summary())
    return result


def find_evidence(quote: str, text: str) -> bool:
    """Whether `quote` occurs in `text`, compared after the normalisation used for every gold quote."""
    return normalise_for_match(quote) in normalise_for_match(text)
