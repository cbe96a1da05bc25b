"""Which language a text is in: 'zh' when CJK letters are at least a fifth of its letters, else 'en'.

Introduced in notebook 01 (chunking). It sits in `lessons.text`, below ingestion, so that metrics, claim checks and
prompts can ask for a text's language without importing the ingestion module.
"""

from __future__ import annotations

from lessons.text.cjk import is_cjk

CJK_SHARE_FOR_CHINESE = 0.2


def detect_language(text: str) -> str:
    """'zh' when CJK characters are at least 20% of the letters, else 'en'.

    Introduced in notebook 01 (chunking).
    """
    letters = cjk = 0
    for char in text:
        if is_cjk(char) and char.isalpha():
            cjk += 1
            letters += 1
        elif char.isalpha():
            letters += 1
    return "zh" if letters and cjk / letters >= CJK_SHARE_FOR_CHINESE else "en"
