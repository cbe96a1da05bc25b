"""Checks for notebook 02 (retrieval tricks)."""

from __future__ import annotations

import math
import random

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable

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
        expect(callable(rrf), "define a function `rrf(ranked_lists, weights=None, c=60)`")
        a, b, c, d = _docs("a", "b", "c", "d")
        fused = rrf([[a, b, c], [c, a, d]], [0.5, 0.5])
        expect(fused is not None, "your function returns None — did you forget `return`?")
        fused = list(fused)
        expect(
            all(isinstance(x, Document) for x in fused),
            "return the Documents themselves, best first — not (document, score) pairs "
            "(put the score in a copy's metadata if you want to keep it)",
        )
        expect(len(_texts(fused)) == len(set(_texts(fused))), "each document must appear once: add up its scores over the lists")
        expect(
            _texts(fused) == _ensemble_order([[a, b, c], [c, a, d]], [0.5, 0.5]),
            f"for lists [a, b, c] and [c, a, d] you returned {_texts(fused)}; expected "
            f"{_ensemble_order([[a, b, c], [c, a, d]], [0.5, 0.5])}. Each list adds weight / (c + rank), rank from 1",
        )
        expect(
            _texts(rrf([[a, b, c], [c, a, d]])) == _texts(fused),
            "with weights=None every list should get the same weight (1 / number of lists)",
        )
        lists = [_docs("a", "x1", "x2", "x3", "b"), _docs("y1", "y2", "y3", "y4", "b")]
        expect(
            _texts(rrf(lists, [0.5, 0.5], c=0))[0] == "a" and _texts(rrf(lists, [0.5, 0.5], c=60))[0] == "b",
            "use the constant c: with c=0 a single first place wins, with c=60 two fifth places beat it",
        )
        rng = random.Random(2)
        pool = _docs(*"abcdefgh")
        for _ in range(20):
            lists = [rng.sample(pool, 5) for _ in range(3)]
            weights = [rng.uniform(0.1, 1.0) for _ in lists]
            expected = _ensemble_order(lists, weights)
            got = _texts(rrf(lists, weights))
            expect(got == expected, f"on random lists with weights {[round(w, 2) for w in weights]} you returned {got}, "
                                    f"EnsembleRetriever returns {expected}: multiply each 1 / (c + rank) by its list's weight")

    return run_check("Exercise 1 (reciprocal rank fusion)", check)


def check_yes_probability(yes_probability) -> CheckResult:
    """Exercise 2: P(yes) / (P(yes) + P(no)) from one token's top log-probabilities."""

    def alternatives(**probabilities):
        return [{"token": token, "logprob": math.log(p)} for token, p in probabilities.items()]

    def check():
        expect(callable(yes_probability), "define a function `yes_probability(top_logprobs)`")
        result = yes_probability(alternatives(yes=0.6, no=0.2))
        expect(result is not None, "for yes 0.6 / no 0.2 your function returned None — did you forget `return`?")
        expect(
            math.isclose(result, 0.75, abs_tol=1e-9),
            f"yes 0.6, no 0.2: you returned {result}, expected 0.75 — turn log-probabilities into probabilities "
            "with math.exp, then divide P(yes) by P(yes) + P(no)",
        )
        result = yes_probability(alternatives(Yes=0.3, yes=0.1, **{" No": 0.2, "maybe": 0.3}))
        expect(
            result is not None and math.isclose(result, 0.4 / 0.6, abs_tol=1e-9),
            f"'Yes' 0.3, 'yes' 0.1, ' No' 0.2, 'maybe' 0.3: you returned {result}, expected {0.4 / 0.6:.4f} — "
            "compare tokens after .strip().lower(), add up every spelling, and ignore other tokens",
        )
        expect(
            yes_probability(alternatives(maybe=0.5, perhaps=0.3)) is None,
            "when neither yes nor no is among the alternatives, return None (there is nothing to compare)",
        )

    return run_check("Exercise 2 (relevance from log-probabilities)", check)


class _Recording(BaseRetriever):
    """A retriever that records its queries and returns one document per query."""

    queries: list[str] = []

    def _get_relevant_documents(self, query, *, run_manager):
        self.queries.append(query)
        return _docs(f"found with: {query}")


def check_hyde(make_hyde) -> CheckResult:
    """Exercise 3: HyDE as a Runnable: question → hypothetical answer → retriever."""

    def check():
        from lessons.fakes import ScriptedChatModel

        expect(callable(make_hyde), "define a function `make_hyde(llm, retriever)` that returns a Runnable")
        passage = "Atlas Server listens on port 7420 by default."
        llm, retriever = ScriptedChatModel(responses=[passage]), _Recording()
        hyde = make_hyde(llm, retriever)
        expect(hyde is not None, "make_hyde returned None — return the chain you built with `|`")
        expect(isinstance(hyde, Runnable), "return a LangChain Runnable: compose prompt | llm | parser | retriever with `|`")
        result = hyde.invoke("Which port does Atlas Server use?")
        expect(len(llm.calls) == 1, f"the chain should call the model exactly once per question, it called it {len(llm.calls)} times")
        prompt = " ".join(str(m.content) for m in llm.calls[0]["messages"])
        expect("Which port does Atlas Server use?" in prompt, "the model never saw the question: fill the prompt with {question}")
        expect(
            retriever.queries == [passage],
            f"the retriever was asked {retriever.queries}; it should search with the model's answer "
            "(add StrOutputParser() after the model so the retriever gets text)",
        )
        expect(
            isinstance(result, list) and all(isinstance(d, Document) for d in result),
            "the chain should end with the retriever, so it returns a list of Documents",
        )
        try:
            batch = make_hyde(ScriptedChatModel(default="a passage"), _Recording()).batch(["q1", "q2"])
        except Exception as error:
            raise Hint(f"a Runnable chain can answer a batch of questions, yours raised {error!r}") from None
        expect(len(batch) == 2, "a batch of two questions should give two result lists")

    return run_check("Exercise 3 (HyDE as a Runnable)", check)
