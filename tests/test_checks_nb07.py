"""Notebook 07's checks pass on the course's own answers and fail on blanks and near misses."""

from langchain_core.documents import Document

from checks.nb07 import check_read_page, check_standalone_question
from lessons.agents.deep_research import Observation, read_page, standalone_question


def test_the_read_page_check():
    assert check_read_page(read_page)
    assert not check_read_page(lambda pages, source_id, page_index, max_chars=1500: None)

    def raises_on_a_bad_page(pages, source_id, page_index, max_chars=1500):
        page = pages.read(source_id, page_index)
        return Observation(
            "read_page",
            "r",
            (Document(page.text[:max_chars], metadata={"source": page.source, "page": page.index, "kind": "page"}),),
        )

    def never_cuts(pages, source_id, page_index, max_chars=1500):
        return read_page(pages, source_id, page_index, max_chars=10_000)

    def hides_the_reason(pages, source_id, page_index, max_chars=1500):
        seen = read_page(pages, source_id, page_index, max_chars)
        return Observation("read_page", seen.header, seen.evidence, "page not found" if seen.error else "")

    assert not check_read_page(raises_on_a_bad_page)
    assert not check_read_page(never_cuts)
    assert not check_read_page(hides_the_reason)


def test_the_standalone_question_check():
    assert check_standalone_question(standalone_question)
    assert not check_standalone_question(lambda model, history, user_turn: None)

    def always_asks(model, history, user_turn):
        return standalone_question(model, history or [("user", "")], user_turn)

    def ignores_the_history(model, history, user_turn):
        return standalone_question(model, [("user", "?")], user_turn) if history else user_turn

    def no_fallback(model, history, user_turn):
        from lessons.agents.deep_research import STANDALONE_PROMPT, StandaloneQuestion, format_history
        from lessons.core.structured import invoke_structured

        if not history:
            return user_turn
        return invoke_structured(
            model, StandaloneQuestion, STANDALONE_PROMPT.format(history=format_history(history), turn=user_turn)
        ).question

    assert not check_standalone_question(always_asks)
    assert not check_standalone_question(ignores_the_history)
    assert not check_standalone_question(no_fallback)
