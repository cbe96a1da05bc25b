"""The helpers the benchmark scripts share (benchmarks/common.py)."""

import json

import pytest

from benchmarks import bench_answerability, bench_rerank_fusion, common


def test_both_benchmarks_read_question_sets_with_the_one_shared_reader():
    assert bench_answerability.question_file is common.question_file
    assert bench_rerank_fusion.question_file is common.question_file


def test_a_question_set_is_read_line_by_line_without_the_writers_note(tmp_path):
    path = tmp_path / "set.jsonl"
    rows = [
        {"id": "a", "question": "Which port?", "language": "en", "type": "fact", "note": "written blind"},
        {"id": "b", "question": "哪个端口？", "language": "zh", "type": "out_of_kb"},
    ]
    path.write_text("\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n\n", encoding="utf-8")
    questions = common.question_file(path)
    assert [(q.id, q.question, q.answerable) for q in questions] == [
        ("a", "Which port?", True),
        ("b", "哪个端口？", False),
    ]


def test_a_missing_set_or_a_bad_line_names_the_file_and_the_line(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"absent\.jsonl: no such question set"):
        common.question_file(tmp_path / "absent.jsonl")
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "question": "Q?", "language": "en", "type": "fact"}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2"):
        common.question_file(path)
