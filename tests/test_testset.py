"""Test sets: gold conversion, files with clear errors, and generation that checks, de-duplicates and reports."""

import json

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from lessons.core.fakes import ScriptedChatModel
from lessons.evaluation.testset import (
    GeneratedQuestion,
    TestItem,
    TestSetError,
    describe,
    find_duplicate,
    from_gold,
    generate_test_set,
    grounding,
    load_test_set,
    pair_chunks,
    pick_chunks,
    qa_chunk_selection,
    save_test_set,
)
from lessons.ingest.corpus import load_gold
from lessons.ingest.questions import balanced_sample

LONG = " More text so the chunk is long enough to ask about." * 4
EN_A = Document(
    "Atlas Server exposes its REST API on port 7420 by default." + LONG,
    metadata={"chunk_id": "en-a", "source": "guide.md", "language": "en"},
)
EN_B = Document(
    "The Atlas admin console requires a licence key issued by the Tidewell portal." + LONG,
    metadata={"chunk_id": "en-b", "source": "admin.pdf", "page": 3, "language": "en"},
)
ZH_A = Document(
    "员工每年有 27 天年假，未用完的假期最多可结转 5 天，须在次年 4 月 30 日前使用。" * 5,
    metadata={"chunk_id": "zh-a", "source": "handbook_zh.docx", "language": "zh"},
)
ZH_B = Document(
    "报销须在费用发生后 30 天内提交，超过 5000 元需要部门经理审批。" * 6,
    metadata={"chunk_id": "zh-b", "source": "finance_zh.md", "language": "zh"},
)
CHUNKS = [EN_A, EN_B, ZH_A, ZH_B]


def test_gold_questions_get_the_ids_of_their_evidence_chunks():
    gold = [q for q in load_gold() if q.id in ("en-001", "en-002")] + [next(q for q in load_gold() if not q.answerable)]
    chunks = [
        Document("It exposes the REST and gRPC APIs on port 7420 by default.", metadata={"chunk_id": "x1"}),
        Document("Unrelated text.", metadata={"chunk_id": "x2"}),
    ]
    items = from_gold(gold, chunks)
    assert items[0].evidence_chunk_ids == ["x1"] and items[0].reference == gold[0].answer
    assert items[1].evidence_chunk_ids == []  # its evidence is in none of these chunks
    assert not items[2].answerable and items[2].origin == "gold"


def test_a_test_set_round_trips_and_gold_format_lines_are_read(tmp_path):
    items = [
        TestItem(
            id="a",
            question="Which port?",
            language="en",
            type="fact",
            reference="7420",
            evidence_chunk_ids=["en-a"],
            origin="generated",
        )
    ]
    path = save_test_set(items, tmp_path / "set.jsonl")
    assert load_test_set(path) == items
    gold_line = {
        "id": "g1",
        "question": "哪个端口？",
        "type": "fact",
        "answer": "7420",
        "sources": [{"file": "guide.md"}],
        "evidence": ["port 7420 by default"],
    }
    (tmp_path / "gold.jsonl").write_text(json.dumps(gold_line, ensure_ascii=False) + "\n")
    (loaded,) = load_test_set(tmp_path / "gold.jsonl", CHUNKS)
    assert loaded.reference == "7420" and loaded.language == "zh" and loaded.evidence_chunk_ids == ["en-a"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"id": "a", "question": "ok"}\n{not json}\n', "line 2: not valid JSON"),
        ('{"id": "a"}\n', "line 1: question: Field required"),
        ('["a list"]\n', "line 1: expected a JSON object"),
        ('{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}\n', "duplicate question ids ['a']"),
        ("\n", "holds no questions"),
    ],
)
def test_a_bad_test_set_file_names_the_file_and_line(tmp_path, content, fragment):
    path = tmp_path / "mine.jsonl"
    path.write_text(content)
    with pytest.raises(TestSetError, match="mine.jsonl") as error:
        load_test_set(path)
    assert fragment in str(error.value)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (
            {"id": "a", "question": "Who is the CFO?", "answerable": False, "type": "fact"},
            "\"answerable\": false but type 'fact'",
        ),
        ({"id": "a", "question": "Who is the CFO?", "answerable": True, "type": "out_of_kb"}, '"answerable": true'),
        ({"id": "a", "question": "Who is the CFO?", "answerable": "no"}, "must be true or false"),
        (
            {"id": "a", "question": "Who is the CFO?", "type": "out-of-kb"},
            "unknown type 'out-of-kb' (did you mean 'out_of_kb'?)",
        ),
        (
            {"id": "a", "question": "Who is the CFO?", "type": "OUT_OF_KB"},
            "unknown type 'OUT_OF_KB' (did you mean 'out_of_kb'?)",
        ),
        (
            {"id": "a", "question": "Which port?", "refrence": "7420"},
            "unknown key 'refrence' (did you mean 'reference'?)",
        ),
        ({"id": "a", "question": "   \t "}, "line 1: the question is blank"),
        ({"id": "a", "question": "Which port?", "language": "English"}, "not a language code"),
        ({"id": "a", "question": "Which port?", "answer": "7420", "reference": "7420"}, "both"),
        (
            {"id": "a", "question": "Who is the CFO?", "type": "out_of_kb", "evidence": ["port 7420"]},
            "out-of-KB question has evidence",
        ),
    ],
)
def test_a_test_set_line_that_would_be_misread_is_an_error_naming_the_line(tmp_path, line, fragment):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"id": "ok", "question": "Which port?"}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(TestSetError, match="mine.jsonl, line 2") as error:
        load_test_set(path)
    assert fragment in str(error.value).replace("line 2", "line 1")


