"""Checks for notebook 02 (retrieval tricks). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

from __future__ import annotations

import math
import random

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from pydantic import Field

from checks import CheckResult, Hint, expect, run_check


def _docs(*texts: str) -> list[Document]:
    return [Document(page_content=t, metadata={"chunk_id": t}) for t in texts]


def _texts(documents) -> list[str]:
    return [d.page_content for d in documents]


def _ensemble_order(lists: list[list[Document]], weights: list[float], c: int = 60) -> list[str]:
    from langchain_classic.retrievers import EnsembleRetriever

    ensemble = EnsembleRetriever(retrievers=[_Recording() for _ in lists], weights=weights, c=c)
    return _texts(ensemble.weighted_reciprocal_rank(lists))


def check_rrf(rrf) -> CheckResult:
    """Exercise 1: weighted reciprocal rank fusion by hand, compared with LangChain's EnsembleRetriever."""

    def check():
        expect(
            callable(rrf),
            "define a function `rrf(ranked_lists, weights=None, c=60)`",
            zh="定义一个函数 `rrf(ranked_lists, weights=None, c=60)`",
        )
        a, b, c, d = _docs("a", "b", "c", "d")
        fused = rrf([[a, b, c], [c, a, d]], [0.5, 0.5])
        expect(
            fused is not None,
            "your function returns None — did you forget `return`?",
            zh="你的函数返回了 None——是不是忘了写 `return`？",
        )
        fused = list(fused)
        expect(
            all(isinstance(x, Document) for x in fused),
            "return the Documents themselves, best first — not (document, score) pairs "
            "(put the score in a copy's metadata if you want to keep it)",
            zh="返回 Document 本身，最好的在前——不是 (document, score) 对（想保留分数，就放进一个副本的元数据里）",
        )
        expect(
            len(_texts(fused)) == len(set(_texts(fused))),
            "each document must appear once: add up its scores over the lists",
            zh="每个文档只能出现一次：把它在各个列表里的分数加起来",
        )
        expect(
            _texts(fused) == _ensemble_order([[a, b, c], [c, a, d]], [0.5, 0.5]),
            f"for lists [a, b, c] and [c, a, d] you returned {_texts(fused)}; expected "
            f"{_ensemble_order([[a, b, c], [c, a, d]], [0.5, 0.5])}. Each list adds weight / (c + rank), rank from 1",
            zh=f"对列表 [a, b, c] 和 [c, a, d]，你返回了 {_texts(fused)}；应为 "
            f"{_ensemble_order([[a, b, c], [c, a, d]], [0.5, 0.5])}。每个列表贡献 weight / (c + rank)，rank 从 1 开始",
        )
        expect(
            _texts(rrf([[a, b, c], [c, a, d]])) == _texts(fused),
            "with weights=None every list should get the same weight (1 / number of lists)",
            zh="weights=None 时每个列表的权重应该相同（1 / 列表个数）",
        )
        lists = [_docs("a", "x1", "x2", "x3", "b"), _docs("y1", "y2", "y3", "y4", "b")]
        expect(
            _texts(rrf(lists, [0.5, 0.5], c=0))[0] == "a" and _texts(rrf(lists, [0.5, 0.5], c=60))[0] == "b",
            "use the constant c: with c=0 a single first place wins, with c=60 two fifth places beat it",
            zh="用上常数 c：c=0 时单独一个第一名胜出，c=60 时两个第五名胜过它",
        )
        rng = random.Random(2)
        pool = _docs(*"abcdefgh")
        for _ in range(20):
            lists = [rng.sample(pool, 5) for _ in range(3)]
            weights = [rng.uniform(0.1, 1.0) for _ in lists]
            expected = _ensemble_order(lists, weights)
            got = _texts(rrf(lists, weights))
            expect(
                got == expected,
                f"on random lists with weights {[round(w, 2) for w in weights]} you returned {got}, "
                f"EnsembleRetriever returns {expected}: multiply each 1 / (c + rank) by its list's weight",
                zh=f"在权重为 {[round(w, 2) for w in weights]} 的随机列表上你返回了 {got}，"
                f"EnsembleRetriever 返回 {expected}：把每个 1 / (c + rank) 乘以它所在列表的权重",
            )

    return run_check("Exercise 1 (reciprocal rank fusion)", check, zh="练习 1（倒数排名融合）")


