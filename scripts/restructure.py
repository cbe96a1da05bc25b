"""Re-appliable restructure of `lessons/` into subpackages that follow the data flow (issue 20, deliverable 1).

    python scripts/restructure.py            # apply (idempotent), then regenerate the notebooks
    python scripts/restructure.py --check    # change nothing; exit 1 naming every file still using an old path
    python scripts/restructure.py --no-notebooks

The tables below are the whole plan:

- `STAGES`: the stage order. A module of a stage imports only from its own stage or from earlier ones
  (`tests/test_package_layout.py` enforces it); `tools/` (tooling that no notebook imports) comes after all.
- `MOVES`: every old flat module → its new dotted path (`git mv`).
- `SPLITS`: the top-level definitions that leave a moved module for another one, so that one module holds
  one stage (text helpers out of `ingest`, chunker pieces out of `knowledge_base`, ...). Code is moved
  verbatim; only imports are added or dropped.
- `FIXUPS`: literal edits that only make sense once the code has moved (a lazy import that broke a cycle).

Applying it: `git mv` each module, move the split definitions, (re)write each package's `__init__.py` (lazy
exports of what the masters import), then rewrite every old path in the repository: `from lessons.x import a`
(name by name: a split module's names go where they live now), `from lessons import x`, `import lessons.x`,
`lessons.x.attr` in strings and prose (monkeypatch targets, `python -m lessons.x`), and `lessons/x.py`. A second
run, e.g. after others committed code that still uses the old paths, rewrites only what is still old.
In masters/ an old import becomes a package-level one (`from lessons.core import get_chat_model`), since
every name a master imports is exported by its package; elsewhere it becomes the full module path.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/restructure.py` puts scripts/ first, not the repository
    sys.path.insert(0, str(ROOT))

STAGES = ("core", "text", "ingest", "chunking", "transforms", "retrieval", "agents", "evaluation", "widgets")
TOOLS = "tools"  # outside lessons/: imported by no notebook, may import any stage

STAGE_DOCS = {
    "core": "Settings, chat models, structured output, the LLM cache, usage metering, embeddings, the vector store, "
    "the local model runtime, prompt safety, translations and number formatting: what every later stage uses.",
    "text": "Language detection, normalisation for matching, CJK character classes, text decoding.",
    "ingest": "Files to Markdown and documents (Docling, PDF headings), the course corpora and their gold sets.",
    "chunking": "Chunkers: the baseline, the strategies of notebook 01, Markdown blocks that keep tables whole.",
    "transforms": "Document transformations of notebook 03: cleaning, date and property extraction, QA pairs.",
    "retrieval": "The index build, retrievers (dense, BM25, hybrid), context expansion, query transformation, "
    "rerankers, and the upload-to-retriever processor.",
    "agents": "The grading loop (04), the three-agent verification and claim checks (05), the deep-research and "
    "tool-calling agents (07).",
    "evaluation": "Metrics, test sets, and the evaluations of notebooks 01, 02, 05, 06 and 07, with the "
    "evaluation command (`python -m lessons.evaluation.cli`).",
    "widgets": "The interactive explorers and the chat panel of the notebooks.",
}

# Old flat module (lessons/<key>.py) → new dotted path.
MOVES = {
    # core
    "settings": "lessons.core.settings",
    "models": "lessons.core.models",
    "structured": "lessons.core.structured",
    "llm_cache": "lessons.core.llm_cache",
    "usage": "lessons.core.usage",
    "embeddings": "lessons.core.embeddings",
    "vectorstore": "lessons.core.vectorstore",
    "local_model": "lessons.core.local_model",
    "local_server": "lessons.core.local_server",
    "fakes": "lessons.core.fakes",
    "prompt_safety": "lessons.core.prompt_safety",
    "prose": "lessons.core.prose",
    "i18n": "lessons.core.i18n",
    "plot_fonts": "lessons.core.plot_fonts",
    # text
    "cjk": "lessons.text.cjk",
    "text_encoding": "lessons.text.text_encoding",
    # ingest
    "ingest": "lessons.ingest.files",
    "pdf_headings": "lessons.ingest.pdf_headings",
    "corpus": "lessons.ingest.corpus",
    # chunking
    "chunking": "lessons.chunking.strategies",
    "markdown_blocks": "lessons.chunking.markdown_blocks",
    # transforms
    "doc_transforms": "lessons.transforms.doc_transforms",
    "qa_transform": "lessons.transforms.qa_transform",
    # retrieval
    "knowledge_base": "lessons.retrieval.index",
    "retrieval": "lessons.retrieval.retrievers",
    "context_expansion": "lessons.retrieval.context_expansion",
    "chunk_context": "lessons.retrieval.chunk_context",
    "query_transform": "lessons.retrieval.query_transform",
    "rerank": "lessons.retrieval.rerank",
    "cross_encoder": "lessons.retrieval.cross_encoder",
    "document_processor": "lessons.retrieval.document_processor",
    # agents
    "grading": "lessons.agents.grading",
    "claim_check": "lessons.agents.claim_check",
    "three_agents": "lessons.agents.three_agents",
    "deep_research": "lessons.agents.deep_research",
    "tool_agent": "lessons.agents.tool_agent",
    # evaluation
    "metrics": "lessons.evaluation.metrics",
    "testset": "lessons.evaluation.testset",
    "chunk_evaluation": "lessons.evaluation.chunk_evaluation",
    "retrieval_evaluation": "lessons.evaluation.retrieval_evaluation",
    "three_agent_eval": "lessons.evaluation.three_agent_eval",
    "deep_research_eval": "lessons.evaluation.deep_research_eval",
    "evaluation": "lessons.evaluation.pipelines",
    "evaluate": "lessons.evaluation.cli",
    # widgets
    "chat_panel": "lessons.widgets.chat_panel",
    "chunk_explorer": "lessons.widgets.chunk_explorer",
    "retrieval_explorer": "lessons.widgets.retrieval_explorer",
    # tooling no notebook imports
    "notebook_runner": "tools.notebook_runner",
    "prewarm": "tools.prewarm",
}

# Old module → {new module: [top-level names that move there]}; every other name stays in MOVES[old].
SPLITS = {
    "ingest": {
        "lessons.text.language": ["CJK_SHARE_FOR_CHINESE", "detect_language"],
        "lessons.text.normalise": [
            "_FENCE",
            "_WHITESPACE",
            "_SPACE_BEFORE_PUNCTUATION",
            "_SPACE_AFTER_BRACKET",
            "_IMAGE_OR_LINK",
            "_ESCAPED_PUNCTUATION",
            "_ESCAPE_SHIFT",
            "_ESCAPED_CHAR",
            "_STRONG_STAR",
            "_STRONG_UNDERSCORE",
            "_EMPHASIS_STAR",
            "_EMPHASIS_UNDERSCORE",
            "_STRIKETHROUGH",
            "_TABLE_RULE",
            "_HEADING_MARKER",
            "normalise_for_match",
            "tidy_inline_spacing",
            "_collapse_whitespace",
        ],
    },
    "pdf_headings": {"lessons.text.cjk": ["is_cjk"]},
    "knowledge_base": {
        "lessons.ingest.corpus": ["DEFAULT_LIMITS", "load_documents", "load_sections"],
        "lessons.chunking.base": [
            "Chunker",
            "BILINGUAL_SEPARATORS",
            "DEFAULT_CHUNK_SIZE",
            "DEFAULT_CHUNK_OVERLAP",
            "number_chunks",
        ],
        "lessons.chunking.strategies": ["default_chunker"],
    },
    # agents (deep_research) read the reranker's blend weight: it belongs to the reranker, not to its evaluation
    "retrieval_evaluation": {"lessons.retrieval.rerank": ["BLEND_WEIGHT"]},
}

# Docstrings of modules that SPLITS creates.
NEW_MODULES = {
    "lessons.text.language": '"""Which language a text is in: \'zh\' when CJK letters are at least a fifth of its letters, '
    "else 'en'.\n\nIntroduced in notebook 01 (chunking); lived in `lessons.ingest` before issue 20, which made "
    'metrics,\nclaim checks and prompts depend on the ingestion module.\n"""\n',
    "lessons.text.normalise": '"""Text normalised for matching, and Docling\'s inline spacing tidied.\n\n'
    "Introduced in notebook 01 (chunking): `normalise_for_match` lets a gold quote be found in converted "
    "Markdown;\n`tidy_inline_spacing` removes the spaces Docling puts around inline code and emphasis. Lived in\n"
    '`lessons.ingest` before issue 20.\n"""\n',
    "lessons.chunking.base": '"""What every chunker shares: the `Chunker` type, the bilingual separators, the '
    "default sizes,\nand `number_chunks` (de-duplicated chunks with their position within their source).\n\n"
    'Introduced in notebook 01 (chunking); lived in the knowledge-base module (now `lessons.retrieval.index`) before issue 20.\n"""\n',
}

