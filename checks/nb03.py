"""Checks for notebook 03 (QA transformation). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

from __future__ import annotations

from datetime import date

from langchain_core.documents import Document

from checks import CheckResult, Hint, expect, run_check


def _structured_failure(count: int):
    from lessons.core.structured import StructuredOutputError
    from lessons.transforms.qa_transform import qa_pair_list_schema

    return StructuredOutputError(qa_pair_list_schema(count), 1, None, ValueError(f"no valid list of {count} pairs"))


def _scripted_ask(works_from: int | None, error: Exception | None = None):
    """An `ask(n)` that fails with StructuredOutputError while n > works_from, and records every n."""
    from lessons.transforms.qa_transform import QAPair

    asked: list[int] = []

    def ask(count: int):
        asked.append(count)
        if error is not None:
            raise error
        if works_from is None or count > works_from:
            raise _structured_failure(count)
        return [QAPair(question=f"Question {i}?", answer="42") for i in range(count)]

    return ask, asked


def check_fewer_pairs(first_valid_pairs) -> CheckResult:
    """Exercise 1: ask for max_pairs, then half as many, down to 1; [] when every answer failed."""

    def check():
        expect(
            callable(first_valid_pairs),
            "define a function `first_valid_pairs(ask, max_pairs)`",
            zh="定义一个函数 `first_valid_pairs(ask, max_pairs)`",
        )
        ask, asked = _scripted_ask(works_from=4)
        result = first_valid_pairs(ask, 4)
        expect(
            result is not None,
            "your function returns None — return the pairs that `ask` gave you",
            zh="你的函数返回了 None——把 `ask` 给你的问答对返回出来",
        )
        expect(
            len(result) == 4 and asked == [4],
            f"when the first answer is valid, ask once and return it (you asked {asked})",
            zh=f"第一个回答有效时，只问一次并返回它（你问的是 {asked}）",
        )

        ask, asked = _scripted_ask(works_from=1)
        result = first_valid_pairs(ask, 4)
        expect(
            asked == [4, 2, 1],
            f"for max_pairs=4, ask for 4, then 2, then 1 pairs (you asked {asked}): use fewer_pairs_schedule(max_pairs)",
            zh=f"max_pairs=4 时，先要 4 对，再要 2 对，然后 1 对（你问的是 {asked}）：用 fewer_pairs_schedule(max_pairs)",
        )
        expect(
            result is not None and len(result) == 1,
            "return the pairs of the first call that did not raise",
            zh="返回第一个没有抛出异常的调用给出的问答对",
        )

        ask, asked = _scripted_ask(works_from=None)
        result = first_valid_pairs(ask, 3)
        expect(
            asked == [3, 1],
            f"for max_pairs=3 the schedule is [3, 1] (you asked {asked})",
            zh=f"max_pairs=3 时的安排是 [3, 1]（你问的是 {asked}）",
        )
        expect(
            result == [],
            f"when every call raised StructuredOutputError, return an empty list — not {result!r}: "
            "a chunk without pairs is counted, it never stops the batch",
            zh=f"每次调用都抛出 StructuredOutputError 时，返回一个空列表——而不是 {result!r}："
            "没有问答对的块会被计数，但它绝不会让整批停下",
        )

        ask, asked = _scripted_ask(works_from=4, error=ConnectionError("the model server is down"))
        try:
            first_valid_pairs(ask, 4)
        except ConnectionError:
            pass
        else:
            raise Hint(
                "a ConnectionError was swallowed: catch only StructuredOutputError (an answer that did not fit "
                "the schema); asking a server that is down for fewer pairs cannot help",
                zh="一个 ConnectionError 被吞掉了：只捕获 StructuredOutputError（不符合 schema 的回答）；"
                "向一个宕机的服务要更少的问答对也无济于事",
            )
        expect(asked == [4], "after a ConnectionError, do not ask again", zh="遇到 ConnectionError 之后，不要再问")

    return run_check("Exercise 1 (retry with fewer pairs)", check, zh="练习 1（少要几对再重试）")


def check_chinese_date(parse_chinese_date) -> CheckResult:
    """Exercise 3: the first full Chinese date (年月日, spaces allowed) in a text, as a `datetime.date`."""

    cases = {
        "2026年9月9日": date(2026, 9, 9),
        "最新版本是 2026 年 9 月 9 日发布的 4.2.1": date(2026, 9, 9),
        "第一次会议：2026 年 8 月 20 日（周四）14:00": date(2026, 8, 20),
        "本制度自2026年7月1日起生效，下一次复审不晚于 2027 年 6 月 30 日。": date(2026, 7, 1),
    }
    no_date = {
        "客户成功团队于 2026 年 9 月底整理": (
            "a month without a day is not a full date",
            "只有月份没有日，不是完整的日期",
        ),
        "2026年2月30日": (
            "February has no 30th: catch the ValueError that datetime.date raises",
            "二月没有 30 日：捕获 datetime.date 抛出的 ValueError",
        ),
        "Atlas 4.2 shipped on 18 August.": ("no Chinese date here", "这里没有中文日期"),
    }

    def check():
        expect(
            callable(parse_chinese_date),
            "define a function `parse_chinese_date(text)`",
            zh="定义一个函数 `parse_chinese_date(text)`",
        )
        for text, expected in cases.items():
            result = parse_chinese_date(text)
            expect(
                result is not None,
                f"no date found in {text!r}: search for three groups of digits followed by 年, 月 and 日, "
                "with \\s* between the parts for the spaced style",
                zh=f"在 {text!r} 里没有找到日期：搜索三组分别后跟 年、月、日 的数字，"
                "各部分之间用 \\s* 以匹配带空格的写法",
            )
            expect(
                isinstance(result, date),
                f"return a datetime.date, not {type(result).__name__}",
                zh=f"返回一个 datetime.date，而不是 {type(result).__name__}",
            )
            expect(
                result == expected,
                f"for {text!r} you returned {result}, expected {expected} — the first date in the text",
                zh=f"对 {text!r} 你返回了 {result}，应为 {expected}——文本中的第一个日期",
            )
        for text, (why, why_zh) in no_date.items():
            result = parse_chinese_date(text)
            expect(
                result is None,
                f"for {text!r} return None ({why}); you returned {result!r}",
                zh=f"对 {text!r} 应返回 None（{why_zh}）；你返回了 {result!r}",
            )

    return run_check("Exercise 3 (Chinese dates)", check, zh="练习 3（中文日期）")


def _hit(text: str, chunk_id: str, doc_type: str) -> Document:
    return Document(page_content=text, metadata={"chunk_id": chunk_id, "doc_type": doc_type})


def check_hits_to_chunks(hits_to_chunks) -> CheckResult:
    """Exercise 2: map ranked hits (chunks and QA documents) to the first k distinct source chunks."""

    def check():
        expect(
            callable(hits_to_chunks),
            "define a function `hits_to_chunks(hits, chunks_by_id, k)`",
            zh="定义一个函数 `hits_to_chunks(hits, chunks_by_id, k)`",
        )
        chunks = {cid: _hit(f"text of {cid}", cid, "chunk") for cid in ("a", "b", "c")}
        hits = [
            _hit("Question: …? Answer: …", "b", "qa"),
            _hit("Question: …? Answer: …", "b", "qa"),
            chunks["a"],
            _hit("Question: …? Answer: …", "zzz", "qa"),
            _hit("Question: …? Answer: …", "c", "qa"),
        ]
        result = hits_to_chunks(hits, chunks, 5)
        expect(
            result is not None,
            "your function returns None — return a list of chunks",
            zh="你的函数返回了 None——返回一个块的列表",
        )
        ids = [doc.metadata.get("chunk_id") for doc in result]
        expect(
            all(doc in chunks.values() for doc in result),
            "return the source chunks themselves (chunks_by_id[hit.metadata['chunk_id']]), not the QA documents",
            zh="返回源块本身（chunks_by_id[hit.metadata['chunk_id']]），而不是 QA 文档",
        )
        expect(
            ids[:1] == ["b"],
            f"the first hit is a QA document of chunk 'b', so 'b' comes first (you returned {ids})",
            zh=f"第一个命中是块 'b' 的 QA 文档，所以 'b' 排在第一（你返回的是 {ids}）",
        )
        expect(
            ids.count("b") == 1,
            f"two QA documents of chunk 'b' must give 'b' once (you returned {ids})",
            zh=f"块 'b' 的两个 QA 文档只能给出一次 'b'（你返回的是 {ids}）",
        )
        expect(
            "zzz" not in ids,
            "skip hits whose chunk_id is not in chunks_by_id",
            zh="跳过 chunk_id 不在 chunks_by_id 里的命中",
        )
        expect(
            ids == ["b", "a", "c"],
            f"expected ['b', 'a', 'c'] — distinct chunks in rank order; you returned {ids}",
            zh=f"应为 ['b', 'a', 'c']——按排名顺序、互不相同的块；你返回的是 {ids}",
        )
        two = [doc.metadata["chunk_id"] for doc in hits_to_chunks(hits, chunks, 2)]
        expect(
            two == ["b", "a"],
            f"with k=2 return at most 2 chunks (you returned {two})",
            zh=f"k=2 时最多返回 2 个块（你返回的是 {two}）",
        )

    return run_check("Exercise 2 (QA hits back to chunks)", check, zh="练习 2（把 QA 命中映射回块）")
