"""The semantic cache: hits by similarity within one language, keyed by embedder and knowledge-base version;
its threshold calibration. A fake embedder with hand-set vectors, no model."""

import json
import sqlite3

import numpy as np
import pytest
from fakes import TableEmbeddings
from langchain_core.documents import Document

from lessons.retrieval.semantic_cache import (
    CacheProbe,
    SemanticCache,
    cache_rates,
    calibrate_threshold,
    contrasts,
    knowledge_base_version,
    normalise_question,
    specifics,
    specifics_conflict,
    unstated_specifics,
)
from lessons.text.language import detect_language

ANGLES = {
    "What port does Atlas use?": 0.0,
    "Which port does Atlas listen on?": 10.0,  # cos 10° = 0.985
    "What was ARR in Q2?": 40.0,  # cos 40° = 0.766 to the first question, cos 30° to the second
    "Atlas 使用哪个端口？": 0.0,  # the same direction as the English question, in another language
    "What was NRR in Q3 2026?": 90.0,
    "What was NRR in Q2 2026?": 91.0,  # another quarter, one degree away: the guard's case
    "How high was NRR in Q3 2026?": 93.0,
    "Can an Atlas backup be restored onto a newer Atlas version?": 180.0,
    "Can an Atlas backup be restored onto an older Atlas version?": 180.5,  # one word apart, cos 0.5° = 0.99996
}
# Each question's vector at its angle (degrees) on a circle, so every cosine similarity is known.
ON_CIRCLE = {text: [float(np.cos(np.radians(a))), float(np.sin(np.radians(a))), 0.0] for text, a in ANGLES.items()}


def cache(tmp_path, embeddings=None, kb="kb-1", threshold=0.95):
    return SemanticCache(tmp_path / "cache.sqlite", embeddings or TableEmbeddings(ON_CIRCLE), kb, threshold=threshold)


def test_normalise_question_ignores_case_spacing_width_and_end_punctuation():
    assert normalise_question("  What is  Atlas? ") == normalise_question("what is atlas")
    assert normalise_question("ＡＴＬＡＳ 端口？") == normalise_question("atlas 端口")
    assert normalise_question("What is Atlas?") != normalise_question("What is Atlas 4?")


def test_a_paraphrase_above_the_threshold_is_served_and_a_near_question_below_it_is_not(tmp_path):
    semantic = cache(tmp_path)
    semantic.store("What port does Atlas use?", "7420", {"sources": ["atlas_whitepaper.pdf"]})
    hit = semantic.lookup("Which port does Atlas listen on?")
    assert hit is not None and hit.answer == "7420" and not hit.exact
    assert hit.similarity == pytest.approx(np.cos(np.radians(10)), abs=1e-6)
    assert hit.metadata == {"sources": ["atlas_whitepaper.pdf"]}
    assert semantic.lookup("What was ARR in Q2?") is None
    assert semantic.nearest("What was ARR in Q2?", guard=False).similarity == pytest.approx(
        np.cos(np.radians(40)), abs=1e-6
    )


def test_specifics_are_the_numbers_versions_codes_and_names_a_question_names():
    assert specifics("Was ARR in Q3 2026 above EUR 15.3 million?") == {"arr", "q3", "2026", "eur", "15.3"}
    assert specifics("Atlas 3.8.1 修复了什么？L3 数据保留多久？") == {"atlas", "3.8.1", "l3"}
    assert specifics("How do I set up JupyterLab? Then what?") == {"jupyterlab"}
    assert specifics("How do I install JupyterLab? Then what?") == {"jupyterlab", "~install"}
    assert specifics("Metal 预编译 wheel 需要什么版本？") == {"metal", "wheel"}


def test_contrasts_are_the_words_that_make_another_question_whatever_the_embedding_says():
    assert contrasts("Can a backup be restored onto a newer version?") == {"newer"}
    assert contrasts("What was the gross revenue retention, annually?") == {"gross", "yearly"}
    assert contrasts("How many days do part-time staff get at the LATEST?") == {"part-time", "newest"}
    assert contrasts("Atlas Ingest 对英文文档默认的分块上限是多少？") == {"english", "max"}
    assert contrasts("如果按月付费，每个用户每月多少欧元？") == {"monthly"}  # 每月 is no period of payment
    assert contrasts("What port does Atlas use?") == frozenset()


