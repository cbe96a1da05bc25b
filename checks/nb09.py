"""Checks for notebook 09 (routing, metadata filters and a semantic cache). Every hint has its Chinese twin (`zh=`)."""

from __future__ import annotations

from checks import CheckResult, expect, run_check


def check_route_of(route_of) -> CheckResult:
    """Exercise 1: the best-scoring knowledge base, or "neither" when even its score is below the threshold."""

    def check():
        got = route_of({"course": 0.91, "packages": 0.86}, 0.85)
        expect(
            got == "course",
            f"the base with the highest score wins when it reaches the threshold: 'course' here, not {got!r}",
            zh=f"分数最高的知识库在达到阈值时胜出：这里应是 'course'，而不是 {got!r}",
        )
        got = route_of({"course": 0.80, "packages": 0.84}, 0.85)
        expect(
            got == "neither",
            f"below the threshold even the best base is not close enough: return 'neither', not {got!r}",
            zh=f"低于阈值时，连最好的知识库也不够接近：返回 'neither'，而不是 {got!r}",
        )
        got = route_of({"course": 0.84, "packages": 0.85}, 0.85)
        expect(
            got == "packages",
            f"a score equal to the threshold is close enough (>=): 'packages' here, not {got!r}",
            zh=f"分数等于阈值就算足够接近（>=）：这里应是 'packages'，而不是 {got!r}",
        )

    return run_check("Exercise 1 (route by scores)", check, zh="练习 1（按分数路由）")


def check_matches(matches) -> CheckResult:
    """Exercise 2: whether a chunk's metadata meet every condition of a filter (field → allowed values)."""

    def check():
        metadata = {"source": "release_notes.md", "format": "md", "language": "en", "section": "Atlas 4.2.1"}
        expect(
            matches(metadata, {"source": ["release_notes.md"], "language": ["en", "zh"]}) is True,
            "every field's value is among its allowed values: the chunk matches (return True)",
            zh="每个字段的值都在允许的值里：这个块匹配（返回 True）",
        )
        expect(
            matches(metadata, {"source": ["release_notes.md"], "language": ["zh"]}) is False,
            "one condition the chunk fails is enough: language 'en' is not in ['zh'] (return False)",
            zh="只要有一个条件不满足就不匹配：language 'en' 不在 ['zh'] 里（返回 False）",
        )
        expect(
            matches(metadata, {}) is True,
            "a filter without conditions lets every chunk through (return True)",
            zh="没有条件的过滤器让每个块都通过（返回 True）",
        )
        expect(
            matches({"source": "a.md"}, {"section": ["Install"]}) is False,
            "a chunk without the field does not meet a condition on it (return False)",
            zh="没有这个字段的块不满足针对它的条件（返回 False）",
        )

    return run_check("Exercise 2 (a chunk meets a filter)", check, zh="练习 2（块是否满足过滤器）")


def check_conflict(conflict) -> CheckResult:
    """Exercise 3: two questions ask about different things when each names a specific the other lacks."""

    def check():
        expect(
            conflict(frozenset({"q3", "2026"}), frozenset({"q2", "2026"})) is True,
            "'Q3 2026' against 'Q2 2026': each names something the other lacks — a conflict (True)",
            zh="'Q3 2026' 对 'Q2 2026'：双方各有对方没有的具体项——冲突（True）",
        )
        expect(
            conflict(frozenset({"2026"}), frozenset({"q3", "2026"})) is False,
            "a question that only leaves a specific out ('2026' for 'Q3 2026') does not conflict (False)",
            zh="只是少说了一个具体项的问题（'2026' 对 'Q3 2026'）不算冲突（False）",
        )
        expect(
            conflict(frozenset({"rotterdam"}), frozenset({"rotterdam"})) is False
            and conflict(frozenset(), frozenset()) is False,
            "the same specifics, or none at all, are no conflict (False)",
            zh="具体项相同，或者都没有具体项，不算冲突（False）",
        )

    return run_check("Exercise 3 (the cache's guard)", check, zh="练习 3（缓存的防护）")
