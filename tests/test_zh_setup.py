"""Set-up from mainland China: README.zh.md tells the reader to set a PyPI mirror with `pip config set
global.index-url …` or `PIP_INDEX_URL`; that works only while every pip the install runs reads pip's configuration
and inherits the environment. These tests fail when setup or the runtime build stops doing so, or when a README
hard-codes a mirror."""

import re
import subprocess

import pytest

from lessons.core import runtime_build as rb
from lessons.core.settings import PROJECT_ROOT

SETUP = PROJECT_ROOT / "scripts" / "setup.sh"
# pip options that make pip ignore the reader's mirror: its configuration files and PIP_* variables (--isolated),
# or the index itself (--index-url / -i / --no-index); and a variable that points pip away from its config file.
IGNORES_THE_MIRROR = re.compile(r"(--isolated|--index-url|--no-index|\s-i\s|PIP_CONFIG_FILE|PIP_INDEX_URL=)")


def pip_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(r"\bpip\b", line) and not line.lstrip().startswith("#")]


def test_setup_runs_pip_without_an_option_that_ignores_the_readers_mirror():
    lines = pip_lines(SETUP.read_text(encoding="utf-8"))
    assert any("-m pip install" in line for line in lines), "setup.sh no longer installs with pip: update this test"
    offending = [line.strip() for line in lines if IGNORES_THE_MIRROR.search(line)]
    assert not offending, f"scripts/setup.sh runs pip so that a mirror set by the reader is ignored: {offending}"


def test_the_runtime_build_hands_pip_the_readers_environment(tmp_path, monkeypatch):
    """llama-cpp-python is built from PyPI's sdist by `pip wheel` in a subprocess: the mirror must reach it."""
    monkeypatch.setenv("AGENTIC_RAG_WHEEL_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    seen = {}

    def fake_run(command, **options):
        seen["command"], seen["env"] = command, options.get("env")
        return subprocess.CompletedProcess(command, returncode=1)

    monkeypatch.setattr(rb.subprocess, "run", fake_run)
    variant = rb.build_variants(frozenset({"avx2", "fma", "f16c"}), "x86_64", "Linux")[0]
    with pytest.raises(rb.RuntimeBuildError):
        rb.build(variant)
    assert seen["command"][1:4] == ["-m", "pip", "wheel"]
    assert not IGNORES_THE_MIRROR.search(" " + " ".join(seen["command"]) + " ")
    env = seen["env"]
    assert env is None or env.get("PIP_INDEX_URL") == "https://mirror.example/simple", (
        "the build's pip does not get PIP_INDEX_URL"
    )


@pytest.mark.parametrize("readme", ["README.md", "README.zh.md"])
def test_the_readmes_say_how_to_set_a_mirror_and_hard_code_none(readme):
    text = (PROJECT_ROOT / readme).read_text(encoding="utf-8")
    for how in ("pip config set global.index-url", "PIP_INDEX_URL", "conda config"):
        assert how in text, f"{readme} does not say how to set a mirror with {how}"
    hosts = re.findall(r"(?:index-url|PIP_INDEX_URL|custom_channels\.\S+)\s*=?\s*https?://([^/\s`]+)", text)
    assert len(hosts) >= 2, f"{readme}: no mirror command found"
    assert all(host.startswith("<") for host in hosts), f"{readme} hard-codes a mirror: {hosts}"


def test_the_readmes_name_the_course_and_test_commands_and_git_clone():
    for readme in ("README.md", "README.zh.md"):
        text = (PROJECT_ROOT / readme).read_text(encoding="utf-8")
        assert "git clone" in text and "make course" in text and "make test" in text, readme
        assert "3.11" in text and "3.12" in text, f"{readme} does not name the Python versions"


def test_no_file_in_the_checkout_hard_codes_a_pip_index():
    offending = []
    for path in [SETUP, *(PROJECT_ROOT / "scripts").glob("*.sh"), PROJECT_ROOT / "Makefile",
                 PROJECT_ROOT / "environment.yml", PROJECT_ROOT / "pyproject.toml"]:  # fmt: skip
        text = path.read_text(encoding="utf-8")
        offending += [f"{path.name}: {m}" for m in re.findall(r"(?:index-url|extra-index-url)\s*=?\s*\S+", text)]
    assert not offending, offending
