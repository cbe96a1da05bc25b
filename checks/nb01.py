"""Checks for notebook 01 (chunking). Every hint has its Chinese twin (`zh=`), shown in notebooks/zh/."""

from __future__ import annotations

import re

from langchain_core.documents import Document

from checks import CheckResult, Hint, expect, run_check

CHINESE_PARAGRAPH = (
    "分块是检索增强生成的第一步。块太大，检索时混进无关内容；块太小，答案所需的上下文被切断。"
    "中文没有空格，默认分隔符只能按字符硬切！所以要先按句号、问号和感叹号断开；"
    "实在太长的句子，再按逗号退一步。这样每一块都以完整的句子结尾。"
)
SENTENCE_END = "。！？；"
CLAUSE_END = "，"


def check_chinese_splitter(make_splitter) -> CheckResult:
    """Exercise 1: a splitter that cuts Chinese at sentence ends, keeping each mark with its sentence."""

    def check():
        expect(
            callable(make_splitter),
            "define a function `chinese_sentence_splitter(chunk_size, chunk_overlap=0)`",
            zh="定义一个函数 `chinese_sentence_splitter(chunk_size, chunk_overlap=0)`",
        )
        splitter = make_splitter(40, 0)
        expect(
            splitter is not None,
            "your function returns None — return the splitter you built",
            zh="你的函数返回了 None——把你构造的切分器返回出来",
        )
        expect(
            hasattr(splitter, "split_text"),
            "return a LangChain text splitter, e.g. RecursiveCharacterTextSplitter(...)",
            zh="返回一个 LangChain 文本切分器，例如 RecursiveCharacterTextSplitter(...)",
        )
        chunks = splitter.split_text(CHINESE_PARAGRAPH)
        expect(
            re.sub(r"\s", "", "".join(chunks)) == re.sub(r"\s", "", CHINESE_PARAGRAPH),
            "with chunk_overlap=0 the chunks must join back into the paragraph: nothing lost, nothing repeated",
            zh="chunk_overlap=0 时，各块拼起来必须正好是原段落：不丢内容，也不重复",
        )
        expect(
            all(len(chunk) <= 40 for chunk in chunks),
            "a chunk is longer than chunk_size=40: pass chunk_size on",
            zh="有一个块比 chunk_size=40 还长：把 chunk_size 传给切分器",
        )
        for chunk in chunks:
            if chunk[:1] in tuple(SENTENCE_END + CLAUSE_END):
                raise Hint(
                    f"a chunk starts with a punctuation mark ({chunk[:8]!r}…): keep the mark with the sentence it "
                    'ends — keep_separator="end"',
                    zh=f'有一个块以标点开头（{chunk[:8]!r}…）：让标点留在它所结束的句子里——keep_separator="end"',
                )
        for chunk in chunks[:-1]:
            if chunk[-1:] not in tuple(SENTENCE_END + CLAUSE_END):
                raise Hint(
                    f"this chunk ends mid-sentence: {chunk[-12:]!r} — list Chinese punctuation (。！？；，) as "
                    'separators, before the last resort ""',
                    zh=f'这个块结束在句子中间：{chunk[-12:]!r}——把中文标点（。！？；，）列为分隔符，放在最后手段 "" 之前',
                )
            if chunk[-1:] == CLAUSE_END:
                raise Hint(
                    f"a chunk ends at a comma ({chunk[-12:]!r}) although every sentence here fits in 40 "
                    "characters: put the sentence ends 。！？； before ， in the separators, so a comma is only "
                    "the fallback",
                    zh=f"有一个块结束在逗号处（{chunk[-12:]!r}），而这里每个句子都不超过 40 个字符：在分隔符里把句末标点"
                    "。！？； 放在 ， 之前，让逗号只作退路",
                )

    return run_check("Exercise 1 (Chinese sentence-aware splitter)", check, zh="练习 1（感知中文句子的切分器）")


