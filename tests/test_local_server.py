"""The shared local server: start, reuse, stop, and clear errors when it cannot run."""

import socket
import sys

import pytest

from lessons.core import local_server
from lessons.core.local_server import ServerError, ensure_server, server_status, stop_server


@pytest.fixture
def fake_model(fresh_settings, monkeypatch, tmp_path):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"not really a model")
    monkeypatch.setenv("AGENTIC_RAG_GGUF", str(gguf))
    fresh_settings()
    yield
    stop_server()


def _command(monkeypatch, code):
    monkeypatch.setattr(local_server, "server_command", lambda model, alias, port: [sys.executable, "-c", code])


def test_a_server_that_dies_at_start_shows_its_log(fake_model, monkeypatch):
    _command(monkeypatch, "import sys; print('boom: unknown model architecture'); sys.exit(3)")
    with pytest.raises(ServerError, match="(?s)exited with code 3.*boom: unknown model architecture"):
        ensure_server(timeout=20)


def test_a_server_that_never_answers_is_stopped_and_reported(fake_model, monkeypatch):
    _command(monkeypatch, "import time; time.sleep(60)")
    with pytest.raises(ServerError, match="did not become healthy within 1 s") as error:
        ensure_server(timeout=1)
    pid = int(str(error.value).split("(pid ")[1].split(",")[0])
    assert not local_server._pid_alive(pid)


def test_a_port_in_use_is_named_with_the_fix(fake_model, fresh_settings, monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        monkeypatch.setenv("AGENTIC_RAG_PORT", str(busy.getsockname()[1]))
        fresh_settings.cache_clear()  # AGENTIC_RAG_PORT is a setting: read anew
        with pytest.raises(ServerError, match="already in use.*unset AGENTIC_RAG_PORT"):
            ensure_server(timeout=5)


def test_an_external_server_that_does_not_answer_is_an_error(fresh_settings, monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_SERVER_URL", f"http://127.0.0.1:{local_server.free_port()}")
    fresh_settings()
    with pytest.raises(ServerError, match="does not answer"):
        ensure_server()


FAKE_OPENAI_SERVER = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": sys.argv[2]}]}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_a_healthy_server_is_shared_and_stopped_cleanly(fake_model, monkeypatch):
    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda model, alias, port: [sys.executable, "-c", FAKE_OPENAI_SERVER, str(port), alias],
    )
    first = ensure_server(timeout=20)
    again = ensure_server(timeout=20)
    assert again.pid == first.pid and again.url == first.url
    assert "healthy" in server_status() and "tiny-18" in server_status()
    assert stop_server() is True
    assert not local_server._pid_alive(first.pid)
    assert server_status() == "no local server running"


def test_release_keeps_the_server_while_another_process_uses_it(fake_model, monkeypatch):
    import subprocess

    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda model, alias, port: [sys.executable, "-c", FAKE_OPENAI_SERVER, str(port), alias],
    )
    first = ensure_server(timeout=20)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (local_server._clients_dir() / str(other.pid)).touch()  # as ensure_server() in that process would
        assert local_server.other_clients() == [other.pid]
        assert local_server.release_server() is False
        assert local_server._pid_alive(first.pid)
    finally:
        other.kill()
        other.wait()
    assert local_server.release_server() is True
    assert not local_server._pid_alive(first.pid)


def test_a_restarted_server_comes_back_on_the_same_port(fake_model, monkeypatch):
    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda model, alias, port: [sys.executable, "-c", FAKE_OPENAI_SERVER, str(port), alias],
    )
    first = ensure_server(timeout=20)
    local_server._terminate(first.pid)  # the server dies (or someone stops it)
    second = ensure_server(timeout=20)
    assert second.pid != first.pid and second.url == first.url


SLOW_WHEN_FLAGGED = FAKE_OPENAI_SERVER.replace(
    "    def do_GET(self):\n",
    "    def do_GET(self):\n        import os, time\n        if os.path.exists(sys.argv[3]): time.sleep(4)\n",
)