def test_specifics_conflict_only_when_each_side_names_one_the_other_lacks():
    lisbon = specifics("What mileage rate does Tidewell pay in Lisbon?")
    assert specifics_conflict(specifics("What mileage rate does Tidewell pay in Rotterdam?"), lisbon)
    assert not specifics_conflict(specifics("What is the per-kilometre allowance in Lisbon?"), lisbon)
    assert not specifics_conflict(specifics("NRR in the third quarter of 2026?"), specifics("NRR in Q3 2026?"))
    assert specifics_conflict(specifics("NRR in Q2 2026?"), specifics("NRR in Q3 2026?"))


def test_a_contrast_only_one_question_names_is_a_conflict():
    newer, older = specifics("Restored onto a newer version?"), specifics("Restored onto an older version?")
    assert specifics_conflict(newer, older)
    assert specifics_conflict(specifics("Restored onto another version?"), newer)  # one side names it
    assert specifics_conflict(specifics("英文文档的分块上限？"), specifics("中文文档的分块上限？"))
    assert specifics_conflict(
        specifics("Pydantic 2.14.3 停止为哪个版本构建？"), specifics("Pydantic 2.14.3 开始为哪个版本构建？")
    )
    assert not specifics_conflict(specifics("The newest release?"), specifics("The latest release?"))  # one sense


def test_a_chinese_contrast_is_a_word_not_one_character_inside_another_word():
    assert contrasts("员工净推荐值（eNPS）是多少？") == frozenset()  # 净推荐值 is NPS, not net against gross
    assert contrasts("怎样把旧索引清理干净？") == frozenset()  # 干净: clean
    # 毛病: a fault; the old guard read 毛 as "gross" and kept this paraphrase from its question
    fault, problem = specifics("Atlas 升级后常见的毛病有哪些？"), specifics("Atlas 升级后常见的问题有哪些？")
    assert not specifics_conflict(fault, problem)
    net, gross = specifics("第三季度的净收入留存率是多少？"), specifics("第三季度的毛收入留存率是多少？")
    assert contrasts("第三季度的净收入留存率是多少？") == {"net"} and specifics_conflict(net, gross)
    assert contrasts("2026 年的毛利率是多少？") == {"gross"}


def test_the_guard_refuses_the_answer_of_the_same_question_with_the_opposite_word(tmp_path):
    semantic = cache(tmp_path, threshold=0.99)
    semantic.store("Can an Atlas backup be restored onto a newer Atlas version?", "yes")
    assert semantic.lookup("Can an Atlas backup be restored onto an older Atlas version?") is None
    hit = semantic.nearest("Can an Atlas backup be restored onto an older Atlas version?", guard=False)
    assert hit.similarity > 0.9999  # what the embedding alone would serve


def test_the_guard_refuses_a_neighbour_that_names_another_quarter(tmp_path):
    semantic = cache(tmp_path, threshold=0.99)
    semantic.store("What was NRR in Q3 2026?", "118%")
    assert semantic.lookup("What was NRR in Q2 2026?") is None
    assert semantic.nearest("What was NRR in Q2 2026?") is None  # the only stored question names Q3, not Q2
    assert semantic.nearest("What was NRR in Q2 2026?", guard=False).answer == "118%"  # cos 1° = 0.9998
    unguarded = SemanticCache(
        tmp_path / "cache.sqlite", TableEmbeddings(ON_CIRCLE), "kb-1", threshold=0.99, guard=False
    )
    assert unguarded.lookup("What was NRR in Q2 2026?").answer == "118%"  # what the guard prevents


def test_the_guard_lets_the_nearest_question_with_the_same_specifics_win(tmp_path):
    semantic = cache(tmp_path, threshold=0.99)
    semantic.store("What was NRR in Q2 2026?", "112%")
    semantic.store("What was NRR in Q3 2026?", "118%")
    hit = semantic.lookup("How high was NRR in Q3 2026?")  # 2° from the Q2 question, 3° from the Q3 one
    assert hit is not None and hit.answer == "118%"
    assert semantic.nearest("How high was NRR in Q3 2026?", guard=False).answer == "112%"


def test_an_entry_another_process_stores_is_seen(tmp_path):
    reader, writer = cache(tmp_path), cache(tmp_path)
    assert reader.lookup("Which port does Atlas listen on?") is None
    writer.store("What port does Atlas use?", "7420")
    assert reader.lookup("Which port does Atlas listen on?").answer == "7420"


def test_the_same_question_normalised_is_served_without_embedding(tmp_path):
    embeddings = TableEmbeddings(ON_CIRCLE)
    semantic = cache(tmp_path, embeddings)
    semantic.store("What port does Atlas use?", "7420")
    calls = embeddings.calls
    hit = semantic.lookup("what port does atlas use")
    assert hit is not None and hit.exact and hit.answer == "7420"
    assert embeddings.calls == calls


