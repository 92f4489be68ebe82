"""Token estimate shared by the bootstrap budget and the context limit.

The estimate is deliberately simple and tokenizer-free: 1 token per CJK
character, 1 per 4 other characters (rounded up), as docs/layouts.md says.
"""

from __future__ import annotations

import re

# CJK Unified Ideographs (+ext A), kana, hangul, CJK punctuation and fullwidth forms.
_CJK = re.compile(
    "[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)


def count_cjk(text: str) -> int:
    return len(_CJK.findall(text))


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: CJK chars count 1 each, others 1 per 4."""
    cjk = count_cjk(text)
    other = len(text) - cjk
    return cjk + (other + 3) // 4
