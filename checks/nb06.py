"""Checks for notebook 06 (evaluation). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

from __future__ import annotations

import random
import typing

from checks import CheckResult, expect, run_check


def check_mrr(mrr) -> CheckResult:
    """Exercise 1: mean reciprocal rank of one ranked list, compared with `lessons.evaluation.metrics.mrr_at_k`."""

    def check():
        from lessons.evaluation.metrics import mrr_at_k

        expect(callable(mrr), "define a function `mrr(labels, k)`", zh="定义一个函数 `mrr(labels, k)`")
        got = mrr([False, True, False], 10)
        expect(
            got is not None,
            "your function returns None — did you forget `return`?",
            zh="你的函数返回了 None——是不是忘了写 `return`？",
        )
        expect(
            abs(got - 0.5) < 1e-9,
            f"mrr([False, True, False], 10) returned {got!r}: the first relevant chunk is at rank 2, so 1/2",
            zh=f"mrr([False, True, False], 10) 返回了 {got!r}：第一个相关块排在第 2 名，所以应为 1/2",
        )
        expect(
            mrr([True, True], 10) == 1.0,
            "only the FIRST relevant chunk counts: [True, True] gives 1/1, not 1 + 1/2",
            zh="只有第一个相关块算数：[True, True] 得 1/1，而不是 1 + 1/2",
        )
        expect(
            mrr([False, False, False], 10) == 0.0,
            "no relevant chunk at all: return 0.0",
            zh="完全没有相关块：返回 0.0",
        )
        expect(
            mrr([], 10) == 0.0,
            "an empty ranking has no relevant chunk: return 0.0",
            zh="空的排序列表里没有相关块：返回 0.0",
        )
        expect(
            mrr([False, False, True], 2) == 0.0,
            "look at the first k chunks only: a hit at rank 3 does not count for k=2",
            zh="只看前 k 个块：k=2 时，排在第 3 名的命中不算",
        )
        expect(
            abs(mrr([False, False, False, True], 10) - 0.25) < 1e-9,
            "ranks start at 1: a hit at the 4th position gives 1/4",
            zh="排名从 1 开始：第 4 个位置上的命中得 1/4",
        )
        rng = random.Random(6)
        for _ in range(200):
            labels = [rng.random() < 0.25 for _ in range(rng.randint(0, 12))]
            k = rng.randint(1, 12)
            expect(abs(mrr(labels, k) - mrr_at_k(labels, k)) < 1e-9,
                   f"mrr({labels}, {k}) returned {mrr(labels, k)}, expected {mrr_at_k(labels, k)}",
                   zh=f"mrr({labels}, {k}) 返回了 {mrr(labels, k)}，应为 {mrr_at_k(labels, k)}")  # fmt: skip

    return run_check("Exercise 1 (MRR)", check, zh="练习 1（MRR）")


def check_completeness_schema(schema) -> CheckResult:
    """Exercise 2: a typed completeness verdict — copy the reference's key fact, copy what the answer says, then decide."""

    def check():
        from pydantic import BaseModel

        from lessons.core.fakes import ScriptedChatModel
        from lessons.core.structured import invoke_structured

        expect(
            isinstance(schema, type) and issubclass(schema, BaseModel),
            "write a Pydantic model: `class CompletenessVerdict(BaseModel):`",
            zh="写一个 Pydantic 模型：`class CompletenessVerdict(BaseModel):`",
        )
        fields = schema.model_fields
        wanted = ["reference_key_fact", "answer_says", "complete"]
        expect(
            all(name in fields for name in wanted),
            f"your schema has the fields {list(fields)}: it needs {wanted}",
            zh=f"你的 schema 的字段是 {list(fields)}：它需要 {wanted}",
        )
        expect([n for n in fields if n in wanted] == wanted,
               "keep the order reference_key_fact → answer_says → complete: the model writes fields in order, and a "
               "verdict written after both sides were copied is a comparison; written first, it is a guess",
               zh="保持 reference_key_fact → answer_says → complete 的顺序：模型按顺序填写字段，"
               "两边都抄下来之后再写的判决是一次比较；先写的判决只是猜测")  # fmt: skip
        for name in ("reference_key_fact", "answer_says"):
            expect(
                fields[name].annotation is str,
                f"`{name}` holds copied text: annotate it `str`",
                zh=f"`{name}` 存放抄下来的文字：把它的类型标注为 `str`",
            )
        complete = fields["complete"].annotation
        expect(typing.get_origin(complete) is typing.Literal and set(typing.get_args(complete)) == {"yes", "no"},
               "make `complete` a `Literal[\"yes\", \"no\"]`: the model must choose one of two values, "
               "never write a sentence we would have to parse",
               zh="把 `complete` 写成 `Literal[\"yes\", \"no\"]`：模型必须在两个值中选一个，"
               "而不是写一句我们还得去解析的话")  # fmt: skip
        for name in wanted:
            expect(bool(fields[name].description),
                   f"give `{name}` a Field(description=...): the description is what the model reads",
                   zh=f"给 `{name}` 一个 Field(description=...)：模型读的就是这段描述")  # fmt: skip
        extra = [n for n, f in fields.items() if n not in wanted and f.is_required()]
        expect(
            not extra,
            f"keep it to the three fields; {extra} would be required too",
            zh=f"只保留这三个字段；{extra} 也会变成必填字段",
        )
        reply = {"reference_key_fact": "port 7420", "answer_says": "port 8080", "complete": "no"}
        verdict = invoke_structured(ScriptedChatModel(responses=[reply]), schema, "Does the answer state the key fact?")
        expect(verdict.complete == "no" and verdict.answer_says == "port 8080",
               "a model's function call should parse into your schema",
               zh="模型的函数调用应该能解析成你的 schema")  # fmt: skip

    return run_check("Exercise 2 (completeness verdict)", check, zh="练习 2（完整性判决）")
