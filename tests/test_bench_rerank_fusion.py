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