def test_a_busy_server_is_waited_for_not_replaced(fake_model, monkeypatch, tmp_path):
    # Under load the real server took more than the old 2-second health check to answer, and the next
    # process to call ensure_server() killed it mid-request for another process.
    import time

    flag = tmp_path / "busy"
    slow_if = {"path": str(flag)}  # read when a server starts: the replacement below is not slow
    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda model, alias, port: [sys.executable, "-c", SLOW_WHEN_FLAGGED, str(port), alias, slow_if["path"]],
    )
    first = ensure_server(timeout=20)
    flag.touch()
    started = time.monotonic()
    again = ensure_server(timeout=20)
    assert again.pid == first.pid and local_server._pid_alive(first.pid)
    assert time.monotonic() - started >= 3.5, "it waited for the slow answer"
    monkeypatch.setattr(local_server, "BUSY_GRACE_SECONDS", 1.0)
    slow_if["path"] = str(tmp_path / "never")
    replaced = ensure_server(timeout=20)  # silent for the whole (short) grace period: replaced
    assert replaced.pid != first.pid and not local_server._pid_alive(first.pid)


SPINNING_WHEN_FLAGGED = FAKE_OPENAI_SERVER.replace(
    "    def do_GET(self):\n",
    "    def do_GET(self):\n        import os, time\n        if os.path.exists(sys.argv[3]):\n"
    "            began = time.time()\n            while time.time() - began < 4: pass\n",
)


def _flagged_server(monkeypatch, code: str, flag):
    """A fake server running `code` (its GET spins while `flag` exists), started, then flagged: busy from now on."""
    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda model, alias, port: [sys.executable, "-c", code, str(port), alias, str(flag)],
    )
    first = ensure_server(timeout=20)
    flag.touch()
    return first


def test_a_silent_server_that_keeps_working_is_not_replaced(fake_model, monkeypatch, tmp_path):
    # With several kernels queued, llama.cpp answers /v1/models only between completions: silent for
    # longer than the grace period, but busy. Replacing it killed every queued request (seen 1 Dec).
    first = _flagged_server(monkeypatch, SPINNING_WHEN_FLAGGED, tmp_path / "busy")
    monkeypatch.setattr(local_server, "BUSY_GRACE_SECONDS", 1.5)
    again = ensure_server(timeout=20)
    assert again.pid == first.pid and local_server._pid_alive(first.pid)


LONG_SPIN_WHEN_FLAGGED = SPINNING_WHEN_FLAGGED.replace("time.time() - began < 4", "time.time() - began < 20")


def test_a_working_server_is_used_at_once_not_waited_for_under_the_lock(fake_model, monkeypatch, tmp_path):
    """A server working for another process (its CPU time grows, /v1/models unanswered) is used at once: waiting for
    it to fall silent held the shared lock, and every other kernel — even one answered from the LLM cache — queued
    behind it for minutes (seen 6 Dec, three processes on one server)."""
    import time

    first = _flagged_server(monkeypatch, LONG_SPIN_WHEN_FLAGGED, tmp_path / "busy")
    started = time.monotonic()
    again = ensure_server(timeout=20)
    assert again.pid == first.pid and local_server._pid_alive(first.pid)
    assert time.monotonic() - started < 10, "it waited for the 20-second busy spell to end"


def test_the_server_keeps_a_prompt_prefix_cache_of_the_size_set(fresh_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTIC_RAG_PROMPT_CACHE_MB", "256")
    fresh_settings()
    command = local_server.server_command(tmp_path / "m.gguf", "local", 8000)
    assert command[command.index("-m") + 1] == "lessons.core.llama_server"
    assert command[command.index("--cache_size") + 1] == str(256 << 20)
    monkeypatch.setenv("AGENTIC_RAG_PROMPT_CACHE_MB", "0")
    fresh_settings.cache_clear()
    assert "--cache" not in local_server.server_command(tmp_path / "m.gguf", "local", 8000)
    monkeypatch.setenv("AGENTIC_RAG_PROMPT_CACHE_MB", "-1")
    fresh_settings.cache_clear()
    with pytest.raises(Exception, match="AGENTIC_RAG_PROMPT_CACHE_MB='-1' must be 0 or more"):
        fresh_settings()
