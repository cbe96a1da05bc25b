"""Shared fixtures: isolated settings per test, and a local model server that is shared, then stopped."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@pytest.fixture
def fresh_settings(tmp_path, monkeypatch):
    """Settings read anew from a clean environment with caches under tmp_path; returns a re-reader."""
    from lessons.core import settings

    for name in list(os.environ):
        if name.startswith(("AGENTIC_RAG_", "DEEPSEEK_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AGENTIC_RAG_CACHE_DIR", str(tmp_path / "cache"))
    # An empty .env so a developer's own .env never leaks into tests.
    monkeypatch.setattr(settings, "PROJECT_ROOT", tmp_path)
    settings.get_settings.cache_clear()
    yield settings.get_settings
    settings.get_settings.cache_clear()


@pytest.fixture(scope="session", autouse=True)
def stop_local_server_we_started():
    """Tests may start the shared local server; afterwards stop it unless it was running before or
    another process (a notebook kernel, another test session) still uses it."""
    from lessons.core.local_server import _pid_alive, _read_state, release_server

    before = _read_state()
    running_before = before is not None and _pid_alive(before.pid)
    yield
    if not running_before:
        release_server()


def pytest_configure(config):
    config.notebook_runs = []  # tests/test_notebooks.py appends each NotebookRun; printed at the end


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Each notebook run's seconds and chat-model calls (new and from the LLM cache): where a slow run's time went."""
    runs = getattr(config, "notebook_runs", [])
    if not runs:
        return
    terminalreporter.section("notebook runs (quick)")
    terminalreporter.write_line(f"{'notebook':55} {'s':>7} {'calls':>6} {'cached':>6} {'tokens in':>9}")
    for run in runs:
        terminalreporter.write_line(
            f"{run.notebook:55} {run.seconds:7.1f} {run.llm_calls:6d} {run.cached_calls:6d} {run.input_tokens:9d}"
        )
    total = sum(run.seconds for run in runs)
    calls = sum(run.llm_calls for run in runs)
    terminalreporter.write_line(f"{'all':55} {total:7.1f} {calls:6d}")
