"""Checks for notebook 04 (grading loop)."""

from __future__ import annotations

from checks import CheckResult, expect, run_check


def check_stop_rule(decide) -> CheckResult:
    """Exercise 1: stop at the first relevant document; rewrite while rounds remain; give up at the cap."""

    def check():
        cases = [
            ((["no", "yes", "no"], 1, 3), "generate", "one 'yes' is enough to answer: return \"generate\""),
            ((["yes", "yes"], 3, 3), "generate", "a relevant document at the cap still wins: check for 'yes' first"),
            ((["no", "no"], 1, 3), "rewrite", "nothing relevant and rounds left: return \"rewrite\""),
            ((["no"], 2, 3), "rewrite", "round 2 of 3 still has a round left: return \"rewrite\""),
            ((["no", "no"], 3, 3), "not_in_kb", "nothing relevant at the cap: return \"not_in_kb\" so the loop ends"),
            (([], 1, 1), "not_in_kb", "no documents at all and no rounds left: \"not_in_kb\""),
        ]
        for args, expected, hint in cases:
            got = decide(*args)
            expect(got == expected, f"decide{args} returned {got!r}: {hint}")

    return run_check("Exercise 1 (stop rule)", check)


def check_honest_answer(honest_answer) -> CheckResult:
    """Exercise 2: a fixed not-in-the-knowledge-base answer in the question's language."""

    def check():
        from lessons.text.language import detect_language

        english = honest_answer("Who is Tidewell's chief financial officer?")
        chinese = honest_answer("潮汐分析的首席财务官是谁？")
        expect(isinstance(english, str) and english.strip(), "return a sentence (a non-empty string)")
        expect(isinstance(chinese, str) and chinese.strip(), "return a sentence for Chinese questions too")
        expect("knowledge base" in english.lower(), "say that the *knowledge base* has no information on this")
        expect(detect_language(chinese) == "zh", "answer a Chinese question in Chinese (知识库中没有…)")
        expect("知识库" in chinese, "in Chinese, name the knowledge base: 知识库")
        expect(detect_language(english) == "en", "answer an English question in English")
        expect(english == honest_answer("What is the CFO's name?"),
               "the fallback is a fixed sentence: it must not depend on anything but the language")

    return run_check("Exercise 2 (honest fallback)", check)
