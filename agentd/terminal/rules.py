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
from collections.abc import Callable
from dataclasses import dataclass, field

from agentd.regexes import MATCH_BUDGET, Found, MatchTimeout, Searcher, searcher
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
    # Told why when a search of the rule runs over the time budget and the rule is
    # dropped for the rest of the session (``agentd.regexes``).
    on_timeout: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

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


def _block_pattern(pattern: re.Pattern[str]) -> Searcher | None:
    if _NO_BLOCK.search(pattern.pattern):
        return None
    return searcher(re.compile(pattern.pattern, pattern.flags | re.MULTILINE))


def _groups(m: Found) -> dict[str, str]:
    return {k: v for k, v in m.groupdict().items() if v is not None}


@dataclass(frozen=True)
class _Entry:
    rule: Rule
    line: Searcher  # the rule's pattern
    block: Searcher | None  # searches many lines at once; None: line by line
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
        self.dropped: list[tuple[str, str]] = []  # (rule, why): over the time budget
        self.version = 0  # counts the changes of the rules (added, removed, dropped)

    @property
    def rules(self) -> list[Rule]:
        return [entry.rule for entry in self._entries]

    @property
    def any_partial(self) -> bool:
        return any(entry.rule.partial for entry in self._entries)

    def add(self, rule: Rule) -> None:
        """Add ``rule`` last, replacing a rule of the same name."""
        self.remove(rule.name)
        self.version += 1
        pattern = rule.pattern
        literals = required_literals(pattern)
        probes = tuple(map(rarest_char, literals)) if literals is not None else ()
        self._entries.append(
            _Entry(
                rule,
                searcher(pattern),
                _block_pattern(pattern),
                literals,
                rule.has_groups,
                probes,
            )
        )

    def remove(self, name: str) -> None:
        self._entries = [entry for entry in self._entries if entry.rule.name != name]
        self.version += 1

    def line_hits(
        self, line: str, *, partial_only: bool = False, final: bool = True, echo: bool = False
    ) -> list[Hit]:
        """The hits in ``line``, in rule order. Only partial rules if
        ``partial_only``; rules with named groups only if ``final``; no
        echo-checked rule when ``line`` is an echo."""
        hits = []
        for entry in list(self._entries):
            rule = entry.rule
            if (partial_only and not rule.partial) or (entry.final_only and not final):
                continue
            if echo and rule.echo_check:
                continue
            if entry.literals is not None and not any(lit in line for lit in entry.literals):
                continue
            try:
                m = entry.line.search(line)
            except MatchTimeout as exc:
                self._drop(entry, exc)
                continue
            if m:
                hits.append(Hit(rule, line, _groups(m), m.span()))
        return hits

    def block_hits(self, text: str, start: int, end: int) -> list[tuple[int, Hit]]:
        """The hits in the LF-separated lines of ``text[start:end]``, in line
        order, then rule order, each with the index of its line."""
        if end - start > self._max:
            text, start, end = self._cut_long_lines(text, start, end)
        found: list[tuple[int, int, Hit]] = []  # (line index, rule order, hit)
        encoded: bytes | None = None  # the block in UTF-8, for the rules on RE2
        for order, entry in enumerate(list(self._entries)):
            if entry.literals is not None and not any(
                text.find(probe, start, end) >= 0 and text.find(lit, start, end) >= 0
                for lit, probe in zip(entry.literals, entry.probes, strict=True)
            ):
                continue  # no line of the block can match
            try:
                if entry.block is None:
                    found += self._each_line(text, start, end, order, entry)
                elif entry.block.linear:
                    if encoded is None:
                        encoded = text[start:end].encode("utf-8", "surrogatepass")
                    found += self._located_bytes(encoded, order, entry, entry.block)
                else:
                    found += self._located(text, start, end, order, entry, entry.block)
            except MatchTimeout as exc:
                self._drop(entry, exc)
        found.sort(key=lambda f: f[:2])
        return [(index, hit) for index, _, hit in found]

    def _drop(self, entry: _Entry, exc: MatchTimeout) -> None:
        """The rule ran over the time budget on this text: drop it for good."""
        self._entries = [e for e in self._entries if e is not entry]
        self.version += 1
        why = (
            f"{exc}: its pattern backtracks on the agent's output (more than "
            f"{MATCH_BUDGET:g}s on one line); the sentinel is off for the rest of this "
            "session: rewrite the pattern (`agentd check` says what in it backtracks)"
        )
        self.dropped.append((entry.rule.name, why))
        if entry.rule.on_timeout is not None:
            entry.rule.on_timeout(why)

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
        self, text: str, start: int, end: int, order: int, entry: _Entry, block: Searcher
    ) -> list[tuple[int, int, Hit]]:
        """Check the lines where the block search found something.

        Every line with a match of its own is looked at: the block search
        from a line's start finds a match there or in an earlier line.
        """
        found = []
        m = block.search(text, start, end)
        while m is not None:
            nl = text.rfind("\n", start, m.start())
            begin = start if nl < 0 else nl + 1
            stop = text.find("\n", m.start(), end)
            stop = end if stop < 0 else stop
            hit = self._line_hit(entry, text[begin:stop])
            if hit is not None:
                found.append((text.count("\n", start, begin), order, hit))
            m = block.search(text, stop + 1, end) if stop < end else None
        return found

    def _located_bytes(
        self, data: bytes, order: int, entry: _Entry, block: Searcher
    ) -> list[tuple[int, int, Hit]]:
        """``_located`` on the block in UTF-8 (RE2 searches bytes without copying
        them again); lines are counted as the search goes."""
        found = []
        end = len(data)
        counted, lines = 0, 0  # `lines` newlines before byte `counted` (a line's start)
        m = block.search_bytes(data, 0, end)
        while m is not None:
            at = m.start()
            nl = data.rfind(b"\n", counted, at)
            begin = counted if nl < 0 else nl + 1
            lines += data.count(b"\n", counted, begin)
            counted = begin
            stop = data.find(b"\n", at, end)
            stop = end if stop < 0 else stop
            hit = self._line_hit(entry, data[begin:stop].decode("utf-8", "surrogatepass"))
            if hit is not None:
                found.append((lines, order, hit))
            m = block.search_bytes(data, stop + 1, end) if stop < end else None
        return found

    def _line_hit(self, entry: _Entry, line: str) -> Hit | None:
        kept = line[-self._max :]
        m = entry.line.search(kept) if kept else None
        return Hit(entry.rule, kept, _groups(m), m.span()) if m else None

    def _each_line(
        self, text: str, start: int, end: int, order: int, entry: _Entry
    ) -> list[tuple[int, int, Hit]]:
        found = []
        for index, line in enumerate(text[start:end].split("\n")):
            hit = self._line_hit(entry, line)
            if hit is not None:
                found.append((index, order, hit))
        return found
