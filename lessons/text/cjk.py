"""Character classes for Chinese (and other CJK) text, shared by the helpers that split, search and check it.

Introduced in notebook 01 (chunking); used by notebooks 02 (BM25 tokens), 03 (token estimates) and
05 (claim checks). Regular-expression class bodies, to be used inside `[...]`.
"""

import re

# Ideographs only: the characters that carry meaning and pair into search tokens.
CJK_IDEOGRAPHS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Ideographs plus CJK and full-width punctuation, kana, hangul and symbols: characters set without spaces. The one
# definition of "CJK" (`is_cjk` reads it too).
CJK_WIDE = r"\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f"
_WIDE = re.compile(f"[{CJK_WIDE}]")


def is_cjk(char: str) -> bool:
    """True for a CJK ideograph, kana, hangul syllable or CJK / full-width punctuation: a character of `CJK_WIDE`.

    Introduced in notebook 01 (chunking).
    """
    return bool(_WIDE.fullmatch(char))
