"""Checks for notebook 05 (three-agent verification)."""

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

        expect(isinstance(schema, type) and issubclass(schema, BaseModel), "define a Pydantic model (class … (BaseModel))")
        fields = schema.model_fields
        wanted = ["unsupported_claims", "contradictions", "supported", "relevant"]
        missing = [name for name in wanted if name not in fields]
        expect(not missing, f"the verdict needs the fields {wanted}; missing: {missing}")
        for name in ("supported", "relevant"):
            expect(_literal_values(fields[name].annotation) == {"yes", "no"},
                   f"`{name}` must be Literal['yes', 'no']: a typed choice, never a sentence to search for a word")
        for name in ("unsupported_claims", "contradictions"):
            expect(typing.get_origin(fields[name].annotation) is list and typing.get_args(fields[name].annotation) == (str,),
                   f"`{name}` must be list[str]: one entry per claim, so the feedback can name each one")
            expect(bool(fields[name].description), f"give `{name}` a Field(description=…): the model reads it")
        order = list(fields)
        expect(max(order.index("unsupported_claims"), order.index("contradictions"))
               < min(order.index("supported"), order.index("relevant")),
               "put the two lists before the yes/no fields: the model then writes down what it found before it decides")
        reply = {"unsupported_claims": ["the price is €54"], "contradictions": [], "supported": "no", "relevant": "yes"}
        verdict = invoke_structured(ScriptedChatModel(responses=[reply]), schema, "check this draft")
        expect(verdict.supported == "no" and verdict.unsupported_claims == ["the price is €54"],
               "a model's reply with the four fields should parse into your schema")

    return run_check("Exercise 1 (verdict schema)", check)


def check_routing_rule(route) -> CheckResult:
    """Exercise 2: accept a draft nothing stands against; re-research while rounds remain; give up at the cap."""

    def check():
        from lessons.agents.three_agents import Verification

        def verdict(unsupported=(), contradictions=(), supported="yes", relevant="yes"):
            return Verification(unsupported_claims=list(unsupported), contradictions=list(contradictions),
                                supported=supported, relevant=relevant)

        cases = [
            ((verdict(), 1, 2), "accept", "nothing listed against the draft: return \"accept\""),
            ((verdict(), 2, 2), "accept", "a passed verdict at the cap is still accepted: check the verdict first"),
            ((verdict(supported="no"), 1, 2), "accept",
             "supported='no' with no claim listed is a 'no' without a reason: section 6 measures why it does not reject"),
            ((verdict(unsupported=["CFO Marcus Lindqvist"]), 1, 2), "re_research",
             "a listed unsupported claim rejects the draft, even with supported='yes': trust the list"),
            ((verdict(contradictions=["54 vs 45"]), 1, 3), "re_research", "a contradicted claim is not accepted"),
            ((verdict(unsupported=["x"]), 2, 2), "give_up", "no rounds left: \"give_up\" so the loop ends"),
            ((verdict(unsupported=["x"]), 3, 2), "give_up", "past the cap: \"give_up\" (use >=, not ==)"),
            ((verdict(contradictions=["x"]), 1, 1), "give_up", "a cap of one round never re-researches"),
        ]
        for args, expected, hint in cases:
            got = route(*args)
            expect(got == expected, f"round {args[1]} of {args[2]} returned {got!r}: {hint}")

    return run_check("Exercise 2 (routing after verification)", check)
