"""The one sampler, `lessons.ingest.questions.balanced_sample` (issue 20).

It replaced four samplers: `sample_by_language` (notebooks 04, 05, 07), `stratified_sample` (notebook 02,
benchmarks/bench_retrieval.py), the test-set `balanced_sample` (notebook 06, `python -m lessons.evaluation`)
and `pick_chunks` (test-set generation). Their code is kept below, as it was, so that these tests show
the new sampler picks the same questions for every call the notebooks make, at full and quick sizes,
and for many other seeds and sizes.
"""

from __future__ import annotations

import random
from collections import defaultdict
from types import SimpleNamespace

import pytest

from lessons.ingest.corpus import load_gold
from lessons.ingest.questions import balanced_sample

# --- the samplers as they were before the merge ------------------------------------------------------


def old_sample_by_language(questions, n, seed):
    rng = random.Random(seed)
    english = [q for q in questions if q.language == "en"]
    chinese = [q for q in questions if q.language == "zh"]
    half = n // 2
    return rng.sample(english, min(n - half, len(english))) + rng.sample(chinese, min(half, len(chinese)))


def old_stratified_sample(questions, n, seed=0, include=()):
    rng = random.Random(seed)
    by_language = defaultdict(list)
    for question in questions:
        if question.answerable:
            by_language[question.language].append(question)
    languages = sorted(by_language)
    sample = []
    for position, language in enumerate(languages):
        share = n // len(languages) + (1 if position < n % len(languages) else 0)
        forced = [q for q in by_language[language] if q.id in include][:share]
        rest = [q for q in by_language[language] if q not in forced]
        sample += forced + _old_round_robin_by_type(rest, share - len(forced), rng)
    return sample


def _old_round_robin_by_type(questions, n, rng):
    by_type = defaultdict(list)
    for question in questions:
        by_type[question.type].append(question)
    for group in by_type.values():
        rng.shuffle(group)
    types = sorted(by_type)
    taken = []
    while len(taken) < min(n, len(questions)):
        for kind in types:
            if by_type[kind] and len(taken) < n:
                taken.append(by_type[kind].pop())
    return taken


def old_balanced_sample(items, n_in_kb, n_out_of_kb, seed=0):
    rng = random.Random(seed)
    chosen = set()
    for answerable, n in ((True, n_in_kb), (False, n_out_of_kb)):
        pool = [i for i in items if i.answerable == answerable]
        languages = sorted({i.language for i in pool})
        for position, language in enumerate(languages):
            share = n // len(languages) + (1 if position < n % len(languages) else 0)
            by_type = {}
            for item in pool:
                if item.language == language:
                    by_type.setdefault(item.type, []).append(item)
            for group in by_type.values():
                rng.shuffle(group)
            taken = 0
            while taken < share and any(by_type.values()):
                for kind in sorted(by_type):
                    if by_type[kind] and taken < share:
                        chosen.add(by_type[kind].pop().id)
                        taken += 1
    return [i for i in items if i.id in chosen]


def old_pick_chunks(chunks, n, seed=0):
    rng = random.Random(seed)
    by_language = {}
    for chunk in chunks:
        by_language.setdefault(chunk.language, []).append(chunk)
    languages = sorted(by_language)
    picked = []
    for position, language in enumerate(languages):
        share = n // len(languages) + (1 if position < n % len(languages) else 0)
        picked += rng.sample(by_language[language], min(share, len(by_language[language])))
    return picked


def old_measure_sample(questions, n_multi_hop, n_table, seed=0):
    sample = []
    for kind, n in (("multi_hop", n_multi_hop), ("table", n_table)):
        sample += old_sample_by_language([q for q in questions if q.type == kind], n, seed)
    return sample + [q for q in questions if q.type == "contradiction"]


# --- the new sampler, called as the notebooks and the evaluation command now call it -------------------


def new_sample_by_language(questions, n, seed):
    """Notebooks 04, 05 and 07 (and `measure_sample`): `balanced_sample(pool, n, SEED)`."""
    return balanced_sample(questions, n, seed)


def new_stratified_sample(questions, n, seed=0, include=()):
    """Notebook 02 and benchmarks/bench_retrieval.py."""
    return balanced_sample([q for q in questions if q.answerable], n, seed, by_type=True, include=include)


