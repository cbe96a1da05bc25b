"""Reranking with the chat model itself: a yes/no relevance judge read from token log-probabilities.

Introduced in notebook 02 (retrieval tricks). No cross-encoder ships its weights on PyPI, so offline
the reranker is the chat model, used the way LLM rerankers such as Qwen3-Reranker score: ask "does
this passage answer the question? yes or no", generate one token, and read how likely "yes" was
against "no" from the returned `top_logprobs`. The probability ranks; the text is never parsed.

- `yes_probability(top_logprobs)`: P(yes) / (P(yes) + P(no)) from one token's alternatives.
- `LLMRelevanceScorer`: a LangChain `BaseCrossEncoder` backed by a chat model, so it plugs into
  LangChain's `CrossEncoderReranker` exactly where a bge-reranker would.
- `ScoredCrossEncoderReranker`: `CrossEncoderReranker` that keeps each score in the metadata.
- `cross_encoder_reranker(model_folder)`: the same reranker with a real cross-encoder
  (`HuggingFaceCrossEncoder`) for learners who have one on disk (needs sentence-transformers).
- `listwise_reranker(llm)`: LangChain's `LLMListwiseRerank` (one call orders all candidates), made
  tolerant of the invalid ids a small model returns.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_classic.retrievers.document_compressors import CrossEncoderReranker, LLMListwiseRerank
from langchain_core.callbacks import Callbacks
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda
from pydantic import BaseModel, Field

from lessons.retrieval import reciprocal_rank_fusion, with_score
from lessons.structured import invoke_structured

YES, NO = "yes", "no"
# How each answer may be spelled as the first generated token (compared after strip + lower-case).
ANSWER_TOKENS = {YES: {"yes", "是"}, NO: {"no", "否", "不"}}

RELEVANCE_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "You judge search results. Reply with one word: yes or no."),
        (
            "human",
            "Question: {question}\n\nSearch result:\n{passage}\n\nDoes this search result help answer the question above?",
        ),
    ]
)


# The same question asked in Chinese, for Chinese questions (introduced in notebook 04). With the 1.5B
# offline model, the English wording separated answerable from out-of-KB Chinese questions with an AUC
# of 0.78 (best P(yes) of the top 3 chunks, 48 gold questions); this one with 0.89. It asks whether the
# passage *states the specific information asked for* — a near miss about the same customer is not enough.
RELEVANCE_PROMPT_ZH = ChatPromptTemplate.from_messages(
    [
        ("system", "你负责评判搜索结果。只回答一个词：yes 或 no。"),
        ("human", "问题：{question}\n\n搜索结果：\n{passage}\n\n这段搜索结果是否写明了上述问题所问的具体信息？"),
    ]
)
RELEVANCE_PROMPTS = {"en": RELEVANCE_PROMPT, "zh": RELEVANCE_PROMPT_ZH}


def yes_probability(top_logprobs: Sequence[Mapping[str, Any]]) -> float | None:
    """P(yes) / (P(yes) + P(no)) from one token's `top_logprobs`; None when neither answer is among them."""
    mass = {YES: 0.0, NO: 0.0}
    for candidate in top_logprobs:
        token = str(candidate["token"]).strip().lower()
        for answer, spellings in ANSWER_TOKENS.items():
            if token in spellings:
                mass[answer] += math.exp(candidate["logprob"])
    total = mass[YES] + mass[NO]
    return mass[YES] / total if total > 0 else None


def _first_token_alternatives(message: AIMessage) -> list[Mapping[str, Any]] | None:
    """The `top_logprobs` of the first generated token, or None when the provider returned none."""
    content = (message.response_metadata.get("logprobs") or {}).get("content") or []
    return content[0].get("top_logprobs") if content else None


def _score_from_text(message: AIMessage) -> float:
    """Fallback when a provider gives no log-probabilities: 1.0 for a yes, 0.0 otherwise."""
    return 1.0 if str(message.content).strip().lower().startswith(tuple(ANSWER_TOKENS[YES])) else 0.0


class LLMRelevanceScorer(BaseCrossEncoder):
    """A cross-encoder made of a chat model: score = P(yes) that a passage answers a question.

    Passages are cut to `max_chars` (prompt reading time is most of the cost). The question comes
    before the passage in the prompt, so a server that caches prompt prefixes (llama.cpp does)
    reads the instructions and the question only once per question.
    """

    def __init__(
        self,
        llm: BaseChatModel,
        prompt: ChatPromptTemplate = RELEVANCE_PROMPT,
        max_chars: int = 1500,
        top_logprobs: int = 10,
        max_concurrency: int = 4,
    ):
        self.llm = llm
        self.prompt = prompt
        self.max_chars = max_chars
        self.judge = llm.bind(max_tokens=1, logprobs=True, top_logprobs=top_logprobs)
        self.max_concurrency = max_concurrency
        self.used_text_fallback = False

    def score(self, text_pairs: list[tuple[str, str]], callbacks: Callbacks = None) -> list[float]:
        """One relevance probability per (question, passage) pair, in order."""
        prompts = [self.prompt.invoke({"question": q, "passage": p[: self.max_chars]}) for q, p in text_pairs]
        config = {"callbacks": callbacks, "max_concurrency": self.max_concurrency}
        return [self._score(message) for message in self.judge.batch(prompts, config=config)]

    def _score(self, message: AIMessage) -> float:
        alternatives = _first_token_alternatives(message)
        probability = yes_probability(alternatives) if alternatives else None
        if probability is not None:
            return probability
        if alternatives is None and not self.used_text_fallback:
            self.used_text_fallback = True
            warnings.warn(
                "the chat model returned no log-probabilities: relevance scores fall back to 1.0 (yes) or "
                "0.0 (no) read from the reply, so ties are broken by the first-stage order",
                stacklevel=3,
            )
        return _score_from_text(message)