def test_an_exact_lookup_serves_only_the_same_question_and_embeds_nothing(tmp_path):
    embeddings = TableEmbeddings(ON_CIRCLE)
    semantic = cache(tmp_path, embeddings)
    semantic.store("What port does Atlas use?", "7420")
    calls = embeddings.calls
    assert semantic.lookup("Which port does Atlas listen on?", exact=True) is None  # served without exact=True
    assert semantic.lookup("  what port does ATLAS use", exact=True).exact
    assert semantic.lookup("", exact=True) is None and embeddings.calls == calls


def test_a_question_in_another_language_never_gets_the_stored_answer(tmp_path):
    semantic = cache(tmp_path)
    semantic.store("What port does Atlas use?", "7420")
    assert semantic.nearest("Atlas 使用哪个端口？") is None  # same vector, other language: nothing to compare with


def test_another_knowledge_base_version_or_embedder_sees_nothing_of_the_old_entries(tmp_path):
    cache(tmp_path).store("What port does Atlas use?", "7420")
    assert cache(tmp_path).lookup("What port does Atlas use?") is not None  # persisted in the file
    assert cache(tmp_path, kb="kb-2").lookup("What port does Atlas use?") is None
    assert cache(tmp_path, kb="kb-2").lookup("Which port does Atlas listen on?") is None
    other = TableEmbeddings(ON_CIRCLE, name="another-embedder")
    assert cache(tmp_path, embeddings=other).lookup("What port does Atlas use?") is None
    assert len(cache(tmp_path)) == 1 and len(cache(tmp_path, kb="kb-2")) == 0


def test_entries_are_json_and_float32_bytes_not_pickle(tmp_path):
    cache(tmp_path).store("What port does Atlas use?", "7420", {"sources": ["a"]})
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        answer, vector = db.execute("SELECT answer, vector FROM semantic_cache").fetchone()
    assert json.loads(answer) == {"answer": "7420", "metadata": {"sources": ["a"]}}
    assert np.frombuffer(vector, dtype=np.float32) == pytest.approx([1.0, 0.0, 0.0])


def test_a_new_entry_is_seen_by_the_next_lookup(tmp_path):
    semantic = cache(tmp_path)
    semantic.store("What was ARR in Q2?", "EUR 14.1 million")
    assert semantic.lookup("Which port does Atlas listen on?") is None
    semantic.store("What port does Atlas use?", "7420")
    assert semantic.lookup("Which port does Atlas listen on?").answer == "7420"


def test_bad_settings_are_refused_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match="no calibrated threshold for the embedder table-embedder"):
        SemanticCache(tmp_path / "c.sqlite", TableEmbeddings(ON_CIRCLE), "kb-1")
    with pytest.raises(ValueError, match="knowledge_base_version"):
        SemanticCache(tmp_path / "c.sqlite", TableEmbeddings(ON_CIRCLE), "", threshold=0.9)
    with pytest.raises(ValueError, match="cosine similarity"):
        SemanticCache(tmp_path / "c.sqlite", TableEmbeddings(ON_CIRCLE), "kb-1", threshold=1.5)
    with pytest.raises(ValueError, match="empty question"):
        cache(tmp_path).store(" ? ", "x")


def test_knowledge_base_version_names_the_chunks_in_any_order():
    chunks = [Document("Atlas listens on port 7420.", metadata={"source": "a"}), Document("ARR grew.", metadata={})]
    version = knowledge_base_version(chunks)
    assert version == knowledge_base_version(chunks[::-1])
    edited = [Document("Atlas listens on port 7421.", metadata={"source": "a"}), chunks[1]]
    assert knowledge_base_version(edited) != version
    assert knowledge_base_version(chunks[:1]) != version
    with pytest.raises(ValueError, match="no chunks"):
        knowledge_base_version([])


def probes(*rows):
    return [CacheProbe(similarity, correct, expected) for similarity, correct, expected in rows]


def test_cache_rates_count_right_and_wrong_answers_served():
    lookups = probes((0.99, True, True), (0.97, False, False), (0.95, True, True), (0.90, False, True))
    rates = cache_rates(lookups, 0.96)
    assert (rates.hits, rates.right_hits, rates.wrong_hits, rates.expected) == (2, 1, 1, 3)
    assert rates.hit_rate == pytest.approx(1 / 3) and rates.wrong_rate == pytest.approx(0.5)