def new_balanced_sample(items, n_in_kb, n_out_of_kb, seed=0):
    """Notebook 06 and `python -m lessons.evaluation` ([sample] in_kb, out_of_kb, seed)."""
    return balanced_sample(items, n_in_kb, seed, n_out_of_kb=n_out_of_kb, by_type=True, in_order=True)


def ids(items):
    return [getattr(i, "id", None) or i.page_content for i in items]


@pytest.fixture(scope="module")
def gold():
    return load_gold()


@pytest.fixture(scope="module")
def packages_gold():
    return load_gold(corpus="packages")


def test_the_notebooks_calls_pick_the_same_questions_as_before(gold):
    """Every sampler call of notebooks 02, 04, 05 and 07, at the sizes of a full run and of a quick run."""
    from lessons.evaluation.deep_research_eval import measure_sample

    answerable = [q for q in gold if q.answerable]
    out_of_kb = [q for q in gold if not q.answerable]
    for n in (4, 2):  # notebook 02: N_LLM_QUESTIONS, full and quick
        assert ids(new_stratified_sample(gold, n, 2, include=["en-041"])) == ids(
            old_stratified_sample(gold, n, 2, include=["en-041"])
        )
    for n_in, n_out, n_cal in ((6, 6, 6), (1, 1, 2)):  # notebook 04
        for pool, n in ((answerable, n_in), (out_of_kb, n_out)):
            assert ids(new_sample_by_language(pool, n, 7)) == ids(old_sample_by_language(pool, n, 7))
        sample = old_sample_by_language(answerable, n_in, 7) + old_sample_by_language(out_of_kb, n_out, 7)
        held_out = [q for q in gold if q not in sample]
        for pool in ([q for q in held_out if q.answerable], [q for q in held_out if not q.answerable]):
            assert ids(new_sample_by_language(pool, n_cal, 7)) == ids(old_sample_by_language(pool, n_cal, 7))
    for n_in, n_out, n_drill, n_rel in ((10, 6, 12, 24), (1, 1, 1, 2)):  # notebook 05
        pools = [
            ([q for q in gold if q.answerable], n_rel - n_rel // 2, 6),
            (out_of_kb, n_rel // 2, 6),
            ([q for q in gold if q.type in ("fact", "table")], n_drill, 5),
            ([q for q in gold if q.answerable and q.type != "contradiction"], n_in, 5),
            (out_of_kb, n_out, 5),
        ]
        for pool, n, seed in pools:
            assert ids(new_sample_by_language(pool, n, seed)) == ids(old_sample_by_language(pool, n, seed))
    search_pool = [q for q in gold if q.type in ("multi_hop", "table")]
    for n_search, n_multi, n_table in ((36, 2, 2), (4, 1, 0), (36, 4, 4)):  # notebook 07
        assert ids(new_sample_by_language(search_pool, n_search, 7)) == ids(
            old_sample_by_language(search_pool, n_search, 7)
        )
        assert ids(measure_sample(gold, n_multi, n_table, seed=7)) == ids(old_measure_sample(gold, n_multi, n_table, 7))


def test_the_test_set_sample_is_the_same_as_before(gold, packages_gold):
    """Notebook 06 and the evaluation command: both corpora, full (8/4) and quick (1/1) sizes, and others."""
    from lessons.evaluation.testset import from_gold

    for questions in (gold, packages_gold):
        items = from_gold(questions, [])
        for n_in, n_out in ((1, 1), (8, 4), (0, 3), (5, 0), (40, 40)):
            for seed in (0, 6, 11):
                assert ids(new_balanced_sample(items, n_in, n_out, seed)) == ids(
                    old_balanced_sample(items, n_in, n_out, seed)
                )


@pytest.mark.parametrize("seed", range(12))
def test_many_seeds_and_sizes_pick_as_before(gold, seed):
    """Beyond the notebooks' own calls: every size up to past the pool, odd and even, on filtered pools."""
    pools = [gold, [q for q in gold if q.type == "table"], [q for q in gold if not q.answerable]]
    for pool in pools:
        for n in (0, 1, 2, 3, 7, 20, 500):
            assert ids(new_sample_by_language(pool, n, seed)) == ids(old_sample_by_language(pool, n, seed))
    # A pool with one language: `sample_by_language` still gave Chinese its (empty) half; `languages` keeps that.
    english = [q for q in gold if q.language == "en"]
    for n in (1, 2, 7):
        assert ids(balanced_sample(english, n, seed, languages=("en", "zh"))) == ids(
            old_sample_by_language(english, n, seed)
        )
    for pool in pools + [english]:
        for n in (0, 1, 2, 3, 7, 20, 500):
            assert ids(new_stratified_sample(pool, n, seed, include=["en-041", "zh-003"])) == ids(
                old_stratified_sample(pool, n, seed, include=["en-041", "zh-003"])
            )


def test_chunk_picks_are_the_same_as_before():
    """`pick_chunks` (test-set generation) now calls the sampler with the chunk's language."""
    from langchain_core.documents import Document

    from lessons.evaluation.testset import pick_chunks

    texts = [(f"English text number {i}. " * 12, "en") for i in range(9)] + [
        (f"第{i}段中文文本，讲的是产品的说明。" * 12, "zh") for i in range(6)
    ]
    chunks = [Document(page_content=text, metadata={"language": lang, "chunk_id": f"c{i}"})
              for i, (text, lang) in enumerate(texts)]  # fmt: skip
    reference = [SimpleNamespace(page_content=c.page_content, language=c.metadata["language"]) for c in chunks]
    for n in (0, 1, 4, 5, 30):
        for seed in (0, 1, 7):
            assert ids(pick_chunks(chunks, n, seed=seed)) == ids(old_pick_chunks(reference, n, seed))


# --- what the sampler promises ------------------------------------------------------------------------


def item(qid, language, kind="fact"):
    return SimpleNamespace(id=qid, language=language, type=kind)


ITEMS = [item(f"en-{i}", "en", ("fact", "table", "multi_hop")[i % 3]) for i in range(12)] + [
    item(f"zh-{i}", "zh", ("fact", "table")[i % 2]) for i in range(8)
]


def test_the_sample_is_balanced_across_languages_english_taking_the_odd_one():
    sample = balanced_sample(ITEMS, 7, seed=3)
    assert [i.language for i in sample] == ["en"] * 4 + ["zh"] * 3
    assert len({i.id for i in sample}) == 7


def test_the_sample_is_seeded_and_deterministic():
    assert ids(balanced_sample(ITEMS, 6, seed=1)) == ids(balanced_sample(list(ITEMS), 6, seed=1))
    draws = {tuple(ids(balanced_sample(ITEMS, 6, seed=s))) for s in range(10)}
    assert len(draws) > 1, "the seed must change the draw"


def test_a_short_language_gives_what_it_has_and_is_not_topped_up():
    items = ITEMS[:12] + ITEMS[12:13]  # one Chinese item
    sample = balanced_sample(items, 6, seed=0)
    assert sorted(i.language for i in sample) == ["en"] * 3 + ["zh"]
    # Named languages: a language with no item still takes its share (as `sample_by_language` did).
    only_english = balanced_sample(ITEMS[:12], 6, seed=0, languages=("en", "zh"))
    assert [i.language for i in only_english] == ["en"] * 3


def test_by_type_spreads_the_sample_over_question_types():
    sample = balanced_sample(ITEMS, 6, seed=5, by_type=True)
    english = [i.type for i in sample if i.language == "en"]
    chinese = [i.type for i in sample if i.language == "zh"]
    assert sorted(english) == ["fact", "multi_hop", "table"]
    assert sorted(chinese) == ["fact", "table", "table"] or sorted(chinese) == ["fact", "fact", "table"]


def test_included_items_are_always_taken_and_count_towards_their_share():
    for seed in range(5):
        sample = balanced_sample(ITEMS, 4, seed=seed, include=["en-11", "zh-7"])
        assert {"en-11", "zh-7"} <= {i.id for i in sample}
        assert [i.language for i in sample] == ["en", "en", "zh", "zh"]


def test_in_order_keeps_the_order_of_the_items_and_a_shared_stream_continues():
    sample = balanced_sample(ITEMS, 8, seed=2, in_order=True)
    assert ids(sample) == [i.id for i in ITEMS if i in sample]
    rng = random.Random(4)
    first, second = balanced_sample(ITEMS, 4, rng), balanced_sample(ITEMS, 4, rng)
    assert ids(first) == ids(balanced_sample(ITEMS, 4, 4))
    assert ids(second) != ids(first)
