"""The literal text every match of a regex contains, to skip hopeless searches.

``str.find`` is a C substring search, many times faster than a regex scan that
fails; most agent output contains no sentinel, so the line matcher looks for a
rule's literal first and runs the regex only where it occurs.

Only runs of plain characters that the pattern always matches count: outside
branches (but a prefix the parser moved out of a branch counts), optional
parts, lookarounds and case-insensitive flags. A pattern that is one
alternation (``A|B|C``, as a handoff rule's is) has no such run, but each
branch may have one: every match holds one of them (``required_literals``).
When in doubt: None, and the regex runs as before.
"""

from __future__ import annotations

import re
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any

MIN_LITERAL = 3
_LITERAL = sre_constants.LITERAL
_SUBPATTERN = sre_constants.SUBPATTERN
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)
_BRANCH = sre_constants.BRANCH
_ZERO_WIDTH = (sre_constants.AT,)  # ^ $ \b \B \A \Z: they take no characters


def required_literal(pattern: re.Pattern[str]) -> str | None:
    """The longest run of literal characters every match contains (None if < 3)."""
    items = _parsed(pattern)
    return None if items is None else _longest_run(items)


def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Literals one of which every match contains: the required literal, or for a
    pattern that is one alternation, the required literal of each branch (None when
    a branch has none)."""
    items = _parsed(pattern)
    if items is None:
        return None
    one = _longest_run(items)
    if one is not None:
        return (one,)
    split = _alternation(items)
    if split is None:
        return None
    before, branches, after = split
    found = [_longest_run(before + list(branch) + after) for branch in branches]
    if any(literal is None for literal in found):
        return None
    return tuple(dict.fromkeys(literal for literal in found if literal is not None))


def _alternation(
    items: list[tuple[Any, Any]],
) -> tuple[list[tuple[Any, Any]], list[Any], list[tuple[Any, Any]]] | None:
    """``items`` as what comes before one alternation at their top level (``A|B``, or
    a group that is one: ``(?:A|B)``, ``(?P<n>A|B)``), its branches, and what comes
    after: every match is one branch with the parts around it (``Co(?:ntext
    compacted|mpact task completed)`` as the parser writes ``Context compacted|Compact
    task completed``). None when there is no such alternation, or more than one."""
    at = [
        i
        for i, (op, av) in enumerate(items)
        if op is _BRANCH
        or (op is _SUBPATTERN and not any(av[1:3]) and _one_branch(list(av[3])) is not None)
    ]
    if len(at) != 1:
        return None
    i = at[0]
    op, av = items[i]
    branches = av[1] if op is _BRANCH else _one_branch(list(av[3]))
    return items[:i], list(branches or []), items[i + 1 :]


def _one_branch(items: list[tuple[Any, Any]]) -> list[Any] | None:
    """The branches of ``items`` if they are one alternation, maybe in plain groups."""
    while len(items) == 1 and items[0][0] is _SUBPATTERN and not any(items[0][1][1:3]):
        items = list(items[0][1][3])
    if len(items) == 1 and items[0][0] is _BRANCH:
        return list(items[0][1][1])
    return None


def _parsed(pattern: re.Pattern[str]) -> list[tuple[Any, Any]] | None:
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        return list(sre_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # the private parser changed: no pre-filter, same results
        return None


def _longest_run(items: list[tuple[Any, Any]]) -> str | None:
    runs: list[str] = []
    run: list[str] = []
    _literal_runs(items, runs, run)
    _flush(runs, run)
    best = max(runs, key=len, default="")
    return best if len(best) >= MIN_LITERAL else None


def _literal_runs(items: list[tuple[Any, Any]], runs: list[str], run: list[str]) -> None:
    """Extend ``run`` with consecutive mandatory literals; push finished runs to ``runs``."""
    for op, av in items:
        if op is _LITERAL:
            run.append(chr(av))
            continue
        if op is _SUBPATTERN:
            _, add_flags, del_flags, sub = av
            if not (add_flags or del_flags):  # a plain group: its items are in sequence
                _literal_runs(list(sub), runs, run)
                continue
        elif op in _REPEATS and av[0] >= 1:
            # x{1,} holds one x: its literals count, but the run ends around it.
            _flush(runs, run)
            inner: list[str] = []
            _literal_runs(list(av[2]), runs, inner)
            _flush(runs, inner)
            continue
        elif op in _ZERO_WIDTH:
            continue
        _flush(runs, run)


def _flush(runs: list[str], run: list[str]) -> None:
    if run:
        runs.append("".join(run))
        run.clear()
