import pytest

from lessons.core.settings import SettingsError


def test_defaults_are_offline(fresh_settings):
    settings = fresh_settings()
    assert settings.model == "auto"
    assert settings.uses_deepseek is False
    assert settings.llm_cache is True
    assert settings.embedder == "e5"
    assert settings.n_ctx == 4096


def test_key_in_dotenv_switches_auto_to_deepseek(fresh_settings, tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("DEEPSEEK_API_KEY=sk-test-123\n")
    settings = fresh_settings()
    assert settings.deepseek_api_key == "sk-test-123"
    assert settings.uses_deepseek is True
    monkeypatch.delenv("DEEPSEEK_API_KEY")  # load_dotenv exported it; keep other tests clean


def test_forcing_local_ignores_the_key(fresh_settings, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("AGENTIC_RAG_MODEL", "local")
    assert fresh_settings().uses_deepseek is False


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("AGENTIC_RAG_MODEL", "gpt", "use one of: auto, deepseek, local"),
        ("AGENTIC_RAG_CTX", "big", "not a whole number"),
        ("AGENTIC_RAG_THREADS", "0", "must be positive"),
        ("AGENTIC_RAG_LLM_CACHE", "maybe", "use 1 or 0"),
        ("AGENTIC_RAG_EMBEDDER", "bert", "e5, use"),
    ],
)
def test_bad_values_name_the_variable_and_the_fix(fresh_settings, monkeypatch, name, value, fragment):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as error:
        fresh_settings()
    assert name in str(error.value) and fragment in str(error.value)