def test_answerable_false_means_out_of_kb(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(
        json.dumps({"id": "a", "question": "Who is the CFO?", "answerable": False})
        + "\n"
        + json.dumps({"id": "b", "question": "Which port?", "answerable": True, "answer": "7420"})
        + "\n"
    )
    first, second = load_test_set(path)
    assert first.type == "out_of_kb" and not first.answerable
    assert second.type == "fact" and second.answerable and second.reference == "7420"
    assert describe([first, second])["out-of-KB"] == 1


def test_evidence_found_in_no_chunk_is_an_error(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(
        json.dumps({"id": "a", "question": "Which port?", "evidence": ["port 7420 by default", "port 9999"]}) + "\n"
    )
    with pytest.raises(TestSetError, match="line 1: evidence quote 'port 9999' is in none of the chunks"):
        load_test_set(path, CHUNKS)
    path.write_text(json.dumps({"id": "a", "question": "Which port?", "evidence_chunk_ids": ["en-a", "gone"]}) + "\n")
    with pytest.raises(TestSetError, match=r"chunk id\(s\) \['gone'\]"):
        load_test_set(path, CHUNKS)
    assert load_test_set(path)[0].evidence_chunk_ids == ["en-a", "gone"], (
        "without chunks there is nothing to check against"
    )


def test_a_test_set_in_another_encoding_names_it_and_a_bom_is_fine(tmp_path):
    line = (
        json.dumps({"id": "g1", "question": "鹿特丹员工每年有几天年假？", "answer": "27 天"}, ensure_ascii=False) + "\n"
    )
    path = tmp_path / "gbk.jsonl"
    path.write_bytes(line.encode("gbk"))
    with pytest.raises(TestSetError, match="gbk.jsonl is not UTF-8") as error:
        load_test_set(path)
    assert "iconv -f GB18030" in str(error.value)
    path.write_bytes(b"\xef\xbb\xbf" + line.encode("utf-8"))
    assert load_test_set(path)[0].language == "zh"


def test_a_missing_test_set_file_says_what_to_give(tmp_path):
    with pytest.raises(TestSetError, match='questions = "generate"'):
        load_test_set(tmp_path / "nope.jsonl")


def test_grounding_accepts_copied_facts_and_rejects_invented_ones_in_both_languages():
    assert grounding(GeneratedQuestion(question="Which port?", answer="Port 7420 by default"), [EN_A]) is None
    assert "not grounded" in grounding(
        GeneratedQuestion(question="Which port?", answer="Port 8080 on Kubernetes"), [EN_A]
    )
    assert grounding(GeneratedQuestion(question="年假有几天？", answer="27 天年假"), [ZH_A]) is None
    assert "not grounded" in grounding(GeneratedQuestion(question="年假有几天？", answer="三十五个工作日"), [ZH_A])


def test_a_two_chunk_question_must_use_both_chunks():
    both = GeneratedQuestion(question="年假结转和报销期限分别是多少？", answer="结转 5 天；报销 30 天内提交")
    assert grounding(both, [ZH_A, ZH_B]) is None
    one_sided = GeneratedQuestion(question="年假有几天？", answer="27 天年假")
    assert "text B alone" in grounding(one_sided, [ZH_A, ZH_B])


def test_near_duplicate_questions_are_found_in_english_and_chinese():
    kept = ["Which port does Atlas Server use by default?", "员工每年有多少天年假？"]
    assert find_duplicate("Which port does the Atlas Server use by default?", kept) == kept[0]
    assert find_duplicate("员工每年有多少天的年假？", kept) == kept[1]
    assert find_duplicate("Who issues the licence key?", kept) is None


def test_chunks_are_picked_half_english_half_chinese_and_pairs_come_from_different_places():
    picked = pick_chunks(CHUNKS, 2, seed=0)
    assert sorted(c.metadata["language"] for c in picked) == ["en", "zh"]
    for a, b in pair_chunks(CHUNKS, 2, DeterministicFakeEmbedding(size=16), seed=0):
        assert a.metadata["language"] == b.metadata["language"]
        assert (a.metadata["source"], a.metadata.get("page")) != (b.metadata["source"], b.metadata.get("page"))


def generator(replies):
    """A scripted model that answers each GeneratedQuestion request by the chunk text in the prompt."""

    def reply(messages, tools):
        assert tools == ["GeneratedQuestion"]
        prompt = messages[0].content
        for marker, answer in replies:
            if marker in prompt:
                return answer(prompt) if callable(answer) else answer
        raise AssertionError("no scripted reply for this prompt")

    return ScriptedChatModel(default=reply)


def test_generation_keeps_grounded_questions_and_reports_every_one_it_drops():
    model = generator([
        ("Text A", {"question": "Which port and which licence portal?", "answer": "port 7420; the Tidewell portal"}),
        ("7420", {"question": "Which port does Atlas Server use?", "answer": "port 7420 by default"}),
        ("licence", {"question": "Which port does Atlas Server use?", "answer": "a licence key from the Tidewell portal"}),
        ("年假", {"question": "年假有几天？", "answer": "三十五个工作日"}),
        ("报销", RuntimeError("server went away")),
    ])  # fmt: skip
    report = generate_test_set(model, CHUNKS, n_single=4, n_multi=1, embeddings=DeterministicFakeEmbedding(size=16),
                               progress=False)  # fmt: skip
    kept = {i.question: i for i in report.items}
    assert kept["Which port does Atlas Server use?"].evidence_chunk_ids in (["en-a"], ["en-b"])  # the first one asked
    assert all(i.origin == "generated" and i.id.startswith("gen-") for i in report.items)
    reasons = sorted(r.reason.split(":")[0] for r in report.rejected)
    assert reasons.count("duplicate") == 1 and "model failed" in reasons and "not grounded" in reasons
    assert len(report.items) + len(report.rejected) == 5  # nothing disappears
    assert "not kept" in str(report)
    prompts = [c["messages"][0].content for c in model.calls]
    assert any("Simplified Chinese" in p for p in prompts) and any("in English" in p for p in prompts)


def test_balanced_sample_and_qa_selection():
    items = [
        TestItem(id=f"{lang}-{n}", question="q", language=lang, type=kind, evidence_chunk_ids=[f"{lang}-a"])
        for lang in ("en", "zh")
        for n, kind in enumerate(["fact", "table", "fact", "out_of_kb", "out_of_kb"])
    ]
    sample = balanced_sample(items, 4, 1, n_out_of_kb=2, by_type=True, in_order=True)
    assert sum(i.answerable for i in sample) == 4 and sum(not i.answerable for i in sample) == 2
    assert {i.language for i in sample if not i.answerable} == {"en", "zh"}
    assert sorted(i.type for i in sample if i.answerable and i.language == "en") == ["fact", "table"]
    assert sample == [i for i in items if i in sample]  # in test-set order
    assert balanced_sample(items, 4, 1, n_out_of_kb=2, by_type=True, in_order=True) == sample
    selection = qa_chunk_selection(CHUNKS, [items[0]], 2)
    assert EN_A in selection and len(selection) == 2
    assert describe(sample)["out-of-KB"] == 2


def test_chunks_reach_the_generation_prompts_as_delimited_data():
    from lessons.core.prompt_safety import DATA_RULE

    model = ScriptedChatModel(default={"question": "Which port does Atlas Server use?", "answer": "port 7420"})
    generate_test_set(
        model, CHUNKS, n_single=1, n_multi=1, embeddings=DeterministicFakeEmbedding(size=16), progress=False
    )
    prompts = [call["messages"][-1].content for call in model.calls]
    assert len(prompts) == 2 and all(
        DATA_RULE in p and p.count("<document>") == p.count("</document>") >= 1 for p in prompts
    )
    assert "Text A" in prompts[1] and prompts[1].count("<document>") == 3  # two chunks, and the tag named in the rule