def check_pack_blocks(pack_blocks) -> CheckResult:
    """Exercise 2: pack whole Markdown blocks greedily into chunks of at most max_chars, never cutting one."""

    def check():
        from lessons.chunking.markdown_blocks import pack_greedily

        expect(
            callable(pack_blocks),
            "define a function `pack_blocks(blocks, max_chars)`",
            zh="定义一个函数 `pack_blocks(blocks, max_chars)`",
        )
        table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(12))
        blocks = ["## Title", "Short paragraph.", table, "Another paragraph here.", "Last one."]
        chunks = pack_blocks(blocks, 60)
        expect(
            chunks is not None,
            "your function returns None — did you forget `return`?",
            zh="你的函数返回了 None——是不是忘了写 `return`？",
        )
        chunks = list(chunks)
        expect(
            chunks and all(isinstance(chunk, str) for chunk in chunks),
            "return a list of chunk texts (strings)",
            zh="返回一个由块文本（字符串）组成的列表",
        )
        expect(
            "\n\n".join(chunks) == "\n\n".join(blocks),
            'join the blocks of a chunk with a blank line ("\\n\\n"), in order, and lose none',
            zh='同一块内的区块用空行（"\\n\\n"）按顺序连接，一个都不能丢',
        )
        expect(
            sum(table in chunk for chunk in chunks) == 1,
            "the table was cut: a block must stay whole in one chunk, even when it is longer than max_chars",
            zh="表格被切开了：一个区块必须完整地待在一个块里，即使它比 max_chars 还长",
        )
        for chunk in chunks:
            if len(chunk) > 60 and chunk not in blocks:
                raise Hint(
                    f"a chunk of several blocks is {len(chunk)} characters, over 60: start a new chunk when the "
                    "next block would not fit",
                    zh=f"一个由多个区块组成的块有 {len(chunk)} 个字符，超过了 60：下一个区块放不下时就开始新块",
                )
        expected = ["\n\n".join(blocks[start:end]) for start, end in pack_greedily([len(b) for b in blocks], 60)]
        expect(
            chunks == expected,
            f"pack greedily: add blocks to the current chunk while they fit (counting the blank line between "
            f"them), so neighbours share a chunk — expected {len(expected)} chunks, got {len(chunks)}",
            zh=f"贪心地打包：只要放得下（算上中间的空行）就把区块加进当前块，让相邻的区块共用一个块——"
            f"应为 {len(expected)} 个块，你得到 {len(chunks)} 个",
        )

    return run_check("Exercise 2 (pack whole blocks)", check, zh="练习 2（打包完整的区块）")


def check_parents_for(parents_for) -> CheckResult:
    """Exercise 3: map ranked child hits to their parents, best first, each parent once, at most k."""

    def check():
        from lessons.chunking import parents_of

        expect(
            callable(parents_for),
            "define a function `parents_for(child_hits, parents_by_id, k)`",
            zh="定义一个函数 `parents_for(child_hits, parents_by_id, k)`",
        )
        parents = {name: Document(page_content=f"parent {name}", metadata={"chunk_id": name}) for name in "ABCD"}
        hits = [Document(page_content=f"child {i}", metadata={"parent_id": p}) for i, p in enumerate("BABCD")]
        result = parents_for(hits, parents, 3)
        expect(
            result is not None,
            "your function returns None — did you forget `return`?",
            zh="你的函数返回了 None——是不是忘了写 `return`？",
        )
        result = list(result)
        expect(
            all(isinstance(item, Document) for item in result),
            "return the parent Documents themselves (look them up in parents_by_id by the child's "
            "metadata['parent_id']), not ids or children",
            zh="返回父块 Document 本身（用子块的 metadata['parent_id'] 在 parents_by_id 里查找），而不是 id 或子块",
        )
        names = [item.metadata.get("chunk_id") for item in result]
        expect(
            len(names) == len(set(names)),
            f"a parent appears twice ({names}): keep each parent only once",
            zh=f"有一个父块出现了两次（{names}）：每个父块只保留一次",
        )
        expect(
            names[:1] == ["B"],
            f"the best child's parent must come first; you returned {names}",
            zh=f"排名最好的子块的父块必须排在第一；你返回的是 {names}",
        )
        expect(
            len(names) <= 3,
            f"k=3 but you returned {len(names)} parents: stop at k",
            zh=f"k=3，但你返回了 {len(names)} 个父块：到 k 个就停",
        )
        expected = [parent.metadata["chunk_id"] for parent in parents_of(hits, parents, 3)]
        expect(
            names == expected,
            f"for children of B, A, B, C, D and k=3 expected parents {expected}, got {names}",
            zh=f"子块依次属于 B、A、B、C、D，k=3 时父块应为 {expected}，你得到 {names}",
        )
        expect(
            list(parents_for([], parents, 3)) == [],
            "no child hits means no parents: return an empty list",
            zh="没有命中的子块就没有父块：返回一个空列表",
        )

    return run_check("Exercise 3 (child hits to parents)", check, zh="练习 3（从命中的子块到父块）")
