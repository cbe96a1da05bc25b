"""Structured output on the local server: the tool template (forced function calling) against a schema grammar.

Every structured call of the course went through the chat template's tool block, which puts the whole JSON
schema and ≈ 110 tokens of instructions into the prompt. `lessons.core.structured` can instead send the schema
as a grammar (`response_format`) with a one-line-per-field brief (`LOCAL_METHOD = "grammar"`). This measures both on notebook 04's grading
prompt over labelled pairs from the course gold set — for each sampled answerable question the section that
holds its evidence quote ("yes") and another section of the same file that does not ("no", an on-topic near
miss) — and records prompt tokens, seconds and accuracy per method, per language.

    python -m benchmarks.bench_structured [--per-language 12]
"""

import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core import structured
from lessons.core.models import get_chat_model
from lessons.core.usage import USAGE
from lessons.ingest.corpus import find_evidence, load_gold, load_sections

METHODS = ("function_calling", "grammar")


def labelled_pairs(per_language: int, seed: int = 7) -> list[tuple[str, str, str, bool]]:
    """(language, question, section text, holds the evidence) for a seeded sample of answerable gold questions."""
    sections = load_sections()
    by_file = defaultdict(list)
    for section in sections:
        by_file[section.metadata.get("source", "")].append(section)
    rng = random.Random(seed)
    pairs, taken = [], defaultdict(int)
    gold = [q for q in load_gold() if q.answerable and q.evidence]
    rng.shuffle(gold)
    for question in gold:
        if taken[question.language] >= per_language:
            continue
        holds = [s for s in sections if any(find_evidence(e, s.page_content) for e in question.evidence)]
        if not holds:
            continue
        source = holds[0].metadata.get("source", "")
        others = [s for s in by_file[source] if not any(find_evidence(e, s.page_content) for e in question.evidence)]
        if not others:
            continue
        pairs.append((question.language, question.question, holds[0].page_content, True))
        pairs.append((question.language, question.question, rng.choice(others).page_content, False))
        taken[question.language] += 1
    return pairs


def run(method: str, pairs) -> dict:
    from langchain_core.documents import Document

    from lessons.agents.grading import grade_documents

    original = structured.LOCAL_METHOD
    structured.LOCAL_METHOD = method
    llm = get_chat_model()  # cached: a re-run costs nothing; tokens count cached calls too, seconds only fresh ones
    rows = defaultdict(lambda: {"pairs": 0, "correct": 0, "prompt_tokens": 0, "seconds": 0.0, "fresh": 0})
    try:
        for language, question, text, label in pairs:
            before, fresh = USAGE.counts()["input_tokens"], USAGE.totals.calls
            start = time.perf_counter()
            grade = grade_documents(llm, question, [Document(text)])[0]
            row = rows[language]
            if USAGE.totals.calls > fresh:
                row["seconds"] += time.perf_counter() - start
                row["fresh"] += 1
            row["pairs"] += 1
            row["correct"] += (grade == "yes") == label
            row["prompt_tokens"] += USAGE.counts()["input_tokens"] - before
    finally:
        structured.LOCAL_METHOD = original
    return {
        language: {
            "pairs": r["pairs"],
            "accuracy": round(r["correct"] / r["pairs"], 3),
            "prompt_tokens_per_call": round(r["prompt_tokens"] / r["pairs"], 1),
            "seconds_per_fresh_call": round(r["seconds"] / r["fresh"], 2) if r["fresh"] else None,
        }
        for language, r in rows.items()
    }


def main():
    per_language = int(sys.argv[sys.argv.index("--per-language") + 1]) if "--per-language" in sys.argv else 12
    pairs = labelled_pairs(per_language)
    results = {}
    for method in METHODS:
        results[method] = run(method, pairs)
        print(method, results[method], flush=True)
    save("structured_output", {"per_language": per_language, "prompt": "notebook 04 GRADE_PROMPT", "methods": results})


if __name__ == "__main__":
    main()