def test_calibration_stops_above_the_highest_wrong_answer_and_sits_halfway():
    lookups = probes((0.99, True, True), (0.98, True, True), (0.97, False, False), (0.96, True, True))
    # Serving 0.96 would serve the wrong 0.97 too (1 wrong of 4 > 1 %): stop at 0.98, halfway to 0.97.
    assert calibrate_threshold(lookups) == pytest.approx(0.975)
    # With a quarter of the answers allowed wrong, all three right ones are served: halfway below 0.96 is nothing.
    assert calibrate_threshold(lookups, max_wrong_rate=0.25) == pytest.approx(0.96)


def test_calibration_serves_nothing_when_the_top_answer_is_wrong():
    lookups = probes((0.99, False, False), (0.90, True, True))
    threshold = calibrate_threshold(lookups)
    assert threshold > 0.99
    assert cache_rates(lookups, threshold).hits == 0
    with pytest.raises(ValueError, match="needs lookups"):
        calibrate_threshold([])


def test_answer_equivalents_join_questions_that_quote_the_same_evidence():
    from types import SimpleNamespace

    from lessons.retrieval.semantic_cache import answer_equivalents

    questions = [
        SimpleNamespace(id="a", evidence=["Port 7420 by default."]),
        SimpleNamespace(id="b", evidence=["Port  7420 by default.", "Another quote"]),
        SimpleNamespace(id="c", evidence=["27 days of leave"]),
    ]
    same = answer_equivalents(questions)
    assert same == {"a": {"a", "b"}, "b": {"a", "b"}, "c": {"c"}}


class BatchTableEmbeddings(TableEmbeddings):
    """The table embedder with a batch method, as the course's e5 embedder has (`embed_queries`)."""

    def __init__(self, vectors):
        super().__init__(vectors)
        self.batches = 0

    def embed_queries(self, texts):
        self.batches += 1
        return [self._vector(text) for text in texts]


def test_store_many_stores_what_one_store_each_would_in_one_batch(tmp_path):
    entries = [("What port does Atlas use?", "7420", {"id": "a"}), ("What was NRR in Q3 2026?", "112 %", None)]
    one_by_one = cache(tmp_path / "one")
    for question, answer, metadata in entries:
        one_by_one.store(question, answer, metadata)
    batch = BatchTableEmbeddings(ON_CIRCLE)
    many = cache(tmp_path / "many", embeddings=batch)
    assert many.store_many(entries) == 2 and batch.batches == 1 and batch.calls == 0
    for question in ("Which port does Atlas listen on?", "How high was NRR in Q3 2026?"):
        assert many.nearest(question) == one_by_one.nearest(question)
    assert len(many) == 2
    with pytest.raises(ValueError, match="empty question"):
        many.store_many([("  ", "x", None)])


def test_a_question_looked_up_twice_is_embedded_once(tmp_path):
    embeddings = TableEmbeddings(ON_CIRCLE)
    semantic = cache(tmp_path, embeddings=embeddings)
    semantic.store("What port does Atlas use?", "7420")
    calls = embeddings.calls
    semantic.nearest("Which port does Atlas listen on?", guard=False)
    semantic.nearest("Which port does Atlas listen on?", guard=True)
    assert semantic.lookup("Which port does Atlas listen on?").answer == "7420"
    assert embeddings.calls == calls + 1


def test_a_lookup_normalises_the_question_once(tmp_path, monkeypatch):
    import lessons.retrieval.semantic_cache as module

    seen = []
    monkeypatch.setattr(module, "normalise_question", lambda q: seen.append(q) or normalise_question(q))
    folds = []
    monkeypatch.setattr(module, "fold_width", lambda text: folds.append(text) or text)
    semantic = cache(tmp_path)
    semantic.store("What port does Atlas use?", "7420")
    seen.clear()
    assert semantic.lookup("Which port does Atlas listen on?").answer == "7420"  # not the same question: embedded
    assert semantic.lookup("what port does atlas use").exact  # the same question: its key
    assert semantic.lookup("WHAT port does Atlas use?", exact=True).exact
    assert seen == ["Which port does Atlas listen on?", "what port does atlas use", "WHAT port does Atlas use?"]
    folds.clear()
    specifics("Restored onto an older Atlas version?")
    assert folds == ["Restored onto an older Atlas version?"]  # its contrasts read the same folded text


