"""HyDE, multi-query and step-back retrievers, against a scripted model and a recording retriever."""

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from lessons.core.fakes import ScriptedChatModel
from lessons.retrieval.query_transform import hyde_retriever, multi_query_retriever, step_back_retriever
from lessons.retrieval.retrievers import SCORE


class RecordingRetriever(BaseRetriever):
    """Returns a fixed ranked list per query (or a default list) and records every query."""

    results: dict[str, list[str]] = Field(default_factory=dict)
    queries: list[str] = Field(default_factory=list)

    def _get_relevant_documents(self, query, *, run_manager):
        self.queries.append(query)
        texts = self.results.get(query, ["default"])
        return [Document(page_content=t, metadata={"chunk_id": t}) for t in texts]


def test_hyde_searches_with_the_hypothetical_answer_not_the_question():
    llm = ScriptedChatModel(responses=["Atlas listens on port 7420."])
    retriever = RecordingRetriever(results={"Atlas listens on port 7420.": ["port chunk"]})
    results = hyde_retriever(llm, retriever).invoke("Which port?")
    assert retriever.queries == ["Atlas listens on port 7420."]
    assert [d.page_content for d in results] == ["port chunk"]
    assert "Which port?" in llm.calls[0]["messages"][-1].content


def test_multi_query_searches_the_question_and_three_rewrites_and_fuses_them():
    llm = ScriptedChatModel(responses=[{"queries": ["rewrite one", "rewrite two", "rewrite three"]}])
    retriever = RecordingRetriever(
        results={"q": ["a", "b"], "rewrite one": ["b", "c"], "rewrite two": ["b"], "rewrite three": ["d"]}
    )
    results = multi_query_retriever(llm, retriever).invoke("q")
    assert retriever.queries == ["q", "rewrite one", "rewrite two", "rewrite three"]
    assert results[0].page_content == "b"  # found by three of the four queries
    assert {d.page_content for d in results} == {"a", "b", "c", "d"}
    assert all(SCORE in d.metadata for d in results)


def test_multi_query_drops_empty_and_repeated_rewrites():
    llm = ScriptedChatModel(responses=[{"queries": ["q", " ", "other"]}])
    retriever = RecordingRetriever()
    multi_query_retriever(llm, retriever).invoke("q")
    assert retriever.queries == ["q", "other"]


def test_step_back_searches_the_question_and_the_general_question():
    llm = ScriptedChatModel(responses=[{"question": "What can each role do?"}])
    retriever = RecordingRetriever(
        results={"Can a Curator see the audit log?": ["x"], "What can each role do?": ["roles"]}
    )
    results = step_back_retriever(llm, retriever).invoke("Can a Curator see the audit log?")
    assert retriever.queries == ["Can a Curator see the audit log?", "What can each role do?"]
    assert [d.page_content for d in results] == ["x", "roles"]


def test_rewrites_in_another_language_or_repeating_the_question_are_not_searched():
    from lessons.retrieval.query_transform import usable_rewrites

    question = "新员工入职后多久要完成安全培训？"
    rewrites = ["How long is the training deadline?", "安全培训 完成期限", question, "安全培训 完成期限", ""]
    assert usable_rewrites(question, rewrites) == ["安全培训 完成期限"]


def test_the_original_question_keeps_half_the_weight_against_the_rewrites():
    llm = ScriptedChatModel(responses=[{"queries": ["r1", "r2", "r3"]}])
    retriever = RecordingRetriever(results={"q": ["a"], "r1": ["b"], "r2": ["b"], "r3": ["c"]})
    results = multi_query_retriever(llm, retriever).invoke("q")
    assert [d.page_content for d in results] == ["a", "b", "c"]  # 0.5/61 beats 2 × (0.5/3)/61
