"""Notebook 01's checks pass a right answer and fail blank or typical wrong answers with a hint."""

from langchain_text_splitters import RecursiveCharacterTextSplitter

from checks.nb01 import check_chinese_splitter, check_pack_blocks, check_parents_for
from lessons.chunking import ChineseTextSplitter, parents_of
from lessons.chunking.markdown_blocks import pack_greedily


def blank(*_args):
    return None


def test_chinese_splitter_check(capsys):
    assert check_chinese_splitter(lambda size, overlap=0: ChineseTextSplitter(chunk_size=size, chunk_overlap=overlap))
    assert not check_chinese_splitter(blank)
    assert not check_chinese_splitter(
        lambda size, overlap=0: RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    )
    mark_at_start = lambda size, overlap=0: RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, separators=["。", "！", "？", "；", "，", ""], keep_separator="start"
    )
    assert not check_chinese_splitter(mark_at_start)
    assert "keep_separator" in capsys.readouterr().out
    comma_first = lambda size, overlap=0: RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, separators=["，", "。", "！", "？", "；", ""], keep_separator="end"
    )
    assert not check_chinese_splitter(comma_first)
    assert "before ，" in capsys.readouterr().out


def test_parents_for_check(capsys):
    assert check_parents_for(lambda hits, parents, k: parents_of(hits, parents, k))
    assert not check_parents_for(blank)
    assert not check_parents_for(lambda hits, parents, k: [parents[h.metadata["parent_id"]] for h in hits][:k])
    assert "only once" in capsys.readouterr().out


def test_pack_blocks_check(capsys):
    def solution(blocks, max_chars):
        return ["\n\n".join(blocks[s:e]) for s, e in pack_greedily([len(b) for b in blocks], max_chars)]

    assert check_pack_blocks(solution)
    assert not check_pack_blocks(blank)
    assert not check_pack_blocks(lambda blocks, max_chars: list(blocks))
    assert "greedily" in capsys.readouterr().out
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=60, chunk_overlap=0, separators=["\n\n", "\n"], keep_separator=False
    )
    assert not check_pack_blocks(lambda blocks, max_chars: splitter.split_text("\n\n".join(blocks)))