# (file, old text, new text): applied when the old text is present.
FIXUPS = [  # (applied after the rewrite, so in new paths) markdown_blocks no longer imports the chunker pieces' module
    # one folder deeper: the repository is the parent of lessons/, now three levels up from the module
    (
        "lessons/core/settings.py",
        "PROJECT_ROOT = Path(__file__).resolve().parent.parent\n",
        "PROJECT_ROOT = Path(__file__).resolve().parents[2]\n",
    ),
    (
        "lessons/chunking/strategies.py",
        "from lessons.chunking.markdown_blocks import parse_blocks\n",
        "from lessons.chunking.markdown_blocks import parse_blocks, repeat_table_headers\n",
    ),
    (
        "lessons/chunking/strategies.py",
        "    from lessons.chunking.markdown_blocks import repeat_table_headers  # markdown_blocks imports this module\n\n",
        "",
    ),
]

# Where old paths are rewritten (files under these folders, and these files).
SCOPE_DIRS = ("lessons", "masters", "checks", "tests", "service", "scripts", "benchmarks", "docs", "tools", ".ci")
SCOPE_FILES = (
    "README.md",
    "README.zh.md",
    "CONTRIBUTING.md",
    "Makefile",
    "pyproject.toml",
    "environment.yml",
    "data/README.md",
    "data/build_corpus.py",
    "data/build_packages.py",
)
SCOPE_SUFFIXES = (".py", ".md", ".sh", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".ini")
SKIP = ("scripts/restructure.py", "tests/test_package_layout.py")

