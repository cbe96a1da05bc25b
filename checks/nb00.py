"""Checks for notebook 00 (setup). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

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
            zh="定义一个继承 pydantic BaseModel 的类：`class RelevanceGrade(BaseModel): ...`",
        )
        fields = schema.model_fields
        expect(
            "binary_score" in fields,
            "give the class one field named `binary_score`",
            zh="给这个类加一个名为 `binary_score` 的字段",
        )
        for value in ("yes", "no"):
            try:
                schema(binary_score=value)
            except ValidationError:
                raise Hint(f'binary_score must accept "{value}"', zh=f'binary_score 必须接受 "{value}"') from None
        for value in ("maybe", "Yes.", ""):
            try:
                schema(binary_score=value)
            except ValidationError:
                continue
            expect(
                False,
                f'binary_score accepted "{value}": type it as Literal["yes", "no"] so nothing else passes',
                zh=f'binary_score 接受了 "{value}"：把它的类型写成 Literal["yes", "no"]，其他值就进不来了',
            )
        expect(
            bool(fields["binary_score"].description),
            "add a description with Field(description=...): the model reads it as part of the function's schema",
            zh="用 Field(description=...) 加一段描述：模型会把它当作函数 schema 的一部分来读",
        )
        from lessons.core.fakes import ScriptedChatModel
        from lessons.core.structured import invoke_structured

        grade = invoke_structured(ScriptedChatModel(responses=[{"binary_score": "no"}]), schema, "Is it relevant?")
        expect(
            grade.binary_score == "no",
            "the schema did not round-trip through invoke_structured",
            zh="这个 schema 经过 invoke_structured 一来一回后结果不对",
        )

    return run_check("Exercise 1 (grade schema)", check, zh="练习 1（评分 schema）")


def check_cosine_similarity(cosine_similarity) -> CheckResult:
    """Exercise 2: cosine similarity of two vectors, by hand with numpy."""

    def check():
        expect(
            callable(cosine_similarity),
            "define a function `cosine_similarity(a, b)`",
            zh="定义一个函数 `cosine_similarity(a, b)`",
        )
        rng = np.random.default_rng(0)
        a, b = rng.normal(size=8), rng.normal(size=8)
        result = cosine_similarity(a, b)
        expect(
            result is not None,
            "your function returns None — did you forget `return`?",
            zh="你的函数返回了 None——是不是忘了写 `return`？",
        )
        reference = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        expect(
            np.isclose(float(result), reference, atol=1e-6),
            f"for two random vectors you returned {float(result):.4f}, expected {reference:.4f}: "
            "divide the dot product by the product of the two lengths (np.linalg.norm)",
            zh=f"对两个随机向量，你返回了 {float(result):.4f}，应为 {reference:.4f}："
            "用点积除以两个向量长度（np.linalg.norm）的乘积",
        )
        expect(
            np.isclose(float(cosine_similarity(a, 3 * a)), 1.0),
            "a vector and 3× itself point the same way: expect 1.0",
            zh="一个向量和它的 3 倍方向相同：结果应为 1.0",
        )
        expect(
            np.isclose(float(cosine_similarity(a, -a)), -1.0),
            "a vector and its negative: expect -1.0",
            zh="一个向量和它的相反向量：结果应为 -1.0",
        )

    return run_check("Exercise 2 (cosine similarity)", check, zh="练习 2（余弦相似度）")
