"""Character classes for Chinese (and other CJK) text, shared by the helpers that split, search and check it.

Introduced in notebook 01 (chunking); used by notebooks 02 (BM25 tokens), 03 (token estimates) and
05 (claim checks). Regular-expression class bodies, to be used inside `[...]`.
"""

# Ideographs only: the characters that carry meaning and pair into search tokens.
CJK_IDEOGRAPHS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Ideographs plus CJK and full-width punctuation, kana and symbols: characters set without spaces.
CJK_WIDE = r"\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"


def is_cjk(char: str) -> bool:
    """True for a CJK ideograph, kana, hangul syllable or CJK / full-width punctuation.

    Introduced in notebook 01 (chunking).
    """
    code = ord(char)
    return (
        0x3000 <= code <= 0x30FF
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
        or 0x20000 <= code <= 0x2FA1F
    )
