"""The layout of `lessons/` (issue 20): subpackages in data-flow order, no flat modules, no import upwards.

The stage order is `STAGES` in `scripts/restructure.py`. Every import is read from the source (function-level
ones too), so a lazy import that runs from an earlier stage up to a later one fails here as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from scripts import restructure

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
STAGES = restructure.STAGES
OUTSIDE = ("tools", "scripts", "checks", "service", "benchmarks", "tests")  # nothing in lessons/ imports these


def stage_of(module: str) -> int | None:
    """Index of the stage a dotted module belongs to (None outside lessons' stages)."""
    parts = module.split(".")
    if parts[0] != "lessons" or len(parts) < 2 or parts[1] not in STAGES:
        return None
    return STAGES.index(parts[1])


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported dotted module) of every import in a file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "lessons":
                found += [(node.lineno, f"lessons.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def lesson_modules() -> list[Path]:
    return sorted(p for p in LESSONS.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_flat_module_in_lessons():
    flat = sorted(p.name for p in LESSONS.glob("*.py") if p.name != "__init__.py")
    assert flat == [], (
        f"modules directly in lessons/ (put each in a stage's subpackage, table in scripts/restructure.py): {flat}"
    )


def test_every_subpackage_is_a_stage():
    folders = sorted(p.name for p in LESSONS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(STAGES)
    for stage in STAGES:
        assert (LESSONS / stage / "__init__.py").is_file()
        nested = [p for p in (LESSONS / stage).iterdir() if p.is_dir() and p.name != "__pycache__"]
        assert nested == [], f"lessons/{stage}/ holds folders: {nested}"


def test_no_import_from_a_later_stage():
    upward = []
    for path in lesson_modules():
        own = stage_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for line, module in imports_of(path):
            if module.split(".")[0] in OUTSIDE:
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {module} (tooling, outside lessons/)")
            target = stage_of(module)
            if own is not None and target is not None and target > own:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({STAGES[own]}) imports {module} ({STAGES[target]})")
    assert upward == []


def test_stage_check_catches_an_upward_import(tmp_path):
    """The check above is not vacuous: an agents module importing evaluation is reported."""
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from lessons.evaluation.metrics import hit_at_k\n", encoding="utf-8")
    ((line, imported),) = imports_of(module)
    assert (line, imported) == (2, "lessons.evaluation.metrics")
    assert stage_of(imported) > stage_of("lessons.agents.grading")


@pytest.mark.parametrize("stage", STAGES)
def test_exports_resolve(stage):
    """Each export names a module of its own stage that binds it, and no export shadows a submodule."""
    exports = restructure.package_exports(f"lessons.{stage}")
    for name, module in exports.items():
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
    package would pick one silently (CI of session 2 failed on `comparison_findings`, which notebook 01's
    chunk evaluation and notebook 07's deep-research evaluation both defined)."""
    package = f"lessons.{stage}"
    assert restructure.export_clashes(package, restructure.package_exports(package)) == {}


def test_clash_check_catches_a_name_defined_twice(tmp_path, monkeypatch):
    stage = tmp_path / "lessons" / "evaluation"
    stage.mkdir(parents=True)
    (stage / "one.py").write_text("def findings():\n    return 1\n", encoding="utf-8")
    (stage / "two.py").write_text("findings = None\n_private = 2\n", encoding="utf-8")
    (stage / "three.py").write_text("def _private():\n    pass\n", encoding="utf-8")
    monkeypatch.setattr(restructure, "ROOT", tmp_path)
    exports = {"findings": "lessons.evaluation.one", "_private": "lessons.evaluation.two"}
    assert restructure.export_clashes("lessons.evaluation", exports) == {
        "findings": ["lessons.evaluation.one", "lessons.evaluation.two"]
    }
    with pytest.raises(SystemExit, match="ambiguous"):
        restructure.defining_module("lessons.evaluation", "findings")
    assert restructure.defining_module("lessons.evaluation", "nothing") is None


def test_masters_import_only_exported_names():
    """What a notebook imports from a stage, its package exports (`from lessons.retrieval import ...` works).

    Except a name that is also its module's (`chunk_explorer`): exported, it would shadow the submodule."""
    missing = []
    for module, names in restructure.master_imports().items():
        package = module.rsplit(".", 1)[0]
        if package.split(".")[-1] not in STAGES:
            continue
        exports = restructure.package_exports(package)
        missing += [
            f"{package}: {name} (from {module})"
            for name in sorted(names)
            if name not in exports and not (ROOT / package.replace(".", "/") / f"{name}.py").exists()
        ]
    assert missing == [], "run `python scripts/restructure.py` to export them"


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


def test_no_old_path_left():
    """Every `lessons.<flat module>` import, dotted mention and `lessons/<flat>.py` path is rewritten."""
    assert restructure.leftovers() == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("from lessons.i18n import t\n", "from lessons.core.i18n import t\n"),
        (
            "from lessons.ingest import IngestLimits, detect_language\n",
            "from lessons.ingest.files import IngestLimits\nfrom lessons.text.language import detect_language\n",
        ),
        ("from lessons import evaluation\n", "from lessons.evaluation import pipelines as evaluation\n"),
        (
            'monkeypatch.setattr("lessons.notebook_runner.execute_notebook", f)\n',
            'monkeypatch.setattr("lessons.notebook_runner.execute_notebook", f)\n'.replace("lessons.", "tools."),
        ),
        (
            "see lessons/knowledge_base.py and `lessons.knowledge_base.BILINGUAL_SEPARATORS`\n",
            "see lessons/retrieval/index.py and `lessons.chunking.base.BILINGUAL_SEPARATORS`\n",
        ),
    ],
)
def test_rewrite_examples(old, new):
    """Old paths become new ones, name by name for a split module; a second pass changes nothing."""
    assert restructure.rewrite_text(old, "tests/example.py") == new
    assert restructure.rewrite_text(new, "tests/example.py") == new


def test_an_escaped_path_in_a_regex_is_rewritten():
    old = 'match=r"add it to lessons/i18n\\.py ZH"\n'
    assert restructure.rewrite_text(old, "tests/example.py") == 'match=r"add it to lessons/core/i18n\\.py ZH"\n'
