"""Checks for notebook 00 (setup)."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ValidationError

from checks import CheckResult, Hint, expect, run_check


def check_grade_schema(schema) -> CheckResult:
    """Exercise 1: a Pydantic schema with one typed field `binary_score` that only allows "yes" or "no"."""

    def check():
        expect(
            isinstance(schema, type) and issubclass(schema, BaseModel),
            "define a class that inherits from pydantic's BaseModel: `class RelevanceGrade(BaseModel): ...`",
        )
        fields = schema.model_fields
        expect("binary_score" in fields, "give the class one field named `binary_score`")
        for value in ("yes", "no"):
            try:
                schema(binary_score=value)
            except ValidationError:
                raise Hint(f"binary_score must accept \"{value}\"") from None
        for value in ("maybe", "Yes.", ""):
            try:
                schema(binary_score=value)
            except ValidationError:
                continue
            expect(False, f'binary_score accepted "{value}": type it as Literal["yes", "no"] so nothing else passes')
        expect(
            bool(fields["binary_score"].description),
            "add a description with Field(description=...): the model reads it as part of the function's schema",
        )
        from lessons.fakes import ScriptedChatModel
        from lessons.structured import invoke_structured

        grade = invoke_structured(ScriptedChatModel(responses=[{"binary_score": "no"}]), schema, "Is it relevant?")
        expect(grade.binary_score == "no", "the schema did not round-trip through invoke_structured")

    return run_check("Exercise 1 (grade schema)", check)


def check_cosine_similarity(cosine_similarity) -> CheckResult:
    """Exercise 2: cosine similarity of two vectors, by hand with numpy."""

    def check():
        expect(callable(cosine_similarity), "define a function `cosine_similarity(a, b)`")
        rng = np.random.default_rng(0)
        a, b = rng.normal(size=8), rng.normal(size=8)
        result = cosine_similarity(a, b)
        expect(result is not None, "your function returns None — did you forget `return`?")
        reference = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        expect(
            np.isclose(float(result), reference, atol=1e-6),
            f"for two random vectors you returned {float(result):.4f}, expected {reference:.4f}: "
            "divide the dot product by the product of the two lengths (np.linalg.norm)",
        )
        expect(np.isclose(float(cosine_similarity(a, 3 * a)), 1.0), "a vector and 3× itself point the same way: expect 1.0")
        expect(np.isclose(float(cosine_similarity(a, -a)), -1.0), "a vector and its negative: expect -1.0")

    return run_check("Exercise 2 (cosine similarity)", check)
