"""Sentinel rules and the hits they produce when a line matches.

A rule's pattern may also be searched over many lines at once (``_block_pattern``),
which is how the line matcher keeps up with tool output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    action: str = "restart"
    echo_check: bool = True
    # Also match the unterminated line (check_partial): for prompts that wait
    # without a newline. Off for sentinels: a half-drawn line could match early
    # with a truncated group (`reset at 3` of `reset at 3pm`).
    partial: bool = False


@dataclass(frozen=True)
class Hit:
    rule: Rule
    line: str
    groups: dict[str, str]


# A rule's pattern may search all complete lines of a chunk at once (joined by
# LF, with re.MULTILINE so ^ and $ still mean line ends) as a pre-filter: a
# match in one line is then a match in the block. Constructs that see past a
# line end differently in the block than in a lone line could hide a match, so
# such rules are searched line by line only.
_NO_BLOCK = re.compile(r"\\[AZz]|\(\?<?!|\(\?[a-zA-Z]*-")


def _block_pattern(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    if _NO_BLOCK.search(pattern.pattern):
        return None
    return re.compile(pattern.pattern, pattern.flags | re.MULTILINE)


def _groups(m: re.Match[str]) -> dict[str, str]:
    return {k: v for k, v in m.groupdict().items() if v is not None}
