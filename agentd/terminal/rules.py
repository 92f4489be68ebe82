"""Sentinel rules, and searching lines for them fast.

A ``RuleSet`` keeps its rules in order, each with what makes it cheap to
search: a literal that every match holds (``regexlit``), looked for with
``str.find`` before any regex runs, and a pattern that searches many lines at
once (a screenful of tool output, ``agentd.terminal.bulk``), so that single
lines are only looked at when the block holds a match. Pure: no I/O; the echo
filter and the screen are the line matcher's (``agentd.terminal.matcher``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentd.terminal.regexlit import rarest_char, required_literals


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    action: str = "restart"
    echo_check: bool = True
    # Also match the line under the cursor in check_partial, named groups or
    # not: for prompts that wait for input. A sentinel with named groups waits
    # until its line is final instead: a half-drawn line would give a truncated
    # group (`reset at 3` of `reset at 3pm`).
    partial: bool = False

    @property
    def has_groups(self) -> bool:
        """Named groups: their values are reported, so a match must be final."""
        return bool(self.pattern.groupindex)


@dataclass(frozen=True)
class Hit:
    rule: Rule
    line: str
    groups: dict[str, str]
    span: tuple[int, int] = field(default=(0, 0), compare=False)  # of the match in line

    @property
    def fired_as(self) -> str:
        """What a line remembers of this hit: the rule, and for a rule with named
        groups what they held, so that a line redrawn in place with other values
        (`100% context left` -> `8% context left`) is a new hit."""
        if not self.groups:
            return self.rule.name
        return "\0".join([self.rule.name, *(f"{k}={v}" for k, v in sorted(self.groups.items()))])


# A rule's pattern may search many lines at once (joined by LF, with
# re.MULTILINE so ^ and $ still mean line ends) as a pre-filter: a
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


@dataclass(frozen=True)
class _Entry:
    rule: Rule
    block: re.Pattern[str] | None  # searches many lines at once; None: line by line
    literals: tuple[str, ...] | None  # every match holds one of them; None: unknown
    final_only: bool  # named groups: matched only when the line is final
    probes: tuple[str, ...] = ()  # the rarest character of each literal, looked for first


class RuleSet:
    """Rules in order, searched in a line or in a block of lines.

    Lines are matched as their newest ``max_line_chars`` characters, as the
    line matcher keeps them.
    """

    def __init__(self, max_line_chars: int) -> None:
        self._max = max_line_chars
        self._entries: list[_Entry] = []

    @property
    def rules(self) -> list[Rule]:
        return [entry.rule for entry in self._entries]

    @property
    def any_partial(self) -> bool:
        return any(entry.rule.partial for entry in self._entries)

    def add(self, rule: Rule) -> None:
        """Add ``rule`` last, replacing a rule of the same name."""
        self.remove(rule.name)
        pattern = rule.pattern
        literals = required_literals(pattern)
        probes = tuple(map(rarest_char, literals)) if literals is not None else ()
        self._entries.append(
            _Entry(rule, _block_pattern(pattern), literals, rule.has_groups, probes)
        )

    def remove(self, name: str) -> None:
        self._entries = [entry for entry in self._entries if entry.rule.name != name]

    def line_hits(
        self, line: str, *, partial_only: bool = False, final: bool = True, echo: bool = False
    ) -> list[Hit]:
        """The hits in ``line``, in rule order. Only partial rules if
        ``partial_only``; rules with named groups only if ``final``; no
        echo-checked rule when ``line`` is an echo."""
        hits = []
        for entry in self._entries:
            rule = entry.rule
            if (partial_only and not rule.partial) or (entry.final_only and not final):
                continue
            if echo and rule.echo_check:
                continue
            if entry.literals is not None and not any(lit in line for lit in entry.literals):
                continue
            m = rule.pattern.search(line)
            if m:
                hits.append(Hit(rule, line, _groups(m), m.span()))
        return hits

    def block_hits(self, text: str, start: int, end: int) -> list[tuple[int, Hit]]:
        """The hits in the LF-separated lines of ``text[start:end]``, in line
        order, then rule order, each with the index of its line."""
        if end - start > self._max:
            text, start, end = self._cut_long_lines(text, start, end)
        found: list[tuple[int, int, Hit]] = []  # (line offset, rule order, hit)
        for order, entry in enumerate(self._entries):
            if entry.literals is not None and not any(
                text.find(probe, start, end) >= 0 and text.find(lit, start, end) >= 0
                for lit, probe in zip(entry.literals, entry.probes, strict=True)
            ):
                continue  # no line of the block can match
            if entry.block is None:
                found += self._each_line(text, start, end, order, entry.rule)
                continue
            m = entry.block.search(text, start, end)
            if m is not None:
                found += self._located(text, start, end, order, entry, m)
        found.sort(key=lambda f: f[:2])
        return [(text.count("\n", start, offset), hit) for offset, _, hit in found]

    def _cut_long_lines(self, text: str, start: int, end: int) -> tuple[str, int, int]:
        """Cut lines to their newest ``max_line_chars`` characters, as the
        pending line is: the block search must see the lines that are matched
        (``^`` finds the start of the cut line, not of the whole one)."""
        lines = text[start:end].split("\n")
        if max(map(len, lines)) <= self._max:
            return text, start, end
        block = "\n".join(line[-self._max :] for line in lines)
        return block, 0, len(block)

    def _located(
        self, text: str, start: int, end: int, order: int, entry: _Entry, m: re.Match[str] | None
    ) -> list[tuple[int, int, Hit]]:
        """Check the lines where the block search found something.

        Every line with a match of its own is looked at: the block search
        from a line's start finds a match there or in an earlier line.
        """
        rule, block = entry.rule, entry.block
        assert block is not None
        found = []
        while m is not None:
            nl = text.rfind("\n", start, m.start())
            begin = start if nl < 0 else nl + 1
            stop = text.find("\n", m.start(), end)
            stop = end if stop < 0 else stop
            line = text[begin:stop][-self._max :]
            hit = rule.pattern.search(line) if line else None
            if hit:
                found.append((begin, order, Hit(rule, line, _groups(hit), hit.span())))
            m = block.search(text, stop + 1, end) if stop < end else None
        return found

    def _each_line(
        self, text: str, start: int, end: int, order: int, rule: Rule
    ) -> list[tuple[int, int, Hit]]:
        found = []
        offset = start
        for line in text[start:end].split("\n"):
            kept = line[-self._max :]
            hit = rule.pattern.search(kept) if kept else None
            if hit:
                found.append((offset, order, Hit(rule, kept, _groups(hit), hit.span())))
            offset += len(line) + 1
        return found
