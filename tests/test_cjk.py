"""One definition of CJK text (lessons.text.cjk): the character class and `is_cjk` agree on every character."""

import re

from lessons.text.cjk import CJK_IDEOGRAPHS, CJK_WIDE, is_cjk


def test_is_cjk_and_the_character_class_agree_on_every_character():
    wide = re.compile(f"[{CJK_WIDE}]")
    disagree = [
        hex(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and is_cjk(chr(c)) != bool(wide.match(chr(c)))
    ]
    assert not disagree, f"is_cjk and CJK_WIDE disagree on {len(disagree)} characters, e.g. {disagree[:5]}"


def test_kana_hangul_punctuation_and_ideographs_are_cjk_and_latin_is_not():
    for char in "中文。，「」ひらカタ한국Ａ１𠀀":
        assert is_cjk(char), char
    for char in "aZ9 .,-é":
        assert not is_cjk(char), char
    assert re.fullmatch(f"[{CJK_IDEOGRAPHS}]+", "检索召回率") and not re.search(f"[{CJK_IDEOGRAPHS}]", "。ひ한")
