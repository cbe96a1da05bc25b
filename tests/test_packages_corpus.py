"""The second knowledge base (data/packages/, real READMEs) and its hand-written gold set."""

import importlib.util
import json
import re
import shutil
import sys
from collections import Counter
from importlib import metadata

import pytest

from lessons.core.settings import PROJECT_ROOT
from lessons.ingest.corpus import (
    CORPUS_DIR,
    MANIFEST_NAME,
    PACKAGES_DIR,
    corpus_folder,
    find_evidence,
    load_corpus,
    load_gold,
    manifest_files,
    read_manifest,
)
from lessons.text.cjk import CJK_IDEOGRAPHS
from lessons.text.normalise import normalise_for_match

_CJK = re.compile(f"[{CJK_IDEOGRAPHS}]")


def load_build_script():
    spec = importlib.util.spec_from_file_location("build_packages", PROJECT_ROOT / "data" / "build_packages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while the script loads
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build():
    return load_build_script()


@pytest.fixture(scope="module")
def gold():
    return load_gold(corpus="packages")


@pytest.fixture(scope="module")
def texts():
    return {path.name: path.read_text(encoding="utf-8") for path in PACKAGES_DIR.glob("*.md")}


def test_the_corpus_is_exactly_the_ten_packages_pinned_with_licences(build):
    manifest = read_manifest(PACKAGES_DIR)
    names = [entry["name"] for entry in manifest["packages"]]
    assert names == list(build.PACKAGES) and len(names) == 10
    for entry in manifest["packages"]:
        assert entry["version"] == metadata.version(entry["name"]), entry["name"]
        assert entry["licence"] and entry["content_type"].startswith("text/"), entry
        assert entry["file"] == f"{entry['name']}.md"
    files = [entry["file"] for entry in manifest["packages"]]
    assert sorted(p.name for p in PACKAGES_DIR.iterdir()) == sorted([*files, MANIFEST_NAME])


def test_rebuilding_gives_the_same_bytes(build):
    files = build.build(write=False)
    assert set(files) == {p.name for p in PACKAGES_DIR.iterdir()}
    for name, text in files.items():
        assert (PACKAGES_DIR / name).read_bytes() == text.encode("utf-8"), f"{name} would change on rebuild"
    assert build.build(write=False) == files


@pytest.mark.parametrize("corpus_set", ["heldout", "heldout2"])
def test_each_benchmark_only_heldout_corpus_rebuilds_the_same_and_its_gold_quotes_are_in_it(build, corpus_set):
    packages, out, gold_path = build.SETS[corpus_set]
    files = build.build(out, write=False, packages=packages)
    others = {package for key, (listed, *_) in build.SETS.items() if key != corpus_set for package in listed}
    assert set(files) == {p.name for p in out.iterdir()} and not set(packages) & others
    for name, text in files.items():
        assert (out / name).read_bytes() == text.encode("utf-8"), f"{name} would change on rebuild"
    assert build.check_gold(files, gold_path) == 0


def test_a_changed_version_is_refused_with_the_fix(build, tmp_path):
    manifest = json.loads((PACKAGES_DIR / MANIFEST_NAME).read_text(encoding="utf-8"))
    manifest["packages"][2]["version"] = "0.0.1"
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(build.BuildError) as error:
        build.build(out=tmp_path, write=False)
    message = str(error.value)
    name = manifest["packages"][2]["name"]
    assert f"{name}: installed {metadata.version(name)}, pinned 0.0.1" in message
    assert "--repin" in message and f"pip install '{name}==0.0.1'" in message
    assert not list(tmp_path.glob("*.md")), "a refused build must not write anything"


def test_a_missing_manifest_or_package_is_refused(build, tmp_path):
    with pytest.raises(build.BuildError, match="--repin"):
        build.build(out=tmp_path, write=False)
    with pytest.raises(build.BuildError, match="not installed"):
        build.read_package("no-such-package-for-this-course")


def test_rendering_keeps_code_and_tables_and_drops_badges_and_html(build):
    dropped = build.Dropped()
    source = "\n".join(  # noqa: FLY002 - one list item per Markdown line reads like the document it builds
        [
            "[![PyPI](https://img.shields.io/pypi/v/x)](https://pypi.org/project/x/) | [![CI](https://ci/x.svg)](https://ci)",
            "",
            '<p align="center"><b>Fast</b> <img src="logo.png"><br>and small</p>',
            "",
            "Read the [docs](https://x.org) or write to <team@x.org>; run `[not](a link)` here.",
            "",
            "> [!NOTE]",
            "> Careful.",
            "",
            "<details>",
            "<summary>More  options</summary>",
            "",
            "```bash",
            "pip install x  # [keep](this) <b>too</b>",
            "```",
            "</details>",
            "",
            "| name | link |",
            "|---|---|",
            "| a | [site](https://a) |",
            "<!-- a comment -->",
        ]
    )
    rendered = build.render_markdown(source, dropped)
    assert "shields" not in rendered and "logo.png" not in rendered and "<" not in rendered.replace("<b>too</b>", "")
    assert "**Fast**" in rendered and "and small" in rendered
    assert "Read the docs or write to team@x.org; run `[not](a link)` here." in rendered
    assert "> **Note**" in rendered and "**More options**" in rendered
    assert "pip install x  # [keep](this) <b>too</b>" in rendered  # code is copied byte for byte
    assert "| a | site |" in rendered and "|---|---|" in rendered
    assert "comment" not in rendered
    assert dropped.images == 3 and dropped.html_comments == 1 and dropped.link_targets >= 4


def test_a_description_in_another_markup_is_refused(build, monkeypatch):
    monkeypatch.setattr(build, "read_package", lambda name: ("1.0", "text/x-rst", "Title\n=====\n", {}))
    with pytest.raises(build.BuildError, match="text/x-rst"):
        build.render_package("anything")


def test_the_gold_set_has_the_proportions_the_issue_asks_for(gold):
    types = Counter(q.type for q in gold)
    assert len(gold) >= 60
    assert types["out_of_kb"] * 5 >= len(gold), types
    assert sum(q.language == "zh" for q in gold) * 5 >= len(gold)
    assert min(types["table"], types["code"], types["config"], types["multi_hop"]) >= 4, types
    for question in gold:
        if question.type == "multi_hop":
            assert len({s.file for s in question.sources}) >= 2, question.id
    near_misses_zh = [q for q in gold if q.language == "zh" and not q.answerable]
    assert near_misses_zh and any(q.type == "multi_hop" for q in gold if q.language == "zh")


def test_every_question_has_what_it_needs(gold, texts):
    manifest_files_ = {entry["file"] for entry in read_manifest(PACKAGES_DIR)["packages"]}
    assert len({q.id for q in gold}) == len(gold)
    assert not {q.id for q in gold} & {q.id for q in load_gold()}, "ids must not clash with the course gold set"
    for question in gold:
        assert question.id.startswith(f"pkg-{question.language}-"), question.id
        assert bool(_CJK.search(question.question)) == (question.language == "zh"), question.id
        if question.answerable:
            assert question.answer.strip() and question.evidence and question.sources, question.id
            assert {s.file for s in question.sources} <= manifest_files_, question.id
            assert all(s.page is None for s in question.sources), "Markdown has no pages"
            # cross-lingual: every source is English text, whatever the question's language
            assert all(not _CJK.search(texts[s.file]) for s in question.sources), question.id


def test_every_evidence_quote_is_verbatim_on_one_line_of_its_rendered_source(gold, texts):
    missing = []
    for question in gold:
        for quote in question.evidence:
            assert not re.search(r"\*\*|`|\||\]\(", quote), f"{question.id}: markup in quote {quote!r}"
            needle = normalise_for_match(quote)
            lines = [normalise_for_match(line) for s in question.sources for line in texts[s.file].splitlines()]
            if not any(needle in line for line in lines):
                missing.append(f"{question.id}: {quote!r}")
    assert not missing, "quotes not found on one line of their source:\n" + "\n".join(missing)


def test_every_evidence_quote_survives_ingestion(gold):
    converted = {doc.source: doc.markdown for doc in load_corpus(PACKAGES_DIR).documents}
    missing = [
        f"{q.id}: {quote!r}"
        for q in gold
        for quote in q.evidence
        if not any(find_evidence(quote, converted[s.file]) for s in q.sources)
    ]
    assert not missing, "\n".join(missing)


def test_a_multi_hop_question_has_a_quote_from_each_of_its_sources(gold, texts):
    for question in (q for q in gold if q.type == "multi_hop"):
        for source in question.sources:
            text = normalise_for_match(texts[source.file])
            assert any(normalise_for_match(quote) in text for quote in question.evidence), (question.id, source.file)


def test_a_changed_or_unlisted_file_is_refused_by_the_loader(tmp_path):
    folder = tmp_path / "packages"
    shutil.copytree(PACKAGES_DIR, folder)
    assert [p.name for p in manifest_files(folder)] == [e["file"] for e in read_manifest(folder)["packages"]]
    (folder / "notes.txt").write_text("my own notes\n", encoding="utf-8")
    with pytest.raises(ValueError, match="notes.txt is not listed in MANIFEST.json"):
        load_corpus(folder)
    (folder / "notes.txt").unlink()
    path = folder / "chromadb.md"
    path.write_text(path.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    with pytest.raises(ValueError, match="chromadb.md differs .* data/build_packages.py"):
        load_corpus(folder)


def test_both_corpora_are_named_and_the_course_api_is_unchanged():
    assert corpus_folder() == CORPUS_DIR and corpus_folder("packages") == PACKAGES_DIR
    assert manifest_files(CORPUS_DIR) is None
    assert {q.id[:3] for q in load_gold()} == {"en-", "zh-"}
    with pytest.raises(ValueError, match="choose one of"):
        load_gold(corpus="tidewell")
    with pytest.raises(FileNotFoundError, match="packages_gold.jsonl"):
        load_gold(PACKAGES_DIR, corpus="packages")
