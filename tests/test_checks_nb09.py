"""Notebook 09's checks pass on the course's own answers (lessons.retrieval) and fail on blanks and near misses."""

from checks.nb09 import check_conflict, check_matches, check_route_of
from lessons.retrieval.metadata_filter import matches
from lessons.retrieval.routing import decide
from lessons.retrieval.semantic_cache import specifics_conflict


def test_the_route_check():
    assert check_route_of(decide)
    assert not check_route_of(lambda scores, threshold: None)
    assert not check_route_of(lambda scores, threshold: max(scores, key=scores.get))  # never "neither"

    def strict(scores, threshold):
        best = max(scores, key=scores.get)
        return best if scores[best] > threshold else "neither"

    assert not check_route_of(strict)


def test_the_filter_check():
    assert check_matches(matches)
    assert not check_matches(lambda metadata, where: None)
    assert not check_matches(lambda metadata, where: any(metadata.get(f) in v for f, v in where.items()))
    assert not check_matches(lambda metadata, where: all(metadata.get(f, v[0]) in v for f, v in where.items()))


def test_the_guard_check():
    assert check_conflict(specifics_conflict)
    assert not check_conflict(lambda asked, stored: None)
    assert not check_conflict(lambda asked, stored: asked != stored)
    # the rule before the contrast words: each names a specific the other lacks ("~older" against nothing passes)
    assert not check_conflict(lambda asked, stored: bool(asked - stored) and bool(stored - asked))

    def contrast_of_the_question_only(asked, stored):  # "~older" asked against nothing stored, not the other way
        return any(n.startswith("~") for n in asked - stored) or (bool(asked - stored) and bool(stored - asked))

    assert not check_conflict(contrast_of_the_question_only)

    def every_contrast(asked, stored):  # a contrast in both questions conflicts too
        return any(n.startswith("~") for n in asked | stored) or (bool(asked - stored) and bool(stored - asked))

    assert not check_conflict(every_contrast)
