"""Checks for notebook 05 (three-agent verification). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

from __future__ import annotations

import typing

from checks import CheckResult, expect, run_check


def _literal_values(annotation) -> set:
    return set(typing.get_args(annotation)) if typing.get_origin(annotation) is typing.Literal else set()


def check_verdict_schema(schema) -> CheckResult:
    """Exercise 1: the verifier's typed verdict — two lists, then two yes/no fields."""

    def check():
        from pydantic import BaseModel

        from lessons.core.fakes import ScriptedChatModel
        from lessons.core.structured import invoke_structured

        expect(
            isinstance(schema, type) and issubclass(schema, BaseModel),
            "define a Pydantic model (class … (BaseModel))",
            zh="定义一个 Pydantic 模型（class … (BaseModel)）",
        )
        fields = schema.model_fields
        wanted = ["unsupported_claims", "contradictions", "supported", "relevant"]
        missing = [name for name in wanted if name not in fields]
        expect(
            not missing,
            f"the verdict needs the fields {wanted}; missing: {missing}",
            zh=f"判决需要这些字段 {wanted}；缺少：{missing}",
        )
        for name in ("supported", "relevant"):
            expect(
                _literal_values(fields[name].annotation) == {"yes", "no"},
                f"`{name}` must be Literal['yes', 'no']: a typed choice, never a sentence to search for a word",
                zh=f"`{name}` 必须是 Literal['yes', 'no']：一个有类型的选择，而不是一句要从中搜词的话",
            )
        for name in ("unsupported_claims", "contradictions"):
            expect(
                typing.get_origin(fields[name].annotation) is list
                and typing.get_args(fields[name].annotation) == (str,),
                f"`{name}` must be list[str]: one entry per claim, so the feedback can name each one",
                zh=f"`{name}` 必须是 list[str]：每条论断一项，这样反馈才能逐条点名",
            )
            expect(
                bool(fields[name].description),
                f"give `{name}` a Field(description=…): the model reads it",
                zh=f"给 `{name}` 加一个 Field(description=…)：模型会读它",
            )
        order = list(fields)
        expect(
            max(order.index("unsupported_claims"), order.index("contradictions"))
            < min(order.index("supported"), order.index("relevant")),
            "put the two lists before the yes/no fields: the model then writes down what it found before it decides",
            zh="把两个列表放在 yes/no 字段前面：这样模型先写下它发现了什么，再做决定",
        )
        reply = {"unsupported_claims": ["the price is €54"], "contradictions": [], "supported": "no", "relevant": "yes"}
        verdict = invoke_structured(ScriptedChatModel(responses=[reply]), schema, "check this draft")
        expect(
            verdict.supported == "no" and verdict.unsupported_claims == ["the price is €54"],
            "a model's reply with the four fields should parse into your schema",
            zh="一个包含这四个字段的模型回复应该能解析成你的 schema",
        )

    return run_check("Exercise 1 (verdict schema)", check, zh="练习 1（判决 schema）")


def check_routing_rule(route) -> CheckResult:
    """Exercise 2: accept a draft nothing stands against; re-research while rounds remain; give up at the cap."""

    def check():
        from lessons.agents.three_agents import Verification

        def verdict(unsupported=(), contradictions=(), supported="yes", relevant="yes"):
            return Verification(
                unsupported_claims=list(unsupported),
                contradictions=list(contradictions),
                supported=supported,
                relevant=relevant,
            )

        cases = [
            (
                (verdict(), 1, 2),
                "accept",
                'nothing listed against the draft: return "accept"',
                '没有列出任何反对草稿的内容：返回 "accept"',
            ),
            (
                (verdict(), 2, 2),
                "accept",
                "a passed verdict at the cap is still accepted: check the verdict first",
                "到了上限，通过的判决仍然要接受：先检查判决",
            ),
            (
                (verdict(supported="no"), 1, 2),
                "accept",
                "supported='no' with no claim listed is a 'no' without a reason: section 6 measures why it does not reject",
                "supported='no' 却没有列出任何论断，就是一个没有理由的 'no'：第 6 节测量了它为什么不退回草稿",
            ),
            (
                (verdict(unsupported=["CFO Marcus Lindqvist"]), 1, 2),
                "re_research",
                "a listed unsupported claim rejects the draft, even with supported='yes': trust the list",
                "列出了一条缺乏依据的论断，即使 supported='yes' 也要退回草稿：相信列表",
            ),
            (
                (verdict(contradictions=["54 vs 45"]), 1, 3),
                "re_research",
                "a contradicted claim is not accepted",
                "与上下文矛盾的论断不能接受",
            ),
            (
                (verdict(unsupported=["x"]), 2, 2),
                "give_up",
                'no rounds left: "give_up" so the loop ends',
                '没有剩余轮次：返回 "give_up"，让循环结束',
            ),
            (
                (verdict(unsupported=["x"]), 3, 2),
                "give_up",
                'past the cap: "give_up" (use >=, not ==)',
                '超过上限："give_up"（用 >=，不要用 ==）',
            ),
            (
                (verdict(contradictions=["x"]), 1, 1),
                "give_up",
                "a cap of one round never re-researches",
                "上限为一轮时永远不会重新研究",
            ),
        ]
        for args, expected, hint, zh in cases:
            got = route(*args)
            expect(
                got == expected,
                f"round {args[1]} of {args[2]} returned {got!r}: {hint}",
                zh=f"{args[2]} 轮中的第 {args[1]} 轮返回了 {got!r}：{zh}",
            )

    return run_check("Exercise 2 (routing after verification)", check, zh="练习 2（验证之后的路由）")
