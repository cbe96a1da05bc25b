"""Query routing: the embedding router's scores, its "neither" threshold and calibration; the chat model's
structured routing decision against a scripted model."""

import numpy as np
import pytest
from fakes import TableEmbeddings

from lessons.core.embeddings import unit_vectors
from lessons.core.fakes import ScriptedChatModel
from lessons.retrieval.routing import (
    NEITHER,
    EmbeddingRouter,
    LLMRouter,
    balanced_accuracy,
    calibrate_neither_threshold,
    decide,
    route_schema,
)


def unit(*values):
    return unit_vectors(np.asarray(values, dtype=np.float32))


VECTORS = {
    "course": np.stack([unit(1, 0, 0), unit(1, 0.2, 0), unit(0.2, 1, 0)]),
    "packages": np.stack([unit(0, 0, 1), unit(0, 0.1, 1)]),
}
QUESTIONS = {"atlas port?": [1, 0.1, 0], "chroma api?": [0, 0.05, 1], "boil an egg?": [0.3, -1, -0.2]}


def test_decide_takes_the_best_base_or_neither_below_the_threshold():
    assert decide({"course": 0.9, "packages": 0.7}, 0.8) == "course"
    assert decide({"course": 0.75, "packages": 0.7}, 0.8) == NEITHER
    with pytest.raises(ValueError, match="at least one knowledge base"):
        decide({}, 0.5)


def test_the_embedding_router_scores_each_base_by_its_k_nearest_chunks():
    router = EmbeddingRouter(VECTORS, TableEmbeddings(QUESTIONS), threshold=0.5, k=2)
    decision = router.route("atlas port?")
    assert decision.route == "course"
    query = unit(1, 0.1, 0)
    nearest_two = sorted(VECTORS["course"] @ query)[-2:]
    assert decision.scores["course"] == pytest.approx(float(np.mean(nearest_two)), abs=1e-6)
    assert router.route("chroma api?").route == "packages"
    assert router.route("boil an egg?").route == NEITHER


def test_the_embedding_router_refuses_bad_settings():
    embeddings = TableEmbeddings(QUESTIONS)
    with pytest.raises(ValueError, match="no calibrated threshold for the embedder table-embedder"):
        EmbeddingRouter(VECTORS, embeddings)
    with pytest.raises(ValueError, match="no chunks to route to: packages"):
        EmbeddingRouter({**VECTORS, "packages": np.empty((0, 3))}, embeddings, threshold=0.5)
    with pytest.raises(ValueError, match="none of them named neither"):
        EmbeddingRouter({**VECTORS, NEITHER: VECTORS["course"]}, embeddings, threshold=0.5)
    with pytest.raises(ValueError, match="at least 1"):
        EmbeddingRouter(VECTORS, embeddings, threshold=0.5, k=0)


def test_a_question_the_embedder_turns_into_a_zero_vector_is_an_error_not_a_zero_score():
    embeddings = TableEmbeddings({"?": [0.0, 0.0, 0.0]})
    router = EmbeddingRouter(VECTORS, embeddings, threshold=0.5)
    with pytest.raises(ValueError, match=r"^the embedder table-embedder turned '\?' into a zero or non-finite vector"):
        router.scores("?")


def test_balanced_accuracy_weighs_each_route_alike():
    expected = ["course"] * 8 + [NEITHER] * 2
    predicted = ["course"] * 8 + ["course", NEITHER]
    assert balanced_accuracy(expected, predicted) == pytest.approx((1.0 + 0.5) / 2)
    with pytest.raises(ValueError):
        balanced_accuracy(["course"], [])


def test_the_neither_threshold_separates_off_corpus_questions_halfway():
    scored = [
        ({"course": 0.90, "packages": 0.5}, "course"),
        ({"course": 0.86, "packages": 0.5}, "course"),
        ({"course": 0.5, "packages": 0.84}, "packages"),
        ({"course": 0.80, "packages": 0.6}, NEITHER),
        ({"course": 0.70, "packages": 0.6}, NEITHER),
    ]
    threshold = calibrate_neither_threshold(scored)
    assert threshold == pytest.approx(0.82)  # halfway between the lowest in-corpus (0.84) and highest off (0.80)
    assert [decide(scores, threshold) for scores, _ in scored] == [route for _, route in scored]


def test_the_llm_router_returns_the_models_structured_choice():
    model = ScriptedChatModel(responses=[{"route": "packages"}])
    router = LLMRouter(model, {"course": "company documents", "packages": "package READMEs"})
    assert router.route("How do I install chromadb?").route == "packages"
    prompt = "\n".join(str(message.content) for message in model.calls[0]["messages"])
    assert "company documents" in prompt and "package READMEs" in prompt and "How do I install chromadb?" in prompt


def test_the_llm_router_shows_the_model_labels_and_answers_with_the_names():
    model = ScriptedChatModel(responses=[{"route": "company_documents"}])
    router = LLMRouter(
        model, {"course": "Tidewell documents", "packages": "READMEs"}, labels={"course": "company_documents"}
    )
    assert router.route("What port does Atlas use?").route == "course"
    prompt = "\n".join(str(message.content) for message in model.calls[0]["messages"])
    assert "- company_documents: Tidewell documents" in prompt and "- packages: READMEs" in prompt
    with pytest.raises(ValueError):
        router.schema(route="course")  # the model answers with labels only


def test_the_llm_router_names_a_label_that_collides():
    bases = {"course": "Tidewell documents", "packages": "READMEs"}
    with pytest.raises(ValueError, match="course, packages share the label docs"):
        LLMRouter(ScriptedChatModel(), bases, labels={"course": "docs", "packages": "docs"})
    with pytest.raises(ValueError, match="give packages another label"):
        LLMRouter(ScriptedChatModel(), bases, labels={"packages": NEITHER})
    with pytest.raises(ValueError, match="none of them named neither"):
        LLMRouter(ScriptedChatModel(), {NEITHER: "anything"})


def test_the_llm_router_asks_again_when_the_choice_is_not_a_route():
    model = ScriptedChatModel(responses=[{"route": "wikipedia"}, {"route": NEITHER}])
    router = LLMRouter(model, {"course": "company documents"})
    assert router.route("How long do I boil an egg?").route == NEITHER
    assert len(model.calls) == 2


def test_the_route_schema_accepts_only_the_routes_and_neither():
    schema = route_schema(["course", "packages"])
    assert schema(route="course").route == "course" and schema(route=NEITHER).route == NEITHER
    with pytest.raises(ValueError):
        schema(route="other")
    with pytest.raises(ValueError, match="none of them named neither"):
        LLMRouter(ScriptedChatModel(), {NEITHER: "x"})
