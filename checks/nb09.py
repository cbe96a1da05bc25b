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


# Exercise 3's cases: two questions, and why the guard keeps them apart or lets one answer the other (en, zh).
_GUARD_CASES = [
    ("What was NRR in Q3 2026?", "What was NRR in Q2 2026?",
     "each names something the other lacks (Q3, Q2): a conflict", "双方各有对方没有的具体项（Q3、Q2）：冲突"),
    ("What was NRR in the third quarter of 2026?", "What was NRR in Q3 2026?",
     "one only leaves a specific out (Q3): no conflict", "一方只是少说了一个具体项（Q3）：不冲突"),
    ("Can a backup be restored onto an older version of Atlas?", "Can a backup be restored onto another version of Atlas?",
     "a contrast (\"~older\") only one of them holds is a conflict, even though the other names nothing more",
     "只有一方带着的对比词（\"~older\"）就是冲突，哪怕另一方没有多点出任何东西"),
    ("Business 版按月付费多少钱？", "Business 版的价格是多少？",
     "a contrast (\"~monthly\", 按月) only one of them holds is a conflict", "只有一方带着的对比词（\"~monthly\"，按月）就是冲突"),
    ("What is the maximum chunk size of Atlas Ingest?", "What is the largest chunk size of Atlas Ingest?",
     "the same contrast (\"~max\") in both is no conflict", "双方都有同一个对比词（\"~max\"）：不冲突"),
    ("What was gross NRR in Q3 2026?", "What was gross NRR in 2026?",
     "both hold the contrast, and one only leaves a specific out: no conflict",
     "双方都有这个对比词，一方只是少说了一个具体项：不冲突"),
    ("How long are audit logs kept?", "For how long are audit logs kept?",
     "no specifics at all: no conflict", "都没有具体项：不冲突"),
]  # fmt: skip


def check_conflict(conflict) -> CheckResult:
    """Exercise 3: the cache's guard (`lessons.retrieval.semantic_cache.specifics_conflict`), compared with it on
    pairs of questions in both orders: each names a specific the other lacks, or a contrast ("~…") only one holds."""

    def check():
        from lessons.retrieval.semantic_cache import specifics, specifics_conflict

        expect(
            callable(conflict),
            "define a function `conflict(asked, stored)`",
            zh="定义一个函数 `conflict(asked, stored)`",
        )
        for first, second, reason, reason_zh in _GUARD_CASES:
            for asked, stored in ((first, second), (second, first)):
                names, other = specifics(asked), specifics(stored)
                want, got = specifics_conflict(names, other), conflict(names, other)
                expect(
                    got is not None,
                    "your function returns None — did you forget `return`?",
                    zh="你的函数返回了 None——是不是忘了写 `return`？",
                )
                expect(
                    got == want,
                    f"{asked!r} against {stored!r} — specifics {sorted(names)} and {sorted(other)}: {reason} "
                    f"({want}), not {got!r}",
                    zh=f"{asked!r} 对 {stored!r}——具体项 {sorted(names)} 和 {sorted(other)}：{reason_zh}"
                    f"（{want}），而不是 {got!r}",
                )

    return run_check("Exercise 3 (the cache's guard)", check, zh="练习 3（缓存的防护）")
