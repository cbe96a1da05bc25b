"""Chunking strategies: each behaves as notebook 01 says it does, in English and in Chinese."""

import itertools
import re

import jieba
import numpy as np
import pytest
from fakes import KeywordEmbeddings
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter

from lessons.chunking import (
    SEMANTIC_SENTENCE_SPLIT,
    ChineseTextSplitter,
    TokenWindowSplitter,
    cached_embeddings,
    character_window_chunker,
    docling_chunker,
    embedder_token_counter,
    header_chunker,
    header_recursive_chunker,
    language_aware_chunker,
    parent_child_chunks,
    parents_of,
    recursive_chunker,
    semantic_chunker,
    sentence_chunker,
)
from lessons.chunking.docling_hybrid import E5Tokenizer
from lessons.chunking.strategies import default_chunker

ENGLISH = (
    "Atlas Server listens on port 7420. Ingest workers connect over the same port. "
    "The Console is served on port 7480! Is TLS required? Yes: TLS 1.3 only.\n\n"
    "Backups run nightly at 02:00. Each snapshot is kept for 30 days; older ones are removed."
)
CHINESE = (
    "中文分句依赖标点。句号、感叹号和问号是可靠的句子边界！分号在制度文本里常常连接两个完整的条款；"
    "逗号只在一句话超长时才作为退路，否则条件句会被拆成两半。检索时把标题路径拼在正文前面一起编码，能明显提升短问题的命中率。"
)
NO_PUNCTUATION = "向量检索与关键词检索的混合检索方案在企业知识库中的落地实践与效果评估方法研究报告" * 2
MARKDOWN = """# Guide

## Install

Run this:

```bash
# a comment
apt-get install atlas
```

| Port | Use |
|---|---|
| 7420 | API |
| 7480 | Console |

## Usage

Start it and check the status."""


def words(text):
    return len(text.split())


def doc(text, **metadata):
    return Document(page_content=text, metadata={"source": "test.md", "language": "en", **metadata})


def topic_embeddings(name=None):
    """Sentences about backups (备份) point one way, everything else another: a boundary SemanticChunker must find."""
    return KeywordEmbeddings(("backup", "备份"), name=name)


def test_recursive_chunker_respects_size_and_keeps_metadata():
    chunks = recursive_chunker(60, 0)([doc(ENGLISH, page=3)])
    assert len(chunks) > 2
    assert all(len(chunk.page_content) <= 60 for chunk in chunks)
    assert all(chunk.metadata["page"] == 3 for chunk in chunks)


def test_character_windows_have_fixed_size_and_overlap():
    text = "abcdefghij" * 10
    chunks = [chunk.page_content for chunk in character_window_chunker(30, 10)([doc(text)])]
    assert all(len(chunk) == 30 for chunk in chunks[:-1])
    assert all(previous[-10:] == chunk[:10] for previous, chunk in itertools.pairwise(chunks))


def test_token_windows_fit_the_budget_and_overlap_by_the_given_tokens():
    text = " ".join(f"word{i}" for i in range(100))
    windows = TokenWindowSplitter(words, chunk_size=10, chunk_overlap=3).split_text(text)
    assert all(words(window) <= 10 for window in windows)
    assert all(window.split()[-3:] == following.split()[:3] for window, following in itertools.pairwise(windows))
    assert windows[0].startswith("word0 ") and windows[-1].endswith("word99")


def test_token_windows_without_overlap_join_back_to_the_text():
    windows = TokenWindowSplitter(len, chunk_size=7, chunk_overlap=0, strip_whitespace=False).split_text(CHINESE)
    assert "".join(windows) == CHINESE
    assert all(len(window) == 7 for window in windows[:-1])


