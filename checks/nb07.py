"""Checks for notebook 07 (deep-research agent). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

from __future__ import annotations

from checks import CheckResult, expect, run_check


def check_read_page(read_page) -> CheckResult:
    """Exercise 1: the `read_page` tool — the whole page (cut to `max_chars`), or an error as an observation."""

    def check():
        from lessons.agents.deep_research import Observation, Page, PageStore

        pages = PageStore(
            [
                Page("handbook.docx", 1, "Annual leave", "Lisbon: 25 days. Hangzhou: 20 days."),
                Page("handbook.docx", 2, "Expenses", "Hotel: up to €140 per night. " * 10),
                Page("whitepaper.pdf", 6, "page 6", "Team tier: €45 per user per month."),
            ]
        )
        good = read_page(pages, "whitepaper.pdf", 6)
        expect(
            isinstance(good, Observation),
            f"return an Observation (lessons.agents.deep_research.Observation), not {type(good).__name__}",
            zh=f"返回一个 Observation（lessons.agents.deep_research.Observation），而不是 {type(good).__name__}",
        )
        expect(
            not good.error and len(good.evidence) == 1,
            "a page that exists gives an Observation with no error and one Document in `evidence`",
            zh="存在的页面应得到一个没有 error、`evidence` 里有一个 Document 的 Observation",
        )
        page = good.evidence[0]
        expect(
            page.page_content == "Team tier: €45 per user per month.",
            "the Document's text is the whole page: page.text",
            zh="Document 的文本是整页内容：page.text",
        )
        expect(
            page.metadata.get("source") == "whitepaper.pdf" and page.metadata.get("page") == 6,
            "put the page's source and index in the metadata ('source', 'page'): the citations come from them",
            zh="把页面的来源和索引放进元数据（'source'、'page'）：引用就来自它们",
        )
        expect(
            page.metadata.get("kind") == "page",
            "mark the evidence with metadata kind='page' (search results are 'chunk')",
            zh="用元数据 kind='page' 标记这条证据（检索结果是 'chunk'）",
        )
        long = read_page(pages, "handbook.docx", 2, max_chars=40)
        expect(
            not long.error
            and long.evidence
            and long.evidence[0].page_content.startswith(pages.read("handbook.docx", 2).text[:40]),
            "a long page starts with its first max_chars characters",
            zh="长页面应以它的前 max_chars 个字符开头",
        )
        expect(
            len(long.evidence[0].page_content) < 80,
            "cut a page longer than max_chars (the small model's window is ~4,000 tokens)",
            zh="把超过 max_chars 的页面截断（小模型的上下文窗口约 4,000 个 token）",
        )
        for source, index, needle, hint, hint_zh in [
            (
                "nope.pdf",
                1,
                "handbook.docx",
                (
                    "an unknown source gives an Observation whose `error` names the known sources "
                    "(catch PageNotFound and use its message)"
                ),
                "未知的来源应得到一个 `error` 列出已知来源的 Observation（捕获 PageNotFound 并使用它的消息）",
            ),
            (
                "handbook.docx",
                9,
                "1–2",
                (
                    "a page that does not exist gives an Observation whose `error` names the valid pages "
                    "(catch PageNotFound and use its message)"
                ),
                "不存在的页面应得到一个 `error` 列出有效页码的 Observation（捕获 PageNotFound 并使用它的消息）",
            ),
        ]:
            try:
                bad = read_page(pages, source, index)
            except Exception as error:  # noqa: BLE001 — the point of the exercise
                expect(
                    False,
                    f"read_page({source!r}, {index}) raised {type(error).__name__}: the agent must see the "
                    "error as an observation, not crash the loop",
                    zh=f"read_page({source!r}, {index}) 抛出了 {type(error).__name__}：智能体必须把错误当作一次观察结果看到，"
                    "而不是让循环崩溃",
                )
            expect(isinstance(bad, Observation) and bool(bad.error) and not bad.evidence, hint, zh=hint_zh)
            expect(needle in bad.error, hint, zh=hint_zh)

    return run_check("Exercise 1 (the read_page tool)", check, zh="练习 1（read_page 工具）")


def check_standalone_question(standalone_question) -> CheckResult:
    """Exercise 2: rewrite the user's turn from the chat history — typed, and without a call when there is no history."""

    def check():
        from lessons.core.fakes import ScriptedChatModel

        model = ScriptedChatModel(responses=[])
        first = standalone_question(model, [], "How many leave days do Lisbon staff get?")
        expect(
            first == "How many leave days do Lisbon staff get?",
            "with no history the turn is already standalone: return it unchanged",
            zh="没有历史时，这一轮本身就是独立问题：原样返回",
        )
        expect(
            not model.calls,
            "with no history, do not call the model (it costs a call and can only make the question worse)",
            zh="没有历史时不要调用模型（这要花一次调用，而且只会把问题改坏）",
        )

        rewritten = "How many leave days did Lisbon staff get in 2023?"
        model = ScriptedChatModel(responses=[{"question": rewritten}])
        history = [("user", "How many leave days do Lisbon staff get?"), ("assistant", "25 days a year.")]
        got = standalone_question(model, history, "and in 2023?")
        expect(
            len(model.calls) == 1,
            f"with a history, call the model once (got {len(model.calls)} calls)",
            zh=f"有历史时调用模型一次（实际调用了 {len(model.calls)} 次）",
        )
        expect(
            model.calls[0]["tools"] == ["StandaloneQuestion"],
            "ask for the typed answer: invoke_structured(model, StandaloneQuestion, prompt)",
            zh="请求有类型的回答：invoke_structured(model, StandaloneQuestion, prompt)",
        )
        prompt = "\n".join(str(m.content) for m in model.calls[0]["messages"])
        expect(
            "How many leave days do Lisbon staff get?" in prompt and "25 days a year." in prompt,
            "put the chat history in the prompt (format_history(history)): the model needs it to resolve 'and in 2023?'",
            zh="把聊天历史放进提示词（format_history(history)）：模型需要它才能理解 'and in 2023?' 指的是什么",
        )
        expect(
            "and in 2023?" in prompt, "put the user's last message in the prompt", zh="把用户的最后一条消息放进提示词"
        )
        expect(
            got == rewritten,
            "return the model's question (the `question` field), a str",
            zh="返回模型给出的问题（`question` 字段），一个 str",
        )

        model = ScriptedChatModel(responses=[{"question": "  "}])
        expect(
            standalone_question(model, history, "and in 2023?") == "and in 2023?",
            "an empty rewrite is no question: fall back to the user's turn",
            zh="空的改写不是问题：退回到用户这一轮的原话",
        )

    return run_check("Exercise 2 (standalone question)", check, zh="练习 2（独立问题）")
