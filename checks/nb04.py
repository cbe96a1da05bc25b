"""Checks for notebook 04 (grading loop). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

from __future__ import annotations

from checks import CheckResult, expect, run_check


def check_stop_rule(decide) -> CheckResult:
    """Exercise 1: stop at the first relevant document; rewrite while rounds remain; give up at the cap."""

    def check():
        cases = [
            (
                (["no", "yes", "no"], 1, 3),
                "generate",
                "one 'yes' is enough to answer: return \"generate\"",
                "有一个 'yes' 就足以作答：返回 \"generate\"",
            ),
            (
                (["yes", "yes"], 3, 3),
                "generate",
                "a relevant document at the cap still wins: check for 'yes' first",
                "到了上限，有相关文档仍然要作答：先检查有没有 'yes'",
            ),
            (
                (["no", "no"], 1, 3),
                "rewrite",
                'nothing relevant and rounds left: return "rewrite"',
                '没有相关的块，但还有轮次：返回 "rewrite"',
            ),
            (
                (["no"], 2, 3),
                "rewrite",
                'round 2 of 3 still has a round left: return "rewrite"',
                '3 轮中的第 2 轮后面还有一轮：返回 "rewrite"',
            ),
            (
                (["no", "no"], 3, 3),
                "not_in_kb",
                'nothing relevant at the cap: return "not_in_kb" so the loop ends',
                '到了上限仍没有相关的块：返回 "not_in_kb"，让循环结束',
            ),
            (
                ([], 1, 1),
                "not_in_kb",
                'no documents at all and no rounds left: "not_in_kb"',
                '一个文档都没有，也没有剩余轮次："not_in_kb"',
            ),
        ]
        for args, expected, hint, zh in cases:
            got = decide(*args)
            expect(got == expected, f"decide{args} returned {got!r}: {hint}", zh=f"decide{args} 返回了 {got!r}：{zh}")

    return run_check("Exercise 1 (stop rule)", check, zh="练习 1（停止规则）")


def check_honest_answer(honest_answer) -> CheckResult:
    """Exercise 2: a fixed not-in-the-knowledge-base answer in the question's language."""

    def check():
        from lessons.text.language import detect_language

        english = honest_answer("Who is Tidewell's chief financial officer?")
        chinese = honest_answer("潮汐分析的首席财务官是谁？")
        expect(
            isinstance(english, str) and english.strip(),
            "return a sentence (a non-empty string)",
            zh="返回一句话（一个非空字符串）",
        )
        expect(
            isinstance(chinese, str) and chinese.strip(),
            "return a sentence for Chinese questions too",
            zh="对中文问题也要返回一句话",
        )
        expect(
            "knowledge base" in english.lower(),
            "say that the *knowledge base* has no information on this",
            zh="英文那句要说明 *knowledge base*（知识库）中没有这方面的信息",
        )
        expect(
            detect_language(chinese) == "zh",
            "answer a Chinese question in Chinese (知识库中没有…)",
            zh="用中文回答中文问题（知识库中没有…）",
        )
        expect("知识库" in chinese, "in Chinese, name the knowledge base: 知识库", zh="中文那句要点明“知识库”")
        expect(detect_language(english) == "en", "answer an English question in English", zh="用英文回答英文问题")
        expect(
            english == honest_answer("What is the CFO's name?"),
            "the fallback is a fixed sentence: it must not depend on anything but the language",
            zh="兜底回答是一句固定的话：除了语言，它不能依赖任何别的东西",
        )

    return run_check("Exercise 2 (honest fallback)", check, zh="练习 2（诚实的兜底回答）")