def check_yes_probability(yes_probability) -> CheckResult:
    """Exercise 2: P(yes) / (P(yes) + P(no)) from one token's top log-probabilities."""

    def alternatives(**probabilities):
        return [{"token": token, "logprob": math.log(p)} for token, p in probabilities.items()]

    def check():
        expect(
            callable(yes_probability),
            "define a function `yes_probability(top_logprobs)`",
            zh="定义一个函数 `yes_probability(top_logprobs)`",
        )
        result = yes_probability(alternatives(yes=0.6, no=0.2))
        expect(
            result is not None,
            "for yes 0.6 / no 0.2 your function returned None — did you forget `return`?",
            zh="对 yes 0.6 / no 0.2，你的函数返回了 None——是不是忘了写 `return`？",
        )
        expect(
            math.isclose(result, 0.75, abs_tol=1e-9),
            f"yes 0.6, no 0.2: you returned {result}, expected 0.75 — turn log-probabilities into probabilities "
            "with math.exp, then divide P(yes) by P(yes) + P(no)",
            zh=f"yes 0.6、no 0.2：你返回了 {result}，应为 0.75——先用 math.exp 把对数概率变成概率，"
            "再用 P(yes) 除以 P(yes) + P(no)",
        )
        result = yes_probability(alternatives(Yes=0.3, yes=0.1, **{" No": 0.2, "maybe": 0.3}))
        expect(
            result is not None and math.isclose(result, 0.4 / 0.6, abs_tol=1e-9),
            f"'Yes' 0.3, 'yes' 0.1, ' No' 0.2, 'maybe' 0.3: you returned {result}, expected {0.4 / 0.6:.4f} — "
            "compare tokens after .strip().lower(), add up every spelling, and ignore other tokens",
            zh=f"'Yes' 0.3、'yes' 0.1、' No' 0.2、'maybe' 0.3：你返回了 {result}，应为 {0.4 / 0.6:.4f}——"
            "比较 .strip().lower() 之后的 token，把每种写法都加起来，并忽略其他 token",
        )
        expect(
            yes_probability(alternatives(maybe=0.5, perhaps=0.3)) is None,
            "when neither yes nor no is among the alternatives, return None (there is nothing to compare)",
            zh="yes 和 no 都不在候选里时，返回 None（没有可比较的东西）",
        )

    return run_check("Exercise 2 (relevance from log-probabilities)", check, zh="练习 2（从对数概率得到相关性）")


class _Recording(BaseRetriever):
    """A retriever that records its queries and returns one document per query."""

    queries: list[str] = Field(default_factory=list)

    def _get_relevant_documents(self, query, *, run_manager):
        self.queries.append(query)
        return _docs(f"found with: {query}")


def check_hyde(make_hyde) -> CheckResult:
    """Exercise 3: HyDE as a Runnable: question → hypothetical answer → retriever."""

    def check():
        from lessons.core.fakes import ScriptedChatModel

        expect(
            callable(make_hyde),
            "define a function `make_hyde(llm, retriever)` that returns a Runnable",
            zh="定义一个返回 Runnable 的函数 `make_hyde(llm, retriever)`",
        )
        passage = "Atlas Server listens on port 7420 by default."
        llm, retriever = ScriptedChatModel(responses=[passage]), _Recording()
        hyde = make_hyde(llm, retriever)
        expect(
            hyde is not None,
            "make_hyde returned None — return the chain you built with `|`",
            zh="make_hyde 返回了 None——把你用 `|` 组合出的链返回出来",
        )
        expect(
            isinstance(hyde, Runnable),
            "return a LangChain Runnable: compose prompt | llm | parser | retriever with `|`",
            zh="返回一个 LangChain Runnable：用 `|` 组合 prompt | llm | parser | retriever",
        )
        result = hyde.invoke("Which port does Atlas Server use?")
        expect(
            len(llm.calls) == 1,
            f"the chain should call the model exactly once per question, it called it {len(llm.calls)} times",
            zh=f"这条链每个问题应该正好调用模型一次，它调用了 {len(llm.calls)} 次",
        )
        prompt = " ".join(str(m.content) for m in llm.calls[0]["messages"])
        expect(
            "Which port does Atlas Server use?" in prompt,
            "the model never saw the question: fill the prompt with {question}",
            zh="模型根本没看到问题：用 {question} 填充提示",
        )
        expect(
            retriever.queries == [passage],
            f"the retriever was asked {retriever.queries}; it should search with the model's answer "
            "(add StrOutputParser() after the model so the retriever gets text)",
            zh=f"检索器收到的查询是 {retriever.queries}；它应该用模型的回答去检索"
            "（在模型后面加上 StrOutputParser()，让检索器拿到文本）",
        )
        expect(
            isinstance(result, list) and all(isinstance(d, Document) for d in result),
            "the chain should end with the retriever, so it returns a list of Documents",
            zh="这条链应该以检索器结尾，这样它返回的是一个 Document 列表",
        )
        try:
            batch = make_hyde(ScriptedChatModel(default="a passage"), _Recording()).batch(["q1", "q2"])
        except Exception as error:  # noqa: BLE001 - whatever the learner's chain raised becomes the hint
            raise Hint(
                f"a Runnable chain can answer a batch of questions, yours raised {error!r}",
                zh=f"Runnable 链可以成批回答问题，你的链抛出了 {error!r}",
            ) from None
        expect(
            len(batch) == 2,
            "a batch of two questions should give two result lists",
            zh="两个问题的批次应该得到两个结果列表",
        )

    return run_check("Exercise 3 (HyDE as a Runnable)", check, zh="练习 3（把 HyDE 写成 Runnable）")
