"""The message catalogue (locale/zh/LC_MESSAGES/course.po): in step with the code (Babel extraction), every
entry translated and not fuzzy, placeholders checked by Babel's checkers plus the str.format one; t() reads it."""

import shutil

import pytest
from babel.messages.catalog import Message, TranslationError

from lessons.core import i18n
from tools import i18n_catalogue
from tools.i18n_catalogue import brace_format, catalogue_path, extract, problems, read


def test_the_catalogue_holds_every_key_the_code_uses_and_no_other():
    used = {message.id for message in extract() if message.id}
    held = {message.id for message in read("zh") if message.id}
    assert len(used) > 600
    assert not used - held, f"keys the code uses that the catalogue lacks (run the update): {sorted(used - held)[:10]}"
    assert not held - used, f"entries no code uses (run the update, it marks them obsolete): {sorted(held - used)[:10]}"


def test_every_entry_is_translated_not_fuzzy_and_keeps_its_placeholders():
    assert problems(read("zh")) == []


def test_an_untranslated_a_fuzzy_and_a_misplaced_placeholder_entry_each_fail_the_check():
    catalog = read("zh")
    catalog.add("a new message {n}", "")
    catalog.add("a changed message", "一条改过的消息", flags=["fuzzy"])
    catalog.add("{n} test-only chunks", "{count} 个仅供测试的块")  # a key the real catalogue does not have
    catalog.add("{x:5.1f}%", "{x:.2f}%")
    found = problems(catalog)
    assert found == [
        "untranslated: 'a new message {n}'",
        "fuzzy (check the translation, then remove the fuzzy flag): 'a changed message'",
        "placeholders differ: ['{n:}'] in English, ['{count:}'] here: '{n} test-only chunks'",
        "placeholders differ: ['{x:5.1f}'] in English, ['{x:.2f}'] here: '{x:5.1f}%'",
    ]


def test_the_brace_checker_accepts_a_percent_sign_and_reordered_placeholders():
    brace_format(None, Message("{a} of {b}: 95% interval", "{b} 中的 {a}：95% 区间"))
    with pytest.raises(TranslationError, match="not a str.format template"):
        brace_format(None, Message("{a}", "{a"))


def test_t_leaves_out_an_untranslated_or_fuzzy_entry(tmp_path, monkeypatch):
    """t() reports such an entry as missing (an error in the Chinese copy) instead of printing English or a guess."""
    folder = tmp_path / "zh" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    shutil.copy(catalogue_path("zh"), folder / "course.po")
    monkeypatch.setattr(i18n_catalogue, "LOCALE_DIR", tmp_path)
    catalog = read("zh")
    catalog["one short answer"].flags.add("fuzzy")
    catalog["cosine similarity"].string = ""
    i18n_catalogue.write(catalog, "zh")
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.translations.cache_clear()
    try:
        table = i18n.translations("zh")
        assert "one short answer" not in table and "cosine similarity" not in table
        assert table["start or reuse the model"] == "启动（或复用）模型"
    finally:
        i18n.translations.cache_clear()


def test_the_update_is_idempotent(tmp_path, monkeypatch):
    folder = tmp_path / "zh" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    shutil.copy(catalogue_path("zh"), folder / "course.po")
    before = (folder / "course.po").read_bytes()
    monkeypatch.setattr(i18n_catalogue, "LOCALE_DIR", tmp_path)
    i18n_catalogue.update()
    assert (folder / "course.po").read_bytes() == before


def test_the_chinese_example_config_is_the_same_config_with_chinese_comments(tmp_path, monkeypatch):
    """Notebook 06 and `--example` print the config template marked with N_(): in Chinese only its comments change."""
    import tomllib

    from lessons.core.i18n import t_marked
    from lessons.evaluation.cli import EXAMPLE_CONFIG

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    chinese = t_marked(EXAMPLE_CONFIG)
    assert chinese != EXAMPLE_CONFIG and "# 相对路径都相对于这个文件。" in chinese
    assert tomllib.loads(chinese) == tomllib.loads(EXAMPLE_CONFIG)
    assert [line.split("#")[0] for line in chinese.splitlines()] == [
        line.split("#")[0] for line in EXAMPLE_CONFIG.splitlines()
    ], "the same keys and values on the same lines"
