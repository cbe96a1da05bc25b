"""The one measurement harness (lessons.evaluation.harness) and the report helpers (lessons.core.reports)."""

import pytest

from lessons.core.fakes import ScriptedChatModel
from lessons.core.models import LocalServerCrashed
from lessons.core.reports import mean_or_none, mean_present, share_where
from lessons.evaluation.harness import measure


def test_a_measurement_meters_the_calls_inside_it_and_times_them():
    model = ScriptedChatModel(default="yes")
    measured = measure(lambda: [model.invoke("q?").content for _ in range(2)])
    assert measured.value == ["yes", "yes"] and measured.error is None
    assert measured.meter.counts()["llm_calls"] == 2 and measured.seconds >= 0
    assert list(measured.cost())[:2] == ["seconds", "llm_calls"]


def test_an_error_is_recorded_only_when_asked_and_a_crashed_server_always_stops_the_run():
    def fail():
        raise ValueError("x" * 500)

    measured = measure(fail, catch=True)
    assert measured.value is None and measured.error == "ValueError: " + "x" * 300
    with pytest.raises(ValueError):
        measure(fail)

    def crash():
        raise LocalServerCrashed("the local model server crashed")

    with pytest.raises(LocalServerCrashed):
        measure(crash, catch=True)


def test_shares_means_and_percentages_say_none_for_nothing():
    assert share_where([1, 0, 2, None], lambda v: v) == 0.5 and share_where([], bool) is None
    assert mean_or_none([1, 2]) == 1.5 and mean_or_none([]) is None
    assert mean_present([1.0, None, float("nan"), 3.0]) == 2.0 and mean_present([None]) is None
