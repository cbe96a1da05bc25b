"""The service load benchmark (benchmarks/bench_service.py) starts the service through `service.client.ServiceProcess`,
the one wait for /v1/health: a service that cannot start is reported with its own log, not a bare "did not start"."""

from __future__ import annotations

import pytest

from benchmarks.bench_service import start


def test_a_service_that_cannot_start_is_reported_with_its_log(tmp_path):
    with pytest.raises(RuntimeError) as failed:
        start("sideways", tmp_path)  # not a reranker setting: the server exits while reading its settings
    message, log = str(failed.value), (tmp_path / "service.log").read_text()
    assert "AGENTIC_RAG_SERVICE_RERANKER='sideways'" in log, log
    assert log.strip() in message, message  # the server's own words, not only that it did not start
