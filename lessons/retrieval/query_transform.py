"""Change the query before retrieving: HyDE, multi-query expansion, step-back prompting.

Introduced in notebook 02 (retrieval tricks). Each technique is a LangChain Runnable from a
question to ranked `Document`s, so it is evaluated exactly like a plain retriever.

- HyDE: the model writes a short hypothetical answer; the *answer* is embedded and searched, since
  it looks more like the passages than the question does. Its facts may be invented: only its
  wording and vocabulary are used.
- Multi-query: the model rewrites the question three ways; each rewrite and the original are
  searched and the lists are fused by reciprocal rank fusion (LangChain's `MultiQueryRetriever`
  only concatenates them, which lets the first rewrite decide the top of the list). Rewrites in
  another language than the question are dropped, and the original keeps half the weight.
- Step-back: the model asks the more general question behind a specific one; both are searched
  and fused, so the passage that explains the principle can come back too.
"""

from __future__ import annotations

from langchain_classic.retrievers import MultiQueryRetriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import BaseModel, Field

from lessons.core.structured import invoke_structured
from lessons.retrieval.retrievers import reciprocal_rank_fusion
from lessons.text.language import detect_language

HYDE_MAX_TOKENS = 120

HYDE_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            (
                "You write short passages for a company knowledge base about the Atlas search product, its "
                "releases and the company's policies. Write in the language of the question."
            ),
        ),
        ("human", "Write a passage of two or three sentences that answers this question:\n{question}"),
    ]
)

MULTI_QUERY_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            (
                "You help a search engine. Rewrite the user's question as three different search queries that could "
                "match the passage answering it: use other words, synonyms and the technical terms a manual would use. "
                "Write them in the language of the question: a Chinese question gets Chinese queries."
            ),
        ),
        ("human", "How long do I have to finish the security training after I start?"),
        (
            "ai",
            (
                "security awareness training deadline for new employees\n"
                "onboarding security course completion period\nmandatory training within days of joining"
            ),
        ),
        ("human", "新员工入职后多久要完成安全培训？"),
        ("ai", "新员工 安全培训 完成期限\n入职 数据安全培训 时间要求\n安全意识培训 入职后 天数"),
        ("human", "{question}"),
    ]
)

STEP_BACK_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            (
                "You help a search engine. Given a specific question, write the broader background question a reader "
                "would look up first: the general topic, policy or mechanism behind it. The broader question is shorter "
                "than the original and leaves out its specific details. Write it in the language of the question."
            ),
        ),
        ("human", "Can a user with the Curator role view the audit log?"),
        ("ai", "What can each user role do in Atlas?"),
        ("human", "江南物流的新坐席上线后多久能独立上岗？"),
        ("ai", "Atlas 在客户案例中带来了哪些效果？"),
        ("human", "{question}"),
    ]
)


class SearchQueries(BaseModel):
    """Three rewrites of a question for a search engine."""

    queries: list[str] = Field(min_length=3, max_length=3, description="three different search queries")


class StepBackQuestion(BaseModel):
    """The more general question behind a specific one."""

    question: str = Field(description="the more general question")


def hypothetical_answer(llm: BaseChatModel, max_tokens: int = HYDE_MAX_TOKENS) -> Runnable:
    """Question → a short hypothetical answer passage written by the model (HyDE's first step)."""
    return HYDE_PROMPT | llm.bind(max_tokens=max_tokens) | StrOutputParser()


def hyde_retriever(llm: BaseChatModel, retriever: BaseRetriever, max_tokens: int = HYDE_MAX_TOKENS) -> Runnable:
    """HyDE: search with the model's hypothetical answer instead of the question."""
    return (hypothetical_answer(llm, max_tokens) | retriever).with_config(run_name="HyDE")


def rewrite_queries(llm: BaseChatModel) -> Runnable:
    """Question → three search rewrites (a typed, grammar-constrained list)."""

    def rewrite(inputs: dict, config: RunnableConfig) -> list[str]:
        prompt = MULTI_QUERY_PROMPT.invoke(inputs)
        return invoke_structured(llm, SearchQueries, prompt, config=config).queries

    return RunnableLambda(rewrite, name="rewrite_queries")


def step_back_question(llm: BaseChatModel) -> Runnable:
    """Question → [the more general question behind it]."""

    def step_back(inputs: dict, config: RunnableConfig) -> list[str]:
        prompt = STEP_BACK_PROMPT.invoke(inputs)
        return [invoke_structured(llm, StepBackQuestion, prompt, config=config).question]

    return RunnableLambda(step_back, name="step_back_question")


def usable_rewrites(question: str, rewrites: list[str]) -> list[str]:
    """The rewrites worth searching: not empty, not the question again, and in the question's language.

    A small model often answers a Chinese question's rewrite request in English; an English query
    against Chinese passages finds little, and it would outvote the original in the fusion.
    """
    language = detect_language(question)
    kept: list[str] = []
    for rewrite in (r.strip() for r in rewrites):
        if rewrite and rewrite != question.strip() and rewrite not in kept and detect_language(rewrite) == language:
            kept.append(rewrite)
    return kept


class FusedMultiQueryRetriever(MultiQueryRetriever):
    """`MultiQueryRetriever` that also searches the original question and fuses the lists by RRF.

    The original question gets `original_weight` of the fusion (it is the one query known to be
    right); the usable rewrites share the rest.
    """

    include_original: bool = True
    original_weight: float = 0.5
    verbose: bool = False

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        rewrites = usable_rewrites(query, self.generate_queries(query, run_manager))
        queries = [query, *rewrites] if self.include_original else rewrites or [query]
        weights = _fusion_weights(len(rewrites), self.original_weight) if self.include_original else None
        ranked_lists = [self.retriever.invoke(q, config={"callbacks": run_manager.get_child()}) for q in queries]
        return reciprocal_rank_fusion(ranked_lists, weights)


def _fusion_weights(n_rewrites: int, original_weight: float) -> list[float]:
    """The original's weight, then an equal share of the rest for each rewrite (all of it when there are none)."""
    if n_rewrites == 0:
        return [1.0]
    return [original_weight] + [(1 - original_weight) / n_rewrites] * n_rewrites


def multi_query_retriever(llm: BaseChatModel, retriever: BaseRetriever) -> FusedMultiQueryRetriever:
    """Multi-query expansion: the question and three rewrites, searched and fused."""
    return FusedMultiQueryRetriever(retriever=retriever, llm_chain=rewrite_queries(llm))


def step_back_retriever(llm: BaseChatModel, retriever: BaseRetriever) -> FusedMultiQueryRetriever:
    """Step-back prompting: the question and its more general version, searched and fused."""
    return FusedMultiQueryRetriever(retriever=retriever, llm_chain=step_back_question(llm))
