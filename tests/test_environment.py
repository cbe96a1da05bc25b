"""The environment: no torch, and the three dependency lists (pyproject, environment.yml, lock) agree."""

import importlib.metadata
import importlib.util
import re
import tomllib

from lessons.core.settings import PROJECT_ROOT


def _pyproject_requirements() -> list[str]:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    return project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]


def test_torch_is_not_installed():
    assert importlib.util.find_spec("torch") is None
    installed = {dist.metadata["Name"].lower() for dist in importlib.metadata.distributions()}
    assert not {"torch", "torchvision", "docling"} & installed, "a dependency pulled in torch or full docling"


def test_environment_yml_pip_list_equals_pyproject():
    text = (PROJECT_ROOT / "environment.yml").read_text()
    pip_lines = re.findall(r'^\s+- "(.+)"$', text, flags=re.MULTILINE)
    assert "-e ." in pip_lines
    assert sorted(line for line in pip_lines if line != "-e .") == sorted(_pyproject_requirements())


def test_every_requirement_is_pinned_and_matches_the_lock():
    lock = {}
    for line in (PROJECT_ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            lock[re.sub(r"[-_.]+", "-", name.lower())] = version
    for requirement in _pyproject_requirements():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]+\])?==([^\s;]+)", requirement)
        assert match, f"{requirement!r} is not pinned with =="
        name = re.sub(r"[-_.]+", "-", match.group(1).lower())
        assert lock.get(name) == match.group(3), f"{requirement} disagrees with requirements.lock ({lock.get(name)})"


def test_dotenv_is_ignored_and_an_example_ships():
    assert ".env" in (PROJECT_ROOT / ".gitignore").read_text().splitlines()
    example = (PROJECT_ROOT / ".env.example").read_text()
    assert "DEEPSEEK_API_KEY=" in example and "AGENTIC_RAG_MODEL=" in example
