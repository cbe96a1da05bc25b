"""The one sampler, `lessons.ingest.questions.balanced_sample`: what it promises (balance across languages and
question types, seeded draws, included items, order kept) for every notebook and the evaluation command."""

from __future__ import annotations

import random
from types import SimpleNamespace

from lessons.ingest.questions import balanced_sample


def ids(items):
    return [i.id for i in items]


def item(qid, language, kind="fact"):
    return SimpleNamespace(id=qid, language=language, type=kind)


ITEMS = [item(f"en-{i}", "en", ("fact", "table", "multi_hop")[i % 3]) for i in range(12)] + [
    item(f"zh-{i}", "zh", ("fact", "table")[i % 2]) for i in range(8)
]


def test_the_sample_is_balanced_across_languages_chinese_taking_the_odd_one():
    sample = balanced_sample(ITEMS, 7, seed=3)
    assert [i.language for i in sample] == ["en"] * 3 + ["zh"] * 4
    assert len({i.id for i in sample}) == 7


def test_both_copies_draw_the_same_sample_odd_or_even(monkeypatch):
    """The English and the Chinese copy's quick runs (n=1) ask the same Chinese question: the second copy's chat-model
    calls come from the LLM cache, and the Chinese copy shows no English question."""
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    english = {n: ids(balanced_sample(ITEMS, n, seed=3)) for n in (1, 6, 7)}
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    chinese = {n: ids(balanced_sample(ITEMS, n, seed=3)) for n in (1, 6, 7)}
    assert chinese == english
    assert english[1][0].startswith("zh-")
    # Named languages keep their order; a language with no items takes no odd one.
    assert [i.language for i in balanced_sample(ITEMS, 1, seed=3, languages=("en", "zh"))] == ["en"]
    assert [i.language for i in balanced_sample(ITEMS[:12], 1, seed=3)] == ["en"]


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


def test_take_turns_spreads_a_table_over_its_groups_the_readers_language_first(monkeypatch, tmp_path):
    """Notebook 09's order: one row of every group per turn, the reader's language first within a turn."""
    import pandas as pd

    from lessons.ingest.questions import take_turns

    table = pd.DataFrame(
        {
            "id": ["c-en-1", "c-en-2", "c-en-3", "p-en-1", "c-zh-1", "c-zh-2", "p-zh-1"],
            "language": ["en", "en", "en", "en", "zh", "zh", "zh"],
            "corpus": ["course", "course", "course", "packages", "course", "course", "packages"],
        }
    )
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    monkeypatch.chdir(tmp_path)  # no notebook folder decides the language
    ordered = list(take_turns(table, ["language", "corpus"])["id"])
    assert ordered == ["c-zh-1", "p-zh-1", "c-en-1", "p-en-1", "c-zh-2", "c-en-2", "c-en-3"]
    assert list(take_turns(table, ["language", "corpus"], 3)["id"]) == ordered[:3]
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    assert list(take_turns(table, ["language", "corpus"], 2)["id"]) == ["c-en-1", "p-en-1"]
