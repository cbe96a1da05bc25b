"""Character classes for Chinese (and other CJK) text, shared by the helpers that split, search and check it.

Introduced in notebook 01 (chunking); used by notebooks 02 (BM25 tokens), 03 (token estimates) and
05 (claim checks). Regular-expression class bodies, to be used inside `[...]`.
"""

# Ideographs only: the characters that carry meaning and pair into search tokens.
CJK_IDEOGRAPHS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Ideographs plus CJK and full-width punctuation, kana and symbols: characters set without spaces.
CJK_WIDE = r"\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
