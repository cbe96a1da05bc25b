"""The course knowledge base and its gold question set, and the second knowledge base of real READMEs.

Introduced in notebook 01 (chunking). `load_corpus()` converts every document in `data/corpus/` with
Docling (cached), `load_gold()` reads the hand-written questions in `data/eval/gold_*.jsonl`, typed
and validated into the course's one question model
(`lessons.ingest.questions.Question`). `find_evidence()` locates a gold quote in any text, whatever the chunking.

The second knowledge base (notebook 06) is real third-party text: the READMEs of ten installed
packages in `data/packages/` (rendered by `data/build_packages.py`, pinned by its `MANIFEST.json`),
with its own hand-written questions, `load_gold(corpus="packages")`. `corpus_folder(corpus)` gives
either folder; `load_corpus` reads a folder with a manifest through it, checking every file's SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import TypeVar

from langchain_core.documents import Document

from lessons.core.settings import PROJECT_ROOT
from lessons.ingest.files import IngestLimits, IngestResult, ingest, split_sections, to_documents
from lessons.ingest.questions import Question, QuestionType, SourceRef  # noqa: F401 (names of this module)
from lessons.text.normalise import normalise_for_match

CORPUS_DIR = PROJECT_ROOT / "data" / "corpus"
GOLD_DIR = PROJECT_ROOT / "data" / "eval"
DEFAULT_LIMITS = IngestLimits()
PACKAGES_DIR = PROJECT_ROOT / "data" / "packages"
MANIFEST_NAME = "MANIFEST.json"
# The knowledge bases that ship with the course: folder and gold file pattern (in GOLD_DIR).
CORPORA = {"course": (CORPUS_DIR, "gold_*.jsonl"), "packages": (PACKAGES_DIR, "packages_gold.jsonl")}

DEFAULT_LIMITS = IngestLimits()  # lessons.ingest's per-file and total size limits

# The gold set's questions are the course's one question model (`lessons.ingest.questions.Question`).
GoldQuestion = Question
T = TypeVar("T")


def corpus_folder(corpus: str = "course") -> Path:
    """The folder of a knowledge base that ships with the course: "course" (Tidewell) or "packages" (READMEs).

    Introduced in notebook 06 (evaluation).
    """
    return CORPORA[_check_corpus(corpus)][0]


def load_gold(folder: Path = GOLD_DIR, corpus: str = "course") -> list[GoldQuestion]:
    """Every gold question of `corpus` ("course": English then Chinese; "packages"), validated; ids must be unique."""
    pattern = CORPORA[_check_corpus(corpus)][1]
    paths = sorted(Path(folder).glob(pattern))
    if not paths:
        raise FileNotFoundError(f"no gold question file {pattern} in {folder} — check the folder, or rebuild the data")
    questions = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    raw = {**json.loads(line), "origin": "gold"}
                    questions.append(Question.model_validate(raw, context={"gold": True}))
                except ValueError as error:
                    raise ValueError(f"{path.name}, line {number}: {error}") from None
    duplicates = [qid for qid, n in Counter(q.id for q in questions).items() if n > 1]
    if duplicates:
        raise ValueError(f"duplicate gold question ids: {duplicates}")
    return questions


def in_course_language(questions: list[GoldQuestion], language: str | None = None) -> list[GoldQuestion]:
    """The questions in the notebook's language (`lessons.core.i18n.course_language()`, or `language`), in order.

    Introduced in notebook 04 (grading loop): one way for every notebook to pick its running examples and demo
    questions, so the Chinese copy runs Chinese gold questions where the English copy runs English ones. An empty
    result is an error naming the language: a notebook never falls back to the other language's examples.
    """
    from lessons.core.i18n import course_language

    language = language or course_language()
    chosen = [q for q in questions if q.language == language]
    if not chosen:
        raise ValueError(
            f"none of these {len(questions)} questions is in {language!r}: "
            "sample the examples from questions of both languages (data/eval/gold_*.jsonl)"
        )
    return chosen


def for_course_language(**choices: T) -> T:
    """The value given for the notebook's language (`lessons.core.i18n.course_language()`): `en=…, zh=…`.

    Introduced in notebook 02 (retrieval tricks): a demo that is not a gold question (a probe, a scripted
    tool call) picks its text by language with the same rule as `course_example`. A language without a value is
    an error naming it, never the other language's value.
    """
    from lessons.core.i18n import course_language

    language = course_language()
    if language not in choices:
        raise ValueError(
            f"no value for the course language {language!r} (given: {sorted(choices)}): add {language}=… to the call"
        )
    return choices[language]


def course_example(questions: list[GoldQuestion], **ids: str) -> GoldQuestion:
    """The gold question the notebook runs as its example in its language: `course_example(gold, en="en-052", zh="zh-034")`.

    Introduced in notebook 02 (retrieval tricks): one running example per language, so the Chinese copy
    runs a Chinese gold question where the English copy runs its English one. An id missing from `questions`, or
    one that is not in the language it is given for, is an error naming it.
    """
    from lessons.core.i18n import course_language

    wanted = for_course_language(**ids)
    found = next((q for q in questions if q.id == wanted), None)
    if found is None:
        raise ValueError(
            f"the example {wanted!r} is not among these {len(questions)} questions: check the id in the notebook"
        )
    language = course_language()
    if found.language != language:
        raise ValueError(
            f"the example {wanted!r} is in {found.language!r}, given as {language}=: pick a {language} question"
        )
    return found


def asked_in_course_language(question: GoldQuestion, **wordings: str) -> GoldQuestion:
    """`question` asked in the notebook's language: `asked_in_course_language(q, zh="…")` for a gold question the
    set asks in one language only.

    Introduced in notebook 05 (three-agent verification), for the contradiction case: the reference answer and
    the evidence stay the gold question's (the documents that hold them are in its language: cross-lingual
    retrieval); the question text and the language are the reader's. In the question's own language it is
    returned unchanged. Like `for_course_language`, a language without a wording is an error naming it; a wording
    for the question's own language is an error too (the gold text is the question there).
    """
    from lessons.core.i18n import course_language

    if question.language in wordings:
        raise ValueError(
            f"{question.id} is asked in {question.language!r} by the gold set: drop {question.language}=… from the call"
        )
    text = for_course_language(**{question.language: question.question, **wordings})
    language = course_language()
    return (
        question
        if language == question.language
        else question.model_copy(update={"question": text, "language": language})
    )


def load_corpus(
    folder: Path = CORPUS_DIR, progress: bool = False, limits: IngestLimits = DEFAULT_LIMITS
) -> IngestResult:
    """Convert the knowledge base with Docling (cached by content hash); fails loudly on any skipped file.

    A folder with a `MANIFEST.json` (like `data/packages/`) is read through it: exactly the files it
    lists, each checked against the manifest's SHA-256 first (`manifest_files`).
    """
    listed = manifest_files(folder)
    result = ingest(folder if listed is None else listed, progress=progress, limits=limits)
    if result.skipped:
        raise RuntimeError("the course knowledge base has files that did not convert:\n" + result.summary())
    return result


def read_manifest(folder: Path = PACKAGES_DIR) -> dict | None:
    """The parsed `MANIFEST.json` of a knowledge-base folder, or None when the folder has none.

    Introduced in notebook 06 (evaluation): it names each document's package, version and licence.
    """
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        entries = manifest["packages"]
        if not all({"file", "sha256"} <= set(entry) for entry in entries):
            raise KeyError("file/sha256")
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path}: not a knowledge-base manifest ({error}) — rebuild it with data/build_packages.py"
        ) from None
    return manifest


def manifest_files(folder: Path) -> list[Path] | None:
    """The files a folder's manifest lists, each checked against its SHA-256; None when there is no manifest.

    Raises `ValueError` naming the file and the fix when a listed file is missing or changed, or when
    the folder holds a document the manifest does not list (it would be silently left out).
    """
    manifest = read_manifest(folder)
    if manifest is None:
        return None
    folder = Path(folder)
    listed = [entry["file"] for entry in manifest["packages"]]
    problems = []
    for entry in manifest["packages"]:
        path = folder / entry["file"]
        if not path.is_file():
            problems.append(f"{entry['file']} is missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            problems.append(f"{entry['file']} differs from the text the manifest pins (edited by hand?)")
    unlisted = sorted(
        p.name
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.name != MANIFEST_NAME and p.name not in listed
    )
    problems += [f"{name} is not listed in {MANIFEST_NAME}" for name in unlisted]
    if problems:
        raise ValueError(
            f"{folder}: " + "; ".join(problems) + " — rebuild the folder with data/build_packages.py "
            "(git checkout restores the committed files)"
        )
    return [folder / name for name in listed]


def _check_corpus(corpus: str) -> str:
    if corpus not in CORPORA:
        raise ValueError(f"unknown knowledge base {corpus!r} — choose one of {sorted(CORPORA)}")
    return corpus


def find_evidence(quote: str, text: str) -> bool:
    """Whether `quote` occurs in `text`, compared after the normalisation used for every gold quote."""
    return normalise_for_match(quote) in normalise_for_match(text)


def load_documents(folder=CORPUS_DIR, limits: IngestLimits = DEFAULT_LIMITS) -> list[Document]:
    """The knowledge base before any splitting: one Document per page (PDF, PPTX) or per file.

    Introduced in notebook 01 (chunking). `limits` are the size limits of `lessons.ingest.files.IngestLimits`
    (the ones a `FileTooLarge` message suggests).
    """
    return to_documents(load_corpus(folder, limits=limits).documents)


def load_sections(folder=CORPUS_DIR, limits: IngestLimits = DEFAULT_LIMITS) -> list[Document]:
    """The knowledge base split at its Markdown headings (one Document per section and page)."""
    return split_sections(load_documents(folder, limits))
