"""The layout of `lessons/`: subpackages in data-flow order, no flat modules, no import upwards.

The layer rule itself is the import-linter contract in `pyproject.toml` (`make lint` runs `lint-imports`); these
tests run it too, show that it catches an upward import (one inside a function as well), and check the exports
`python -m scripts.exports` generates.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from scripts import exports

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
# The stages in data-flow order: each imports only from itself and the ones before it.
STAGES = ("core", "text", "ingest", "chunking", "transforms", "retrieval", "agents", "evaluation", "widgets")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_no_flat_module_in_lessons():
    flat = sorted(p.name for p in LESSONS.glob("*.py") if p.name != "__init__.py")
    assert flat == [], f"modules directly in lessons/ (put each in a stage's subpackage): {flat}"


def test_every_subpackage_is_a_stage():
    folders = sorted(p.name for p in LESSONS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(STAGES)
    for stage in STAGES:
        assert (LESSONS / stage / "__init__.py").is_file()
        nested = [p for p in (LESSONS / stage).iterdir() if p.is_dir() and p.name != "__pycache__"]
        assert nested == [], f"lessons/{stage}/ holds folders: {nested}"


def test_the_contract_and_the_exports_tool_name_the_same_stages():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    assert layers["containers"] == ["lessons"] and layers["exhaustive"] is True
    assert tuple(reversed(layers["layers"])) == STAGES == exports.STAGES


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, check=False)


def test_no_import_from_a_later_stage():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "code", "broken"),
    [
        ("agents/probe.py", "def f():\n    from lessons.evaluation.metrics import hit_at_k\n",
         "lessons.agents is not allowed to import lessons.evaluation"),
        ("core/probe.py", "import lessons.text.probe\n", "lessons.core is not allowed to import lessons.text"),
        ("retrieval/probe.py", "def f():\n    import service.core\n", "lessons.retrieval.probe -> service.core"),
    ],
)  # fmt: skip
def test_the_contract_catches_an_upward_import(tmp_path, module, code, broken):
    """The contract is not vacuous: the project's own config, on a tree of empty stages plus one bad import."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for package in ("tools", "scripts", "checks", "service"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "service" / "core.py").write_text("")
    for stage in STAGES:
        (tmp_path / "lessons" / stage).mkdir(parents=True)
        (tmp_path / "lessons" / stage / "__init__.py").write_text("")
        (tmp_path / "lessons" / stage / "probe.py").write_text("")
    (tmp_path / "lessons" / "__init__.py").write_text("")
    (tmp_path / "lessons" / "evaluation" / "metrics.py").write_text("def hit_at_k():\n    pass\n")
    assert lint_imports(tmp_path).returncode == 0
    (tmp_path / "lessons" / module).write_text(code)
    result = lint_imports(tmp_path)
    assert result.returncode == 1 and broken in result.stdout, result.stdout


@pytest.mark.parametrize("stage", STAGES)
def test_exports_resolve(stage):
    """Each export names a module of its own stage that binds it, and no export shadows a submodule."""
    table = exports.package_exports(f"lessons.{stage}")
    for name, module in table.items():
        assert module.startswith(f"lessons.{stage}."), (name, module)
        path = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.Assign):
                bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                bound.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        assert name in bound, f"lessons.{stage} exports {name}, which {module} does not define"
        assert not (LESSONS / stage / f"{name}.py").exists(), f"export {name} shadows lessons.{stage}.{name}"


@pytest.mark.parametrize("stage", STAGES)
def test_no_export_is_defined_twice(stage):
    """`from lessons.<stage> import name` is ambiguous when two modules of the stage define `name`: the
    package would pick one silently."""
    package = f"lessons.{stage}"
    assert exports.export_clashes(package, exports.package_exports(package)) == {}


def test_clash_check_catches_a_name_defined_twice(tmp_path, monkeypatch):
    stage = tmp_path / "lessons" / "evaluation"
    stage.mkdir(parents=True)
    (stage / "one.py").write_text("def findings():\n    return 1\n", encoding="utf-8")
    (stage / "two.py").write_text("findings = None\n_private = 2\n", encoding="utf-8")
    (stage / "three.py").write_text("def _private():\n    pass\n", encoding="utf-8")
    monkeypatch.setattr(exports, "ROOT", tmp_path)
    table = {"findings": "lessons.evaluation.one", "_private": "lessons.evaluation.two"}
    assert exports.export_clashes("lessons.evaluation", table) == {
        "findings": ["lessons.evaluation.one", "lessons.evaluation.two"]
    }
    with pytest.raises(SystemExit, match="ambiguous"):
        exports.defining_module("lessons.evaluation", "findings")
    assert exports.defining_module("lessons.evaluation", "nothing") is None


def test_masters_import_only_exported_names():
    """What a notebook imports from a stage, its package exports (`from lessons.retrieval import ...` works).

    Except a name that is also its module's (`chunk_explorer`): exported, it would shadow the submodule."""
    missing = []
    for module, names in exports.master_imports().items():
        package = module.rsplit(".", 1)[0]
        if package.split(".")[-1] not in STAGES:
            continue
        table = exports.package_exports(package)
        missing += [
            f"{package}: {name} (from {module})"
            for name in sorted(names)
            if name not in table and not (ROOT / package.replace(".", "/") / f"{name}.py").exists()
        ]
    assert missing == [], "run `python -m scripts.exports` to export them"


def test_exported_names_import():
    """A package-level import gives the object of the module that defines it (light stages only)."""
    from lessons.core import USAGE
    from lessons.core.usage import USAGE as direct
    from lessons.text import detect_language

    assert USAGE is direct
    assert detect_language("向量检索很快") == "zh"
    with pytest.raises(AttributeError):
        import lessons.core

        lessons.core.no_such_name  # noqa: B018


def test_the_generated_inits_are_current():
    assert exports.stale_inits() == [], "run `python -m scripts.exports`"


def test_the_code_names_no_issue_of_the_tracker():
    """Docstrings and comments say what the code does and which notebook introduces it; which issue changed it belongs
    in the commit message, where it cannot go stale."""
    import re

    pattern = re.compile(r"\bissues? #?\d+|\(issue\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}"
        for folder in ("lessons", "service", "tools", "scripts", "checks", "benchmarks", "tests")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line) and path.name != "test_package_layout.py"
    ]
    assert not found, "say what the code does instead:\n" + "\n".join(found)