def test_embedder_token_counter_counts_without_the_prefix():
    count = embedder_token_counter()
    assert count("") == 0
    assert 0 < count("Atlas Server listens on port 7420.") < 20
    assert count(CHINESE) > len(CHINESE) / 3
    windows = TokenWindowSplitter(count, chunk_size=40, chunk_overlap=5).split_text(ENGLISH + CHINESE)
    assert len(windows) > 2 and all(count(window) <= 40 for window in windows)


def test_embedder_token_counter_names_the_fix_for_another_embedder():
    with pytest.raises(TypeError, match="get_embeddings\\('e5'\\)"):
        embedder_token_counter(topic_embeddings())


def test_sentence_chunks_end_at_sentence_ends_in_both_languages():
    for text in (ENGLISH, CHINESE):
        chunks = [chunk.page_content for chunk in sentence_chunker(90, 0)([doc(text)])]
        assert len(chunks) > 1
        assert all(re.search(r"[.!?。！？；]$", chunk) for chunk in chunks), chunks
        assert re.sub(r"\s", "", "".join(chunks)) == re.sub(r"\s", "", text)


def test_semantic_chunker_default_regex_never_splits_chinese_ours_does():
    assert len(re.split(r"(?<=[.?!])\s+", CHINESE)) == 1
    assert len(re.split(SEMANTIC_SENTENCE_SPLIT, CHINESE)) == 5


def test_semantic_chunker_cuts_where_the_topic_changes_without_adding_spaces():
    text = "备份每天凌晨两点运行。备份保留三十天。端口是七四二零。控制台使用七四八零端口。证书每年更新。"
    chunks = [
        chunk.page_content
        for chunk in semantic_chunker(topic_embeddings(), breakpoint_percentile=50, buffer_size=0)(
            [doc(text, language="zh")]
        )
    ]
    assert chunks[0] == "备份每天凌晨两点运行。备份保留三十天。"
    assert "".join(chunks) == text


def test_default_splitter_cuts_a_chinese_sentence_and_the_chinese_splitter_does_not():
    default = RecursiveCharacterTextSplitter(chunk_size=40, chunk_overlap=0).split_text(CHINESE)
    assert any(not re.search(r"[。！？；，]$", chunk) for chunk in default[:-1])
    chinese = ChineseTextSplitter(chunk_size=40, chunk_overlap=0).split_text(CHINESE)
    assert all(re.search(r"[。！？；，]$", chunk) for chunk in chinese)
    assert not any(re.match(r"[。！？；，]", chunk) for chunk in chinese)
    assert "".join(chinese) == CHINESE


def test_chinese_splitter_falls_back_to_whole_jieba_words():
    chunks = ChineseTextSplitter(chunk_size=12, chunk_overlap=0).split_text(NO_PUNCTUATION)
    assert "".join(chunks) == NO_PUNCTUATION and all(len(chunk) <= 12 for chunk in chunks)
    word_ends = set(np.cumsum([len(word) for word in jieba.cut(NO_PUNCTUATION)]))
    cuts = np.cumsum([len(chunk) for chunk in chunks])[:-1]
    assert set(cuts) <= word_ends
    characters = RecursiveCharacterTextSplitter(chunk_size=12, chunk_overlap=0).split_text(NO_PUNCTUATION)
    assert not set(np.cumsum([len(chunk) for chunk in characters])[:-1]) <= word_ends


def test_language_aware_chunker_picks_the_splitter_and_size_by_language():
    chunker = language_aware_chunker(60, 0, zh_chunk_size=30, zh_chunk_overlap=0)
    chunks = chunker([doc(ENGLISH), doc(CHINESE, language="zh")])
    english = [chunk.page_content for chunk in chunks if chunk.metadata["language"] == "en"]
    chinese = [chunk.page_content for chunk in chunks if chunk.metadata["language"] == "zh"]
    assert all(len(chunk) <= 60 for chunk in english) and max(map(len, english)) > 30
    assert all(len(chunk) <= 30 and re.search(r"[。！？；，]$", chunk) for chunk in chinese)


