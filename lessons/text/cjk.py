"""Character classes for Chinese (and other CJK) text, shared by the helpers that split, search and check it.

Introduced in notebook 01 (chunking); used by notebooks 02 (BM25 tokens), 03 (token estimates) and
05 (claim checks) and 07 (page budgets in English-character equivalents). Regular-expression class bodies, to be used inside `[...]`.
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


# An English token of the chat model is about four characters; a CJK character is about one token.
CHARS_PER_TOKEN = 4


def english_width(text: str) -> int:
    """The length of `text` in English-character equivalents: a `CJK_WIDE` character counts `CHARS_PER_TOKEN`,
    any other character one. A budget in these units holds about as many chat-model tokens in either language.

    Introduced in notebook 07 (deep-research agent), which cuts pages, snippets and notes for the chat model by it;
    notebook 03's token estimate (`lessons.transforms.qa_transform.estimate_tokens`) is this over `CHARS_PER_TOKEN`.
    """
    return len(text) + (CHARS_PER_TOKEN - 1) * len(_WIDE.findall(text))


def cut_to_width(text: str, width: int) -> str:
    """The longest start of `text` whose `english_width` is at most `width` (all of it when it fits).

    Introduced in notebook 07 (deep-research agent): a page cut for the chat model holds as many tokens in Chinese
    as in English.
    """
    if len(text) * CHARS_PER_TOKEN <= width or english_width(text) <= width:
        return text
    used = 0
    for end, char in enumerate(text):
        used += CHARS_PER_TOKEN if _WIDE.fullmatch(char) else 1
        if used > width:
            return text[:end]
    return text
