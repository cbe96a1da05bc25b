"""The model factory: provider choice, no silent fallback, clear errors, a port-free cache key."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lessons.core import models
from lessons.core.models import CourseChatModel, ModelError, active_model_info, get_chat_model


def test_without_a_key_the_local_model_is_active(fresh_settings):
    info = active_model_info()
    assert info.provider == "local"
    assert "qwen2.5-coder-1.5b" in info.name
    assert "local llama.cpp server" in info.banner()


def test_with_a_key_deepseek_is_active_and_built_without_any_server(fresh_settings, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    fresh_settings()
    model = get_chat_model()
    assert isinstance(model, CourseChatModel)
    assert model.provider == "deepseek"
    assert model.model_name == "deepseek-chat"
    assert model.temperature == 0
    assert model.seed == models.SEED
    assert "DeepSeek API" in active_model_info().banner()


def test_forcing_deepseek_without_a_key_is_an_error_not_a_fallback(fresh_settings, monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_MODEL", "deepseek")
    fresh_settings()
    with pytest.raises(ModelError, match="DEEPSEEK_API_KEY is not set.*\\.env"):
        get_chat_model()


def test_cache_key_ignores_the_local_servers_port():
    a = CourseChatModel(model="m", api_base="http://127.0.0.1:1111/v1", api_key="x", provider="local", temperature=0)
    b = CourseChatModel(model="m", api_base="http://127.0.0.1:2222/v1", api_key="x", provider="local", temperature=0)
    c = CourseChatModel(model="m", api_base="http://127.0.0.1:2222/v1", api_key="x", provider="local", temperature=0.7)
    assert a._get_llm_string() == b._get_llm_string()
    assert a._get_llm_string() != c._get_llm_string()


class _Handler(BaseHTTPRequestHandler):
    mode = "401"

    def do_POST(self):
        if self.mode == "slow":
            time.sleep(3)
        status = {"401": 401, "402": 402, "slow": 200}[self.mode]
        body = json.dumps(
            {"error": {"message": "Authentication Fails (invalid key)" if status == 401 else "Insufficient Balance"}}
        )
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def _model(url, **kwargs):
    return CourseChatModel(
        model="deepseek-chat",
        api_base=url,
        api_key="sk-wrong",
        provider="deepseek",
        max_retries=0,
        cache=False,
        **kwargs,
    )


@pytest.mark.parametrize(("mode", "fragment"), [("401", "rejected the API key"), ("402", "balance is exhausted")])
def test_api_errors_become_clear_messages(fake_api, mode, fragment):
    _Handler.mode = mode
    url = f"http://127.0.0.1:{fake_api.server_address[1]}/v1"
    with pytest.raises(ModelError, match=fragment) as error:
        _model(url).invoke("hi")
    assert "AGENTIC_RAG_MODEL=local" in str(error.value)


def test_a_timeout_says_so(fake_api):
    _Handler.mode = "slow"
    url = f"http://127.0.0.1:{fake_api.server_address[1]}/v1"
    with pytest.raises(ModelError, match="timed out after 0.5 s"):
        _model(url, timeout=0.5).invoke("hi")


def test_an_unreachable_local_server_says_how_to_restart_it(fresh_settings, monkeypatch):
    from lessons.core.local_server import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AGENTIC_RAG_SERVER_URL", dead)  # so the automatic restart cannot succeed either
    fresh_settings()
    model = CourseChatModel(model="m", api_base=f"{dead}/v1", api_key="x", provider="local", max_retries=0, cache=False)
    with pytest.raises(ModelError, match="python -m lessons.core.local_server_cli start"):
        model.invoke("hi")


def test_a_chinese_reader_is_told_in_chinese_that_the_server_cannot_be_reached(fresh_settings, monkeypatch):
    from lessons.core.local_server import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AGENTIC_RAG_SERVER_URL", dead)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    fresh_settings()
    model = CourseChatModel(model="m", api_base=f"{dead}/v1", api_key="x", provider="local", max_retries=0, cache=False)
    with pytest.raises(ModelError, match="无法连接到位于 .* 的本地模型服务器.*修复：服务器可能已经停止") as error:
        model.invoke("hi")
    assert "could not reach" not in str(error.value) and "Fix" not in str(error.value)
