"""Checks for notebook 07 (deep-research agent)."""

from __future__ import annotations

from checks import CheckResult, expect, run_check


def check_read_page(read_page) -> CheckResult:
    """Exercise 1: the `read_page` tool — the whole page (cut to `max_chars`), or an error as an observation."""

    def check():
        from lessons.deep_research import Observation, Page, PageStore

        pages = PageStore([
            Page("handbook.docx", 1, "Annual leave", "Lisbon: 25 days. Hangzhou: 20 days."),
            Page("handbook.docx", 2, "Expenses", "Hotel: up to €140 per night. " * 10),
            Page("whitepaper.pdf", 6, "page 6", "Team tier: €45 per user per month."),
        ])
        good = read_page(pages, "whitepaper.pdf", 6)
        expect(isinstance(good, Observation), f"return an Observation (lessons.deep_research.Observation), not {type(good).__name__}")
        expect(not good.error and len(good.evidence) == 1,
               "a page that exists gives an Observation with no error and one Document in `evidence`")
        page = good.evidence[0]
        expect(page.page_content == "Team tier: €45 per user per month.", "the Document's text is the whole page: page.text")
        expect(page.metadata.get("source") == "whitepaper.pdf" and page.metadata.get("page") == 6,
               "put the page's source and index in the metadata ('source', 'page'): the citations come from them")
        expect(page.metadata.get("kind") == "page", "mark the evidence with metadata kind='page' (search results are 'chunk')")
        long = read_page(pages, "handbook.docx", 2, max_chars=40)
        expect(not long.error and long.evidence and long.evidence[0].page_content.startswith(pages.read("handbook.docx", 2).text[:40]),
               "a long page starts with its first max_chars characters")
        expect(len(long.evidence[0].page_content) < 80,
               "cut a page longer than max_chars (the small model's window is ~4,000 tokens)")
        for source, index, needle, hint in [
            ("nope.pdf", 1, "handbook.docx", "an unknown source gives an Observation whose `error` names the known sources "
                                             "(catch PageNotFound and use its message)"),
            ("handbook.docx", 9, "1–2", "a page that does not exist gives an Observation whose `error` names the valid pages "
                                        "(catch PageNotFound and use its message)"),
        ]:
            try:
                bad = read_page(pages, source, index)
            except Exception as error:  # noqa: BLE001 — the point of the exercise
                expect(False, f"read_page({source!r}, {index}) raised {type(error).__name__}: the agent must see the "
                              "error as an observation, not crash the loop")
            expect(isinstance(bad, Observation) and bool(bad.error) and not bad.evidence, hint)
            expect(needle in bad.error, hint)

    return run_check("Exercise 1 (the read_page tool)", check)


def check_standalone_question(standalone_question) -> CheckResult:
    """Exercise 2: rewrite the user's turn from the chat history — typed, and without a call when there is no history."""

    def check():
        from lessons.fakes import ScriptedChatModel

        model = ScriptedChatModel(responses=[])
        first = standalone_question(model, [], "How many leave days do Lisbon staff get?")
        expect(first == "How many leave days do Lisbon staff get?",
               "with no history the turn is already standalone: return it unchanged")
        expect(not model.calls, "with no history, do not call the model (it costs a call and can only make the question worse)")

        rewritten = "How many leave days did Lisbon staff get in 2023?"
        model = ScriptedChatModel(responses=[{"question": rewritten}])
        history = [("user", "How many leave days do Lisbon staff get?"), ("assistant", "25 days a year.")]
        got = standalone_question(model, history, "and in 2023?")
        expect(len(model.calls) == 1, f"with a history, call the model once (got {len(model.calls)} calls)")
        expect(model.calls[0]["tools"] == ["StandaloneQuestion"],
               "ask for the typed answer: invoke_structured(model, StandaloneQuestion, prompt)")
        prompt = "\n".join(str(m.content) for m in model.calls[0]["messages"])
        expect("How many leave days do Lisbon staff get?" in prompt and "25 days a year." in prompt,
               "put the chat history in the prompt (format_history(history)): the model needs it to resolve 'and in 2023?'")
        expect("and in 2023?" in prompt, "put the user's last message in the prompt")
        expect(got == rewritten, "return the model's question (the `question` field), a str")

        model = ScriptedChatModel(responses=[{"question": "  "}])
        expect(standalone_question(model, history, "and in 2023?") == "and in 2023?",
               "an empty rewrite is no question: fall back to the user's turn")

    return run_check("Exercise 2 (standalone question)", check)
