import os
import re
from collections import Counter
from pathlib import Path

import pytest

from lessons.core.settings import SettingsError

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_offline(fresh_settings):
    settings = fresh_settings()
    assert settings.model == "auto"
    assert settings.uses_deepseek is False
    assert settings.llm_cache is True
    assert settings.embedder == "e5"
    assert settings.n_ctx == 4096


def test_key_in_dotenv_switches_auto_to_deepseek(fresh_settings, tmp_path):
    (tmp_path / ".env").write_text("DEEPSEEK_API_KEY=sk-test-123\n")
    settings = fresh_settings()
    assert settings.deepseek_api_key.get_secret_value() == "sk-test-123"
    assert settings.uses_deepseek is True
    assert "sk-test-123" not in repr(settings) and "sk-test-123" not in str(settings)  # a secret, never shown
    os.environ.pop("DEEPSEEK_API_KEY")  # load_dotenv exported it (monkeypatch.delenv would restore it afterwards)


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
        ("AGENTIC_RAG_CHROMA_URL", "localhost", "use http://HOST:PORT"),
        ("DEEPSEEK_PRICE_INPUT", "cheap", "not a number"),
        ("AGENTIC_RAG_PORT", "http", "not a port — set a whole number from 1 to 65535"),
        ("AGENTIC_RAG_PORT", "70000", "or unset AGENTIC_RAG_PORT to let the course choose a free one"),
        ("AGENTIC_RAG_NO_LOCAL", "yes", "is not 1 or 0 — set AGENTIC_RAG_NO_LOCAL=1 to skip"),
    ],
)
def test_bad_values_name_the_variable_and_the_fix(fresh_settings, monkeypatch, name, value, fragment):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as error:
        fresh_settings()
    assert name in str(error.value) and fragment in str(error.value)


def test_the_runner_and_server_variables_are_settings_too(fresh_settings, monkeypatch, tmp_path):
    settings = fresh_settings()
    assert (settings.usage_file, settings.port, settings.no_local) == (None, None, False)
    monkeypatch.setenv("AGENTIC_RAG_USAGE_FILE", str(tmp_path / "usage.json"))
    monkeypatch.setenv("AGENTIC_RAG_PORT", " 8099 ")
    monkeypatch.setenv("AGENTIC_RAG_NO_LOCAL", "1")
    fresh_settings.cache_clear()
    settings = fresh_settings()
    assert (settings.usage_file, settings.port, settings.no_local) == (tmp_path / "usage.json", 8099, True)


def _table_variables(doc: str) -> Counter:
    """The variables named in the first column of a settings table (a docstring's `| `NAME` | … |` rows)."""
    return Counter(
        name
        for line in doc.splitlines()
        if line.startswith("| `")
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split(" | ")[0])
    )


def test_every_variable_the_code_names_has_one_row_in_the_settings_tables():
    import lessons.core.settings
    import service.settings

    rows = _table_variables(lessons.core.settings.__doc__) + _table_variables(service.settings.__doc__)
    files = [f for folder in ("lessons", "service", "tools", "scripts", "checks", "benchmarks", "tests", "masters")
             for f in (ROOT / folder).rglob("*") if f.suffix in (".py", ".sh")]  # fmt: skip
    named = {name for f in files for name in re.findall(r"AGENTIC_RAG_[A-Z0-9_]*[A-Z0-9]\b", f.read_text())}
    named.discard("AGENTIC_RAG_SERVICE")  # the service's prefix, not a variable
    assert sorted(named - set(rows)) == []
    assert sorted(name for name, count in rows.items() if count > 1) == []
    fields = {lessons.core.settings.Settings.variable(f) for f in lessons.core.settings.Settings.model_fields}
    assert sorted(fields - set(rows)) == []


def test_the_environment_wins_over_dotenv_and_empty_means_the_default(fresh_settings, tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("AGENTIC_RAG_CTX=2048\nAGENTIC_RAG_EMBEDDER=use\nAGENTIC_RAG_THREADS=3\n")
    monkeypatch.setenv("AGENTIC_RAG_CTX", "8192")
    monkeypatch.setenv("AGENTIC_RAG_RERANKER", "")
    settings = fresh_settings()
    assert (settings.n_ctx, settings.embedder, settings.threads, settings.reranker) == (8192, "use", 3, "packaged")
    for name in ("AGENTIC_RAG_EMBEDDER", "AGENTIC_RAG_THREADS"):
        os.environ.pop(name)  # load_dotenv exported them; keep other tests clean


def test_a_bad_value_in_dotenv_is_named_too(fresh_settings, tmp_path):
    (tmp_path / ".env").write_text("AGENTIC_RAG_LLM_CACHE=sometimes\n")
    with pytest.raises(SettingsError, match="AGENTIC_RAG_LLM_CACHE='sometimes' is not a switch — use 1 or 0"):
        fresh_settings()
    os.environ.pop("AGENTIC_RAG_LLM_CACHE")


def test_the_service_key_is_a_secret_and_a_bad_number_is_named(fresh_settings, monkeypatch):
    from service.settings import load_service_settings

    monkeypatch.setenv("AGENTIC_RAG_SERVICE_API_KEY", "key-123")
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_PORT", "9001")
    settings = load_service_settings()
    assert settings.api_key.get_secret_value() == "key-123" and "key-123" not in repr(settings)
    assert settings.url == "http://127.0.0.1:9001" and settings.data_dir == fresh_settings().cache_dir / "service"
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_LEASE_SECONDS", "-1")
    with pytest.raises(SettingsError, match=r"AGENTIC_RAG_SERVICE_LEASE_SECONDS='-1' must not be negative"):
        load_service_settings()
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_LEASE_SECONDS", "60")
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_MAX_ATTEMPTS", "many")
    with pytest.raises(
        SettingsError,
        match=r"AGENTIC_RAG_SERVICE_MAX_ATTEMPTS='many' is not a whole number — set e\.g\. AGENTIC_RAG_SERVICE_MAX_ATTEMPTS=3",
    ):
        load_service_settings()


@pytest.mark.parametrize(
    ("value", "mode"),
    [(None, "exact"), ("exact", "exact"), ("Semantic", "semantic"), ("off", "off"), ("true", "exact"), ("false", "off"),
     ("1", "exact"), ("0", "off")],
)  # fmt: skip
def test_the_answer_cache_is_a_mode_exact_by_default_and_the_old_switch_maps_onto_it(fresh_settings, monkeypatch,
                                                                                     value, mode):  # fmt: skip
    from service.settings import load_service_settings

    fresh_settings()
    if value is not None:
        monkeypatch.setenv("AGENTIC_RAG_SERVICE_ANSWER_CACHE", value)
    assert load_service_settings().answer_cache == mode


def test_an_unknown_answer_cache_mode_names_the_modes(fresh_settings, monkeypatch):
    from service.settings import load_service_settings

    fresh_settings()
    monkeypatch.setenv("AGENTIC_RAG_SERVICE_ANSWER_CACHE", "fuzzy")
    with pytest.raises(SettingsError, match=r"AGENTIC_RAG_SERVICE_ANSWER_CACHE='fuzzy' — use 'exact'"):
        load_service_settings()