def test_header_chunker_keeps_section_path_and_code_language():
    sections = header_chunker()([doc(MARKDOWN)])
    install = next(section for section in sections if "apt-get" in section.page_content)
    assert install.metadata["section_path"] == "Guide > Install"
    assert install.metadata["code_language"] == "bash"
    usage = next(section for section in sections if "Start it" in section.page_content)
    assert usage.metadata["code_language"] == ""


def test_header_recursive_chunker_is_the_knowledge_base_baseline():
    from lessons.ingest.files import split_sections

    ours = [chunk.page_content for chunk in header_recursive_chunker(80, 10)([doc(MARKDOWN)])]
    baseline = [chunk.page_content for chunk in default_chunker(80, 10)(split_sections([doc(MARKDOWN)]))]
    assert ours == baseline


def test_docling_chunker_counts_with_our_tokenizer_and_writes_markdown_tables():
    tokenizer = E5Tokenizer(counter=words, max_tokens=30)
    assert tokenizer.count_tokens("one two three") == 3 and tokenizer.get_max_tokens() == 30
    chunks = docling_chunker(max_tokens=30, count_tokens=words)([doc(MARKDOWN, page=None)])
    table = next(chunk for chunk in chunks if "7420" in chunk.page_content)
    assert re.search(r"\|\s*7420\s*\|\s*API\s*\|", table.page_content) and "= API" not in table.page_content
    assert table.metadata["section_path"].endswith("Install") and table.metadata["source"] == "test.md"
    assert all(words(chunk.page_content) <= 30 for chunk in chunks)


def test_parent_child_links_every_child_to_the_parent_that_contains_it():
    parents, children = parent_child_chunks([doc(ENGLISH * 3)])
    by_id = {parent.metadata["chunk_id"]: parent for parent in parents}
    assert len(children) > len(parents)
    assert all(child.page_content in by_id[child.metadata["parent_id"]].page_content for child in children)


def test_parents_of_keeps_rank_order_drops_repeats_and_stops_at_k():
    parents = {name: Document(page_content=name) for name in ("p1", "p2", "p3")}
    hits = [
        Document(page_content=f"c{i}", metadata={"parent_id": parent})
        for i, parent in enumerate(["p2", "p1", "p2", "p3"])
    ]
    assert [parent.page_content for parent in parents_of(hits, parents)] == ["p2", "p1", "p3"]
    assert [parent.page_content for parent in parents_of(hits, parents, k=2)] == ["p2", "p1"]
    with pytest.raises(KeyError, match="parent_child_chunks"):
        parents_of([Document(page_content="orphan")], parents)


def test_cached_embeddings_embed_each_text_once_and_keep_the_model_name(fresh_settings):
    model = topic_embeddings(name="topic-model")
    cached = cached_embeddings(model)
    first = cached.embed_documents(["备份", "port"])
    again = cached.embed_documents(["port", "证书"])
    assert model.documents == ["备份", "port", "证书"]
    assert again[0] == first[1]
    assert cached.name == "topic-model"


def test_cached_embeddings_embed_each_query_once_apart_from_the_passages(fresh_settings):
    class QueryPrefixed(KeywordEmbeddings):  # like e5: a text as a query gets another vector than as a passage
        def embed_query(self, text):
            self.calls += 1
            return self._vector("backup " + text)

        def embed_documents(self, texts):
            self.calls += len(texts)
            return [self._vector(text) for text in texts]

    model = QueryPrefixed(("backup", "port"), name="prefixed")
    cached = cached_embeddings(model)
    passage = cached.embed_documents(["port"])[0]
    first = cached.embed_query("port")
    assert model.calls == 2 and first != passage  # the passage's vector is not served for the query
    assert cached.embed_query("port") == first and model.calls == 2  # the same question again: not embedded
    assert cached_embeddings(QueryPrefixed(("backup", "port"), name="prefixed")).embed_query("port") == first  # disk
    assert cached.embed_documents(["port"]) == [passage]