def score_pairs(model: BaseCrossEncoder, text_pairs: list[tuple[str, str]], callbacks: Callbacks = None) -> list[float]:
    """`model.score(text_pairs)`, passing LangChain callbacks on to chat-model scorers."""
    if isinstance(model, LLMRelevanceScorer):
        return model.score(text_pairs, callbacks=callbacks)
    return [float(score) for score in model.score(text_pairs)]


class ScoredCrossEncoderReranker(CrossEncoderReranker):
    """LangChain's `CrossEncoderReranker` whose results keep their relevance score in metadata.

    With `first_stage_weight` > 0 the final order is a reciprocal rank fusion of the incoming order
    (that weight) and the reranker's order (the rest), and `score` holds the fused score: a weak
    reranker then adjusts the first stage instead of overruling it. Python's sort is stable:
    candidates with equal scores keep the incoming order.
    """

    first_stage_weight: float = 0.0

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        scores = score_pairs(self.model, [(query, document.page_content) for document in documents], callbacks)
        ranked = [with_score(d, s) for d, s in sorted(zip(documents, scores), key=lambda pair: pair[1], reverse=True)]
        if self.first_stage_weight > 0:
            weights = [self.first_stage_weight, 1 - self.first_stage_weight]
            ranked = reciprocal_rank_fusion([list(documents), ranked], weights, id_key=None)
        return ranked[: self.top_n]


def llm_reranker(
    llm: BaseChatModel, top_n: int = 10, max_chars: int = 1500, first_stage_weight: float = 0.0
) -> ScoredCrossEncoderReranker:
    """Pointwise reranking by the chat model's P(yes), keeping the best `top_n` (optionally blended, see above)."""
    return ScoredCrossEncoderReranker(
        model=LLMRelevanceScorer(llm, max_chars=max_chars), top_n=top_n, first_stage_weight=first_stage_weight
    )


def cross_encoder_reranker(model_folder: str | Path, top_n: int = 10) -> ScoredCrossEncoderReranker:
    """Rerank with a real cross-encoder from a local folder (e.g. a downloaded bge-reranker-v2-m3).

    Not run offline in the course: it needs `pip install sentence-transformers` (which pulls in
    torch, ~2 GB) and the model's files, which no PyPI package ships.
    """
    folder = Path(model_folder).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no cross-encoder at {folder}: download one first, e.g. `huggingface-cli download "
            f"BAAI/bge-reranker-v2-m3 --local-dir {folder}` (needs internet)"
        )
    try:
        from langchain_community.cross_encoders import HuggingFaceCrossEncoder

        model = HuggingFaceCrossEncoder(model_name=str(folder), model_kwargs={"device": "cpu"})
    except ImportError as error:
        raise ImportError(
            "a cross-encoder needs sentence-transformers (and torch): `pip install sentence-transformers`"
        ) from error
    return ScoredCrossEncoderReranker(model=model, top_n=top_n)


class RankedDocuments(BaseModel):
    """The candidates' ids, from most to least relevant to the question."""

    ranked_document_ids: list[int] = Field(description="the integer ids of the documents, most relevant first")


def order_by_ids(documents: Sequence[Document], ids: Sequence[int]) -> list[Document]:
    """`documents` in the order of `ids`; ids that do not exist or repeat are ignored, unnamed documents follow in order."""
    valid = list(dict.fromkeys(i for i in ids if 0 <= i < len(documents)))
    return [documents[i] for i in valid] + [d for i, d in enumerate(documents) if i not in valid]


def _listwise_prompt(documents: Sequence[Document], query: str) -> list[tuple[str, str]]:
    listing = "\n\n".join(f"Document ID: {i}\n```{d.page_content}```" for i, d in enumerate(documents))
    ids = f"Document ID: 0, ..., Document ID: {len(documents) - 1}"
    return [("system", f"{listing}\n\nDocuments = [{ids}]\n\nSort the Documents by their relevance to the Query."),
            ("human", query)]  # fmt: skip


def listwise_reranker(llm: BaseChatModel, top_n: int = 10) -> LLMListwiseRerank:
    """LangChain's `LLMListwiseRerank` (one call orders all candidates), tolerant of invalid ids.

    `LLMListwiseRerank.from_llm` raises IndexError when the model names a document that does not
    exist, which a small model does; here such ids are dropped and unnamed documents keep their order.
    """

    def rank(inputs: dict, config: RunnableConfig) -> list[Document]:
        documents, query = inputs["documents"], inputs["query"]
        answer = invoke_structured(llm, RankedDocuments, _listwise_prompt(documents, query), config=config)
        return order_by_ids(documents, answer.ranked_document_ids)

    return LLMListwiseRerank(reranker=RunnableLambda(rank, name="listwise_rank"), top_n=top_n)
