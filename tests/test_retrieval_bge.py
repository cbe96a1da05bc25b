"""The packaged bge-small-en-v1.5 embedder: verified files, unit vectors, and the answer nearer the question."""

import numpy as np
import pytest

from lessons.retrieval.cross_encoder import BgeSmallEmbeddings, verified_model_dir

QUESTION = "On which port does Atlas Server expose its APIs by default?"
ANSWER = "Atlas Server exposes the REST and gRPC APIs on port 7420 by default."
OFF_TOPIC = "Employees receive 25 days of paid annual leave per calendar year."


def test_its_files_are_verified_against_their_pinned_checksums():
    assert (verified_model_dir("bge_small_en") / "model.onnx").is_file()


def test_the_answer_is_nearer_the_question_than_an_off_topic_passage():
    model = BgeSmallEmbeddings()
    passages = np.array(model.embed_documents([ANSWER, OFF_TOPIC]))
    query = np.array(model.embed_query(QUESTION))
    assert passages.shape == (2, BgeSmallEmbeddings.dim)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    on_topic, off_topic = passages @ query
    assert on_topic > off_topic + 0.2


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="max_tokens"):
        BgeSmallEmbeddings(max_tokens=4)