PACKAGES = tuple(sorted({target.rsplit(".", 1)[0] for target in MOVES.values()}))  # lessons.core, ..., tools
# Old module names that are also the name of a new package: `from lessons.ingest import X` may be new already.
COLLIDING = tuple(sorted(old for old in MOVES if f"lessons.{old}" in PACKAGES))


# ----------------------------------------------------------------------------------------------------------
# Names: where does `name` of old module `old` live now?
# ----------------------------------------------------------------------------------------------------------


def resolve(old: str, name: str) -> str:
    for target, names in SPLITS.get(old, {}).items():
        if name in names:
            return target
    return MOVES[old]


def module_path(dotted: str) -> Path:
    return ROOT / (dotted.replace(".", "/") + ".py")


def dotted_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_exports(package: str) -> dict[str, str]:
    """The `_EXPORTS` table of a package's generated `__init__.py` (name → module), {} when absent."""
    init = ROOT / package.replace(".", "/") / "__init__.py"
    if not init.exists():
        return {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def top_level_names(path: Path) -> set[str]:
    """The public names a module defines at top level (functions, classes, assignments)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


def export_clashes(package: str, exports: dict[str, str]) -> dict[str, list[str]]:
    """Exported names that more than one module of `package` defines: name → the defining modules."""
    folder = ROOT / package.replace(".", "/")
    defined: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.py")):
        if path.name != "__init__.py":
            for name in top_level_names(path):
                defined.setdefault(name, []).append(dotted_of(path))
    return {name: defined[name] for name in exports if len(defined.get(name, [])) > 1}


def is_new_name(package_old: str, name: str) -> bool:
    """`from lessons.<package_old> import name` already means the new package: a submodule or an export."""
    package = f"lessons.{package_old}"
    return module_path(f"{package}.{name}").exists() or name in package_exports(package)


def defining_module(package: str, name: str) -> str | None:
    """The one module of `package` that defines `name` at top level (None when none does; an error when several do)."""
    folder = ROOT / package.replace(".", "/")
    if not folder.is_dir():
        return None
    found = [
        dotted_of(path)
        for path in sorted(folder.glob("*.py"))
        if path.name != "__init__.py" and name in top_level_names(path)
    ]
    if len(found) > 1:
        raise SystemExit(f"`from {package} import {name}` is ambiguous: {', '.join(found)} each define it. Rename one.")
    return found[0] if found else None


# ----------------------------------------------------------------------------------------------------------
# Moving files and definitions
# ----------------------------------------------------------------------------------------------------------


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def move_modules(log: list[str]) -> None:
    for old, target in MOVES.items():
        source, destination = ROOT / "lessons" / f"{old}.py", module_path(target)
        if not source.exists():
            continue
        if destination.exists():
            raise SystemExit(
                f"{source.relative_to(ROOT)} reappeared next to {destination.relative_to(ROOT)}: "
                "move its new code over by hand, delete it, and run this again"
            )
        destination.parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(source.relative_to(ROOT)), str(destination.relative_to(ROOT)))
        log.append(f"moved lessons/{old}.py → {destination.relative_to(ROOT)}")


def _segments(source: str) -> list[tuple[str, int, int, ast.stmt]]:
    """(bound name, first line, last line, node) of each top-level def, class or assignment (1-based)."""
    tree = ast.parse(source)
    lines = source.split("\n")
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        while first > 1 and lines[first - 2].lstrip().startswith("#"):  # comments right above belong to it
            first -= 1
        for name in names:
            found.append((name, first, node.end_lineno, node))
    return found


def _bound_and_loaded(tree: ast.AST) -> tuple[set[str], set[str]]:
    bound, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    # names used in string annotations (from __future__ import annotations keeps them as code anyway)
    return bound, loaded


def _top_imports(tree: ast.Module) -> dict[str, str]:
    """name bound by a top-level import → the import line that binds only it."""
    lines = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            for alias in node.names:
                text = alias.name + (f" as {alias.asname}" if alias.asname else "")
                lines[alias.asname or alias.name] = f"from {node.module} import {text}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                text = alias.name + (f" as {alias.asname}" if alias.asname else "")
                lines[(alias.asname or alias.name).split(".")[0]] = f"import {text}"
    return lines


def _missing(source: str) -> set[str]:
    bound, loaded = _bound_and_loaded(ast.parse(source))
    return loaded - bound - set(dir(builtins))


def _insert_imports(source: str, import_lines: list[str]) -> str:
    """Add import lines after the last top-level import (stdlib/third-party before `lessons`, sorted)."""
    if not import_lines:
        return source
    tree = ast.parse(source)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    lines = source.split("\n")
    plain = sorted(line for line in import_lines if not line.startswith(("from lessons", "import lessons")))
    ours = sorted(line for line in import_lines if line.startswith(("from lessons", "import lessons")))
    if imports:
        last_ours = [n for n in imports if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("lessons")]
        last_plain = [
            n
            for n in imports
            if n not in last_ours and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
        ]
        if ours:
            at = (last_ours or last_plain or imports)[-1].end_lineno
            lines[at:at] = ([""] if not last_ours else []) + ours
        if plain:
            at = (last_plain or imports)[-1].end_lineno
            lines[at:at] = ([""] if not last_plain else []) + plain
    else:
        doc = tree.body[0].end_lineno if tree.body and isinstance(tree.body[0], ast.Expr) else 0
        lines[doc:doc] = ["", "from __future__ import annotations", "", *plain, *([""] if plain else []), *ours]
    return "\n".join(lines)


def _drop_unused_imports(source: str, used_before: set[str]) -> str:
    """Remove top-level imported names the split left unused (names unused before are left alone)."""
    tree = ast.parse(source)
    _, loaded = _bound_and_loaded(tree)
    exported = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            exported = set(ast.literal_eval(node.value))
    lines = source.split("\n")
    for node in reversed(tree.body):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or getattr(node, "module", "") == "__future__":
            continue
        keep = [
            a
            for a in node.names
            if (a.asname or a.name).split(".")[0] in loaded | exported
            or (a.asname or a.name).split(".")[0] not in used_before
        ]
        if len(keep) == len(node.names):
            continue
        comment = ""
        tail = lines[node.end_lineno - 1]
        if "#" in tail:
            comment = "  " + tail[tail.index("#") :]
        names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in keep)
        if not keep:
            new = []
        elif isinstance(node, ast.ImportFrom):
            new = [f"from {node.module} import {names}{comment}"]
        else:
            new = [f"import {names}{comment}"]
        lines[node.lineno - 1 : node.end_lineno] = new
    return "\n".join(lines)


def _tidy_blank_lines(source: str) -> str:
    source = re.sub(r"\n{4,}", "\n\n\n", source)
    return source.rstrip("\n") + "\n"


def split_modules(log: list[str]) -> None:
    for old, targets in SPLITS.items():
        source_path = module_path(MOVES[old])
        if not source_path.exists():
            continue
        source = source_path.read_text(encoding="utf-8")
        segments = _segments(source)
        wanted = {name: target for target, names in targets.items() for name in names}
        moving = [(name, a, b, node) for name, a, b, node in segments if name in wanted]
        if not moving:
            continue
        used_before = _bound_and_loaded(ast.parse(source))[1]
        source_imports = _top_imports(ast.parse(source))
        lines = source.split("\n")
        pieces: dict[str, list[tuple[str, str]]] = {}
        for name, first, last, node in sorted(moving, key=lambda m: m[1]):
            kind = "constant" if isinstance(node, (ast.Assign, ast.AnnAssign)) else "code"
            pieces.setdefault(wanted[name], []).append((kind, "\n".join(lines[first - 1 : last]), name))
        for name, first, last, _ in sorted(moving, key=lambda m: -m[1]):
            del lines[first - 1 : last]
        remaining = "\n".join(lines)

        for target, parts in pieces.items():
            target_path = module_path(target)
            if target_path.exists():
                text = target_path.read_text(encoding="utf-8")
            else:
                text = NEW_MODULES[target] + "\nfrom __future__ import annotations\n"
            # A definition the target already has (a merge brought the old module back): the source's copy is the
            # newer one, so it replaces the target's in place.
            already = {seg[0]: (seg[1], seg[2]) for seg in _segments(text)}
            text_lines = text.split("\n")
            for kind, body, name in sorted((p for p in parts if p[2] in already), key=lambda p: -already[p[2]][0]):
                first, last = already[name]
                text_lines[first - 1 : last] = body.split("\n")
            text = "\n".join(text_lines)
            parts = [(kind, body) for kind, body, name in parts if name not in already]
            constants = [body for kind, body in parts if kind == "constant"]
            code = [body for kind, body in parts if kind == "code"]
            tree = ast.parse(text)
            first_def = next(
                (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))), None
            )
            text_lines = text.rstrip("\n").split("\n")
            if constants:
                if first_def is not None:
                    at = min([first_def.lineno] + [d.lineno for d in first_def.decorator_list]) - 1
                    while at > 0 and text_lines[at - 1].lstrip().startswith("#"):
                        at -= 1
                    text_lines[at:at] = constants + ["", ""]
                else:
                    text_lines += [""] + constants
            for body in code:
                text_lines += ["", "", body]
            text = "\n".join(text_lines) + "\n"
            needed = _missing(text)
            add = []
            for name in sorted(needed):
                if name in source_imports:
                    add.append(source_imports[name])
                elif name in wanted and wanted[name] != target:
                    add.append(f"from {wanted[name]} import {name}")
                elif any(name == seg[0] for seg in segments) and name not in wanted:
                    add.append(f"from {MOVES[old]} import {name}")
            text = _tidy_blank_lines(_insert_imports(text, _merge_from_lines(add)))
            target_path.parent.mkdir(parents=True, exist_ok=True)
            target_path.write_text(text, encoding="utf-8")
            log.append(
                f"split {', '.join(n for n in wanted if wanted[n] == target)} out of lessons/{old}.py "
                f"→ {target_path.relative_to(ROOT)}"
            )
        needed = _missing(remaining)
        add = [f"from {wanted[name]} import {name}" for name in sorted(needed) if name in wanted]
        remaining = _insert_imports(remaining, _merge_from_lines(add))
        remaining = _drop_unused_imports(remaining, used_before)
        source_path.write_text(_tidy_blank_lines(remaining), encoding="utf-8")


def _merge_from_lines(lines: list[str]) -> list[str]:
    merged: dict[str, list[str]] = {}
    plain = []
    for line in lines:
        match = re.match(r"from (\S+) import (.+)$", line)
        if match:
            merged.setdefault(match.group(1), []).append(match.group(2))
        else:
            plain.append(line)
    return plain + [f"from {module} import {', '.join(sorted(set(names)))}" for module, names in merged.items()]


def apply_fixups(log: list[str]) -> None:
    for file, old, new in FIXUPS:
        path = ROOT / file
        if path.exists() and old in (text := path.read_text(encoding="utf-8")):
            path.write_text(text.replace(old, new), encoding="utf-8")
            log.append(f"fixup in {file}")


# ----------------------------------------------------------------------------------------------------------
# Package __init__ files: lazy exports of what the masters import
# ----------------------------------------------------------------------------------------------------------

INIT_TEMPLATE = '''"""{doc}

Stage {index} of {count} ({stages}):
modules here import only from this stage and earlier ones (`tests/test_package_layout.py`).
Generated by `scripts/restructure.py`: the exports are the names the notebooks import from this stage; each is
loaded on first use, so `from lessons.{stage} import X` imports only X's module.
"""

from lessons.core.exports import lazy_exports

_EXPORTS = {exports}

__all__ = {names}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
'''

ROOT_INIT = '''"""Agentic RAG, hands-on: the course's helpers, in subpackages that follow the data flow.

{rows}

A module imports only from its own stage and earlier ones (`STAGES` in `scripts/restructure.py`,
enforced by `tests/test_package_layout.py`); tooling that no notebook imports (the notebook runner,
pre-warm) lives in `tools/`.
"""
'''


def master_imports() -> dict[str, set[str]]:
    """new module → names the masters import from it (old, full and package-level paths all resolved)."""
    found: dict[str, set[str]] = {}
    for master in sorted((ROOT / "masters").glob("*.py")):
        for node in ast.walk(ast.parse(master.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("lessons."):
                continue
            parts = node.module.split(".")
            for alias in node.names:
                name = alias.name
                if (
                    len(parts) == 2
                    and parts[1] in MOVES
                    and not (
                        parts[1] in COLLIDING
                        and (is_new_name(parts[1], name) or defining_module(node.module, name) is not None)
                    )
                ):
                    module = resolve(parts[1], name)
                elif len(parts) == 2 and f"lessons.{parts[1]}" in PACKAGES:
                    module = package_exports(node.module).get(name)
                    if module and not (module_path(module).exists() and name in top_level_names(module_path(module))):
                        module = None  # a stale export (the name moved to another module of the package)
                    module = module or defining_module(node.module, name)
                    if module is None and module_path(f"{node.module}.{name}").exists():
                        continue  # a submodule, not a name
                else:
                    module = node.module
                if module:
                    found.setdefault(module, set()).add(name)
    return found


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff wants in `__all__` (RUF022): CONSTANTS, then Classes, then the rest."""
    return (0 if name.isupper() or (name.upper() == name and "_" in name) else 1 if name[:1].isupper() else 2, name)


def write_inits(log: list[str]) -> None:
    by_package: dict[str, dict[str, str]] = {f"lessons.{stage}": {} for stage in STAGES}
    for package, table in by_package.items():  # keep earlier exports whose module still defines them
        table.update(
            {
                name: module
                for name, module in package_exports(package).items()
                if module_path(module).exists() and name in top_level_names(module_path(module))
            }
        )
    for module, names in master_imports().items():
        package = module.rsplit(".", 1)[0]
        if package in by_package and module_path(module).exists():
            for name in names:
                if not module_path(f"{package}.{name}").exists():  # a name like its module's would shadow it
                    by_package[package].setdefault(name, module)
    for package, table in by_package.items():
        clashes = export_clashes(package, table)
        if clashes:
            raise SystemExit(
                f"{package} would export names that more than one of its modules defines, so "
                f"`from {package} import <name>` would pick one silently: {clashes}. Rename one of each."
            )
    for index, stage in enumerate(STAGES, 1):
        package = f"lessons.{stage}"
        exports = dict(sorted(by_package[package].items(), key=lambda item: _isort_key(item[0])))
        body = "{\n" + "".join(f'    "{name}": "{module}",\n' for name, module in exports.items()) + "}"
        text = INIT_TEMPLATE.format(
            doc="\n".join(textwrap.wrap(STAGE_DOCS[stage], 110)),
            index=index,
            count=len(STAGES),
            stage=stage,
            stages=" → ".join(STAGES),
            exports=body if exports else "{}",
            names="[\n" + "".join(f'    "{name}",\n' for name in exports) + "]" if exports else "[]",
        )
        _write_if_changed(ROOT / "lessons" / stage / "__init__.py", text, log)
    rows = "\n".join(
        textwrap.fill(f"{i}. `lessons.{stage}`: {STAGE_DOCS[stage]}", 110, subsequent_indent="   ")
        for i, stage in enumerate(STAGES, 1)
    )
    _write_if_changed(ROOT / "lessons" / "__init__.py", ROOT_INIT.format(rows=rows), log)
    tools_init = ROOT / TOOLS / "__init__.py"
    if not tools_init.exists():
        _write_if_changed(
            tools_init,
            '"""Course tooling that no notebook imports: the headless notebook runner '
            "(`python -m tools.notebook_runner`)\nand pre-warm (`python -m tools.prewarm`, "
            '`make prewarm`). May import any stage of `lessons`."""\n',
            log,
        )


def _write_if_changed(path: Path, text: str, log: list[str]) -> None:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    log.append(f"wrote {path.relative_to(ROOT)}")


# ----------------------------------------------------------------------------------------------------------
# Rewriting old paths
# ----------------------------------------------------------------------------------------------------------

FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*(?:#[ \t]*)?)from[ \t]+lessons\.(?P<mod>[a-z_][a-z0-9_]*)[ \t]+import[ \t]+"
    r"(?P<names>\((?:[^)]*)\)|[^\n#]*[^\n# \t])(?P<comment>[ \t]*#[^\n]*)?$",
    re.MULTILINE,
)
FROM_LESSONS = re.compile(
    r"^(?P<indent>[ \t]*)from[ \t]+lessons[ \t]+import[ \t]+(?P<names>[^\n#(]*[^\n#( \t])(?P<comment>[ \t]*#[^\n]*)?$",
    re.MULTILINE,
)
DOTTED = re.compile(r"(?<![\w.])lessons\.(?P<mod>[a-z_][a-z0-9_]*)(?:\.(?P<attr>[A-Za-z_]\w*))?")
PATH = re.compile(r"(?<![\w/.])lessons/(?P<mod>[a-z_][a-z0-9_]*)(?P<dot>\\?\.)py\b")  # `\.py` in a regex too


def _parse_names(text: str) -> list[tuple[str, str | None]]:
    text = text.strip()
    if text.startswith("("):
        text = "\n".join(line.split("#", 1)[0] for line in text[1:-1].split("\n"))
    names = []
    for part in text.replace("\\\n", " ").split(","):
        part = part.strip()
        if not part:
            continue
        bits = part.split()
        names.append((bits[0], bits[2] if len(bits) == 3 and bits[1] == "as" else None))
    return names


def _format_from(indent: str, module: str, names: list[tuple[str, str | None]], comment: str) -> str:
    items = [n + (f" as {a}" if a else "") for n, a in names]
    line = f"{indent}from {module} import {', '.join(items)}{comment}"
    if len(line) <= 120 or indent.strip():
        return line
    out, current = [f"{indent}from {module} import ({comment}"], indent + "   "
    for item in items:
        if len(current) + len(item) + 2 > 120:
            out.append(current)
            current = indent + "   "
        current += f" {item},"
    return "\n".join([*out, current, f"{indent})"])


def _package_of(module: str) -> str:
    return module.rsplit(".", 1)[0]


def rewrite_text(text: str, rel: str) -> str:
    in_lessons = rel.startswith("lessons/")
    in_masters = rel.startswith("masters/")
    self_module = dotted_of(ROOT / rel) if rel.endswith(".py") else ""

    def from_import(match: re.Match) -> str:
        old = match.group("mod")
        if old not in MOVES:
            return match.group(0)
        names = _parse_names(match.group("names"))
        comment = match.group("comment") or ""
        groups: dict[str, list[tuple[str, str | None]]] = {}
        for name, alias in names:
            if old in COLLIDING and not in_lessons and is_new_name(old, name):
                target = f"lessons.{old}"
            else:
                target = resolve(old, name)
                if in_masters and target.startswith("lessons.") and name in package_exports(_package_of(target)):
                    target = _package_of(target)
            if target == self_module:
                continue
            groups.setdefault(target, []).append((name, alias))
        if list(groups) == [f"lessons.{old}"]:
            return match.group(0)
        if not groups:  # only names of the file itself (code moved into it)
            return ""
        indent = match.group("indent")
        if len(groups) == 1 and next(iter(groups.values())) == names:  # keep the statement's own layout
            return match.group(0).replace(f"lessons.{old} import", f"{next(iter(groups))} import", 1)
        out = []
        for i, (target, group) in enumerate(groups.items()):
            out.append(_format_from(indent, target, group, comment if i == 0 else ""))
        return "\n".join(out)

    def from_lessons(match: re.Match) -> str:
        names = _parse_names(match.group("names"))
        if not any(name in MOVES for name, _ in names):
            return match.group(0)
        indent, comment = match.group("indent"), match.group("comment") or ""
        out, rest = [], []
        for name, alias in names:
            if name not in MOVES:
                rest.append((name, alias))
                continue
            package, module = MOVES[name].rsplit(".", 1)
            bound = alias or name
            out.append(f"{indent}from {package} import {module}" + (f" as {bound}" if bound != module else ""))
        if rest:
            out.insert(0, _format_from(indent, "lessons", rest, ""))
        out[0] += comment
        return "\n".join(out)

    def dotted(match: re.Match) -> str:
        old, attr = match.group("mod"), match.group("attr")
        if old not in MOVES:
            return match.group(0)
        if old in COLLIDING and (attr is None or is_new_name(old, attr)):
            return match.group(0)
        if attr is None:
            return MOVES[old]
        return f"{resolve(old, attr)}.{attr}"

    def path(match: re.Match) -> str:
        old = match.group("mod")
        if old not in MOVES:
            return match.group(0)
        return MOVES[old].replace(".", "/") + match.group("dot") + "py"

    text = FROM_IMPORT.sub(from_import, text)
    text = FROM_LESSONS.sub(from_lessons, text)
    text = DOTTED.sub(dotted, text)
    text = PATH.sub(path, text)
    return text


def _twin_hashes(text: str) -> list[tuple[str, dict[str, str]]]:
    """(hash of each English Markdown cell, {language: its twin's `translates`}) of a master's text."""
    import tempfile

    from scripts.notebooks import parse, source_hash

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "master.py"
        path.write_text(text, encoding="utf-8")
        _, cells = parse(path)
    return [
        (source_hash(c.cell.source), {lang: h for lang, (_, h) in c.twins.items()})
        for c in cells
        if c.cell.cell_type == "markdown"
    ]


def keep_translations_current(old: str, new: str) -> str:
    """A twin that translated the English text before the path rewrite translates it after it too (the rewrite
    changed its paths in both); a twin that was already stale stays stale."""
    before, after = _twin_hashes(old), _twin_hashes(new)
    if len(before) != len(after):
        return new
    for (was, twins), (now, _) in zip(before, after):
        if was != now and was in twins.values():
            new = new.replace(f'translates="{was}"', f'translates="{now}"')
    return new


def scope_files() -> list[Path]:
    files = set()
    for folder in SCOPE_DIRS:
        base = ROOT / folder
        if base.is_dir():
            files.update(
                p
                for p in base.rglob("*")
                if p.is_file()
                and p.suffix in SCOPE_SUFFIXES
                and "__pycache__" not in p.parts
                and ".ipynb_checkpoints" not in p.parts
            )
    files.update(ROOT / f for f in SCOPE_FILES if (ROOT / f).is_file())
    return sorted(p for p in files if str(p.relative_to(ROOT)) not in SKIP)


def rewrite_all(write: bool) -> list[str]:
    changed = []
    for path in scope_files():
        rel = str(path.relative_to(ROOT))
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite_text(text, rel)
        if new != text and rel.startswith("masters/"):
            new = keep_translations_current(text, new)
        if new != text:
            changed.append(rel)
            if write:
                path.write_text(new, encoding="utf-8")
    return changed


def update_pyproject(log: list[str], write: bool = True) -> bool:
    path = ROOT / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    packages = ["lessons", *(f"lessons.{stage}" for stage in STAGES), TOOLS, "checks", "service"]
    line = "packages = [" + ", ".join(f'"{p}"' for p in packages) + "]"
    new = re.sub(r"^packages = \[[^\]\n]*\]$", line, text, count=1, flags=re.MULTILINE)
    if new != text and write:
        path.write_text(new, encoding="utf-8")
        log.append("pyproject.toml: packages")
    return new != text


def leftovers() -> list[str]:
    """What `--check` reports: flat modules still in lessons/, and files that still use old paths."""
    problems = [f"lessons/{old}.py still exists" for old in MOVES if (ROOT / "lessons" / f"{old}.py").exists()]
    for old, targets in SPLITS.items():
        path = module_path(MOVES[old])
        if path.exists():
            defined = {seg[0] for seg in _segments(path.read_text(encoding="utf-8"))}
            problems += [
                f"{path.relative_to(ROOT)} still defines {name}"
                for names in targets.values()
                for name in names
                if name in defined
            ]
    problems += [f"{rel} uses an old path" for rel in rewrite_all(write=False)]
    if update_pyproject([], write=False):
        problems.append("pyproject.toml lists old packages")
    return problems


def sort_imports(paths: list[str]) -> None:
    """Import blocks of the rewritten modules sorted again (ruff's isort rule; ruff is in the dev extra)."""
    ruff = Path(sys.executable).parent / "ruff"
    if paths and ruff.exists():
        subprocess.run(
            [str(ruff), "check", "--select", "I", "--fix", "--quiet", *sorted(set(paths))], cwd=ROOT, check=False
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything is still old")
    parser.add_argument("--no-notebooks", action="store_true", help="do not regenerate the notebooks")
    args = parser.parse_args(argv)
    if args.check:
        problems = leftovers()
        print("\n".join(problems) or "restructure: nothing left to do")
        return 1 if problems else 0
    log: list[str] = []
    move_modules(log)
    split_modules(log)
    write_inits(log)
    changed = rewrite_all(write=True)
    log += [f"rewrote old paths in {rel}" for rel in changed]
    apply_fixups(log)
    sort_imports(
        [rel for rel in changed if rel.startswith(("lessons/", f"{TOOLS}/")) and rel.endswith(".py")]
        + [
            str(module_path(m).relative_to(ROOT))
            for old, targets in SPLITS.items()
            for m in (MOVES[old], *targets)
            if module_path(m).exists()
        ]
    )
    write_inits(log)  # masters' package-level imports are now known exports
    update_pyproject(log)
    print("\n".join(log) or "restructure: nothing to do")
    if not args.no_notebooks:
        subprocess.run([sys.executable, "-m", "scripts.notebooks"], cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
