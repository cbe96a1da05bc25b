"""The question-by-question comparison of benchmarks/bench_rerank_fusion.py (no model runs)."""

import pandas as pd

from benchmarks.bench_rerank_fusion import (
    DEFAULT,
    METRICS,
    SWEEP,
    comparisons_to_make,
    factory_name,
    factory_rows,
    paired,
)
from lessons.retrieval.rerank import DEFAULT_FIRST_STAGE_WEIGHT


def rows(pipeline: str, recalls: list[float], mrrs: list[float], language: str = "zh") -> list[dict]:
    return [
        {"corpus": "heldout", "language": language, "pipeline": pipeline, "id": f"q{i}", METRICS[0]: r, METRICS[1]: m}
        for i, (r, m) in enumerate(zip(recalls, mrrs))
    ]


def test_paired_counts_higher_and_lower_questions_and_brackets_the_mean_difference():
    frame = pd.DataFrame(
        rows("a", [1, 1, 0, 1], [1.0, 0.5, 0.0, 1.0])
        + rows("b", [1, 0, 1, 1], [0.5, 0.5, 1.0, 1.0])
        + rows("a", [0, 0, 0, 0], [0.0] * 4, language="en")  # another cell is left out
    )
    out = paired(frame, "heldout", "zh", "a", "b")
    assert out["questions"] == 4
    assert (out["recall@5"]["higher"], out["recall@5"]["lower"], out["recall@5"]["mean difference"]) == (1, 1, 0.0)
    mrr = out["MRR@10"]
    assert (mrr["higher"], mrr["lower"], mrr["mean difference"]) == (1, 1, -0.125)
    low, high = mrr["95% interval"]
    # a resampled mean of the differences 0.5, 0, -1, 0 lies between -1 and 0.5, and 95 % of them around -0.125
    assert -1 <= low < -0.125 < high <= 0.5


def test_the_default_configuration_is_run_once_as_the_default_row():
    assert factory_name(DEFAULT_FIRST_STAGE_WEIGHT) == DEFAULT  # not a second row "…, w=0.2" of the same pipeline
    assert factory_name(0.0) == f"{DEFAULT}, w=0.0"
    rows = factory_rows()
    # one row per configuration: the default's weight appears once, under the default's name
    assert sorted(rows.values()) == sorted({*SWEEP, DEFAULT_FIRST_STAGE_WEIGHT})
    assert rows[DEFAULT] == DEFAULT_FIRST_STAGE_WEIGHT
    assert not any(name.endswith(f"w={DEFAULT_FIRST_STAGE_WEIGHT}") for name in rows)
    pairs = comparisons_to_make()
    assert (DEFAULT, DEFAULT) not in pairs and (DEFAULT, "hybrid (plain)") in pairs
    assert len(pairs) == 2 * len(rows) - 1


def test_the_offline_replay_orders_candidates_as_the_reranker_does():
    import random as rnd

    from langchain_core.documents import Document

    from benchmarks.bench_rerank_fusion import rrf_order
    from lessons.retrieval.rerank import BaseCrossEncoder, ScoredCrossEncoderReranker

    class Table(BaseCrossEncoder):
        def __init__(self, by_text):
            self.by_text = by_text

        def score(self, text_pairs):
            return [self.by_text[passage] for _, passage in text_pairs]

    generator = rnd.Random(3)
    for weight in (0.0, 0.2, 0.5):
        for _ in range(20):
            scores = [generator.choice([0.0, 1.0, 2.5, -1.0, generator.random()]) for _ in range(12)]  # with ties
            by_text = {f"chunk {i}": s for i, s in enumerate(scores)}
            reranker = ScoredCrossEncoderReranker(model=Table(by_text), top_n=12, first_stage_weight=weight)
            live = reranker.compress_documents([Document(text) for text in by_text], "q")
            assert [int(d.page_content.split()[1]) for d in live] == rrf_order(list(range(12)), scores, weight)