def test_a_stored_question_asked_with_itself_left_out_gets_its_nearest_other_question(tmp_path):
    semantic = cache(tmp_path)
    semantic.store("What port does Atlas use?", "7420")
    semantic.store("Which port does Atlas listen on?", "7420 (REST)")
    assert semantic.nearest("What port does Atlas use?").exact  # itself, served without embedding
    other = semantic.nearest("What port does Atlas use?", leave_out=True)
    assert other.question == "Which port does Atlas listen on?" and not other.exact
    assert other.similarity == pytest.approx(np.cos(np.radians(10)), abs=1e-6)
    (tmp_path / "alone").mkdir()
    alone = cache(tmp_path / "alone")
    alone.store("What port does Atlas use?", "7420")
    assert alone.nearest("What port does Atlas use?", leave_out=True) is None  # nothing else to compare with


def test_a_guarded_lookup_detects_the_question_s_language_once(tmp_path, monkeypatch):
    import lessons.retrieval.semantic_cache as module

    detected = []
    monkeypatch.setattr(module, "detect_language", lambda text: detected.append(text) or detect_language(text))
    semantic = cache(tmp_path)
    semantic.store("What was NRR in Q3 2026?", "118 %")
    semantic.store("Atlas 使用哪个端口？", "7420")
    semantic.nearest("What was NRR in Q2 2026?")  # the stored questions' specifics are read once, then kept
    detected.clear()
    assert semantic.nearest("What was NRR in Q2 2026?") is None  # the guard refuses another quarter
    assert detected == ["What was NRR in Q2 2026?"], "the language the bucket and the guard read is detected once"
    assert module.question_language("Ｗｈａｔ ｗａｓ ＮＲＲ ｉｎ Ｑ３ ２０２６？") == "en"  # full-width Latin is Latin
    assert specifics("Ｗｈａｔ ｗａｓ ＮＲＲ ｉｎ Ｑ３ ２０２６？") == specifics("What was NRR in Q3 2026?")


def test_a_negation_only_one_question_holds_is_a_conflict():
    tiers = specifics("Which subscription tiers include Atlas Guard?")
    assert specifics_conflict(specifics("Which subscription tiers do not include Atlas Guard?"), tiers)
    assert specifics_conflict(specifics("Which tiers don't include Atlas Guard?"), tiers)
    entered = specifics("员工点开了钓鱼邮件里的链接，还输入了密码，这属于哪一级安全事件？")
    assert specifics_conflict(specifics("员工点开了钓鱼邮件里的链接但没有输入密码，这属于哪一级安全事件？"), entered)
    assert contrasts("分句时顿号会不会被用作切分点？") == frozenset()  # A不A asks yes or no, it negates nothing
    assert contrasts("不同的分块策略召回率差多少？") == {"recall"}  # 不同: different
    assert not specifics_conflict(specifics("Is the command not found?"), specifics("Why is the command not found?"))


def test_counts_in_words_and_dotted_or_underscored_identifiers_are_specifics():
    assert specifics("Which four functions make up Chroma's core API?") == {"chroma", "api", "4"}
    assert specifics_conflict(specifics("一年里三次被钓鱼测试邮件骗到？"), specifics("一年里两次被钓鱼测试邮件骗到？"))
    assert specifics("第三季度的毛利率是多少？") == {"~gross"}  # an ordinal is no count: 第三季度 asks what Q3 asks
    model = specifics("How can the setting retrieval.rerank.model be overridden?")
    assert {"retrieval.rerank.model", "top_n"} <= model | specifics("Is top_n set?")
    assert specifics_conflict(model, specifics("How can the setting retrieval.rerank.top_n be overridden?"))


def test_a_specific_only_the_asked_question_names_must_be_stated_by_the_stored_answer(tmp_path):
    assert unstated_specifics(specifics("Which command runs it with CUDA?"), frozenset(), "docker run …") == {"cuda"}
    assert not unstated_specifics(specifics("Which four functions?"), frozenset(), "Only 4 functions.")
    vectors = {"Which command runs the server from its Docker image?": [1.0, 0.0],
               "Which command runs the server from its Docker image with CUDA?": [1.0, 0.01],
               "Which command runs the server from the Docker image in Lisbon?": [1.0, -0.01]}  # fmt: skip
    semantic = cache(tmp_path, TableEmbeddings(vectors), threshold=0.99)
    semantic.store("Which command runs the server from its Docker image?", "docker run -p 8000:8000 server")
    assert semantic.lookup("Which command runs the server from its Docker image with CUDA?") is None
    assert semantic.nearest("Which command runs the server from its Docker image with CUDA?", guard=False)
    semantic.store("Which command runs the server from the Docker image in Lisbon?", "Lisbon: docker run server")
    hit = semantic.lookup("Which command runs the server from its Docker image with CUDA?")
    assert hit is None  # neither answer names CUDA