def test_the_replay_keeps_the_first_stage_route_and_reads_each_route_to_its_depth():
    from benchmarks.bench_rerank_fusion import K, replayed

    record = {"relevant": [False] * 20, "ce": [float(i) for i in range(20)], "use": [float(i) for i in range(20)]}
    assert replayed({**record, "route": "first stage"}, "rrf", {"w": 0.0}) == list(range(K))
    # the cross-encoder reads all 20 (the last scores highest); the cross-lingual route reorders the top 10 only
    assert replayed({**record, "route": "cross-encoder"}, "rrf", {"w": 0.0}) == list(range(19, 9, -1))
    assert replayed({**record, "route": "cross-lingual"}, "rrf", {"w": 0.0}) == list(range(9, -1, -1))
    assert replayed({**record, "route": "cross-encoder"}, "depth", {"w": 0.0, "d": 5}) == [4, 3, 2, 1, 0, 5, 6, 7, 8, 9]


def test_kept_in_top_raises_the_first_stage_head_only_when_it_fell_below():
    from benchmarks.bench_rerank_fusion import kept_in_top

    assert kept_in_top([3, 4, 5, 6, 7, 0, 1], [0], 5) == [3, 4, 5, 6, 0, 7, 1]
    assert kept_in_top([3, 0, 4, 5, 6, 7, 1], [0], 5) == [3, 0, 4, 5, 6, 7, 1]  # already in the top 5
    assert kept_in_top([3, 4, 5, 6, 7, 0, 1], [0, 1], 4) == [3, 4, 5, 0, 1, 6, 7]
    assert kept_in_top([3, 4, 5, 6, 7, 0, 1], [0], 1) == [0, 3, 4, 5, 6, 7, 1]


def test_replay_scores_count_evidence_in_the_top_five_and_the_first_relevant_rank():
    from benchmarks.bench_rerank_fusion import replay_scores

    relevant = [False, True, False, False, False, False, True]
    held = [[], [0], [], [], [], [], [1]]
    assert replay_scores(relevant, held, 2, [0, 1, 2, 3, 4, 5, 6]) == {"recall@5": 0.5, "MRR@10": 0.5}
    assert replay_scores(relevant, held, 2, [6, 1, 0, 2, 3, 4, 5]) == {"recall@5": 1.0, "MRR@10": 1.0}
    assert replay_scores(relevant, held, 2, [0, 2, 3, 4, 5]) == {"recall@5": 0.0, "MRR@10": 0.0}


def test_fused_order_is_the_reranker_fusion_for_two_lists_and_one_list_alone_is_its_order():
    import random as rnd

    from benchmarks.bench_rerank_fusion import fused_order, rrf_order

    generator = rnd.Random(5)
    head = list(range(12))
    for weight in (0.0, 0.1, 0.2, 0.5):
        for _ in range(20):
            scores = [generator.choice([0.0, 1.0, -1.0, generator.random()]) for _ in head]  # with ties
            assert fused_order(head, [(None, weight), (scores, 1 - weight)]) == rrf_order(head, scores, weight)
    assert fused_order(head, [(None, 1.0)]) == head
    # two score lists at equal shares that disagree: first and last in one, last and first in the other tie (ties keep
    # the first stage's order) and beat the candidate both rank in the middle; the one both rank last comes last
    assert fused_order([0, 1, 2, 3], [([0, 3, 2, 1], 0.5), ([0, 1, 2, 3], 0.5)]) == [1, 3, 2, 0]


def test_the_cross_lingual_replay_orders_candidates_as_the_embedding_reranker_does():
    import math
    import random as rnd

    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    from benchmarks.bench_rerank_fusion import K, cross_order
    from lessons.retrieval.rerank import EmbeddingReranker

    class Table(Embeddings):  # unit vectors at angle θ from the question: cosine cos θ
        def __init__(self, angles):
            self.angles = angles

        def embed_query(self, text):
            return [1.0, 0.0]

        def embed_documents(self, texts):
            return [[math.cos(self.angles[t]), math.sin(self.angles[t])] for t in texts]

    generator = rnd.Random(7)
    for weight, depth in ((0.0, 10), (0.2, 10), (0.5, 5), (0.3, 20)):
        angles = {f"chunk {i}": generator.choice([0.1, 0.5, generator.random()]) for i in range(20)}
        live = EmbeddingReranker(embeddings=Table(angles), depth=depth, first_stage_weight=weight, top_n=K)
        documents = [Document(text) for text in angles]
        expected = [int(d.page_content.split()[1]) for d in live.compress_documents(documents, "q")]
        record = {"relevant": [False] * 20, "use": [math.cos(a) for a in angles.values()]}
        assert cross_order(record, "use", {"w": weight, "d": depth}) == expected
