"""The line matcher: raw pty bytes in, sentinel hits out (SPEC section 3).

Pure: no I/O, no clock. A session feeds every pty read to ``LineMatcher.feed``
and acts on the returned hits.

Pipeline of one ``feed``::

    bytes -> incremental UTF-8 decode -> escape/control sequences rewritten
          -> lines -> echo filter -> ``rule.pattern.search(line)`` per rule

Every escape or control sequence becomes one of three things: a line break
(CR, LF, line/screen erase, vertical or absolute cursor moves), one space
(horizontal cursor moves: TUIs skip blank cells that way) or nothing (SGR and
every other sequence). Empty lines are never matched.

The result does not depend on how the stream is cut into chunks: an escape
sequence cut at a chunk end is carried over (at most ~90 characters), an OSC
or DCS string is skipped by a flag rather than buffered (so its length costs
no memory), and the pending line keeps only its newest ``max_line_chars``
characters, whatever the chunking.

Speed: the rewrite is four ``re.sub`` passes with constant replacements and
one ``bytes.translate`` (on the UTF-8 bytes when the text is not ASCII), so C
does the work; chunks without ESC skip the passes. Each rule first looks for
a literal that every match holds (``regexlit``) with ``str.find``, then
searches all complete lines of a chunk at once, and only looks at single lines
when that finds something. ~75 MB/s for tool output in 4 KiB reads (the pty's
read size), against ~35 MB/s with a regex scan per rule and a str pass for
controls.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Sequence

from agentd.terminal.ansi import INCOMPLETE, OPEN_STRING, STRING_REST, rewrite_cjk
from agentd.terminal.echo import EchoFilter
from agentd.terminal.regexlit import required_literal
from agentd.terminal.rules import Hit, Rule, _block_pattern, _groups
from agentd.tokens import count_cjk

PARTIAL_MAX = 4096  # longest unterminated line check_partial looks at


class LineMatcher:
    """Feeds pty output, returns sentinel hits; see the module docstring."""

    def __init__(self, rules: Sequence[Rule] = (), *, max_line_chars: int = 65536) -> None:
        if max_line_chars < 1:
            raise ValueError("max_line_chars must be positive")
        self._max = max_line_chars
        # (rule, its block pattern or None, a literal every match holds or None)
        self._rules: list[tuple[Rule, re.Pattern[str] | None, str | None]] = []
        self._literals: dict[str, str | None] = {}  # rule name -> literal
        for rule in rules:
            self.add_rule(rule)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._carry = ""  # a cut escape sequence, re-read with the next chunk
        self._in_string = False  # inside an OSC/DCS/... string: skip to its end
        self._pending: list[str] = []  # the unterminated line, in pieces
        self._pending_len = 0
        self._partial_hits: set[str] = set()  # rules check_partial reported for it
        self._partial_new = False  # pending line or rules changed since check_partial
        self._echo = EchoFilter()
        self._cjk = 0
        self._other = 0
        self.bytes_in = 0

    # -- rules and echo --
    @property
    def rules(self) -> list[Rule]:
        return [rule for rule, _, _ in self._rules]

    def add_rule(self, rule: Rule) -> None:
        """Add ``rule``, replacing a rule of the same name."""
        self.remove_rule(rule.name)
        literal = required_literal(rule.pattern)
        self._rules.append((rule, _block_pattern(rule.pattern), literal))
        self._literals[rule.name] = literal
        self._partial_new = True

    def remove_rule(self, name: str) -> None:
        self._rules = [entry for entry in self._rules if entry[0].name != name]
        self._literals.pop(name, None)

    def expect_echo(self, text: str) -> None:
        """Lines echoing ``text`` (just injected) won't hit echo-checked rules."""
        self._echo.expect(text)

    @property
    def tokens(self) -> int:
        """Estimated tokens of all text fed so far (see agentd.tokens)."""
        return self._cjk + (self._other + 3) // 4

    # -- feeding --
    def feed(self, data: bytes) -> list[Hit]:
        self.bytes_in += len(data)
        return self._ingest(self._decoder.decode(data), final=False)

    def flush(self) -> list[Hit]:
        """End of stream: match the pending line, then start afresh."""
        hits = self._ingest(self._decoder.decode(b"", final=True), final=True)
        hits += self._complete_line(self._take_pending())
        self._decoder.reset()
        self._carry, self._in_string = "", False
        return hits

    def check_partial(self) -> list[Hit]:
        """Match the unterminated line now (a prompt waiting for input).

        A rule reported here is not reported again when this line completes.
        Cheap to call after every feed: it only looks again when the line or
        the rules changed, and a partial line longer than ``PARTIAL_MAX``
        characters is no prompt (it is matched when it completes), so a
        20 MB line costs no repeated searches.
        """
        if not self._partial_new or min(self._pending_len, self._max) > PARTIAL_MAX:
            return []
        if not any(r.partial for r, _, _ in self._rules):
            return []
        self._partial_new = False
        line = self._peek_pending()
        if not line:
            return []
        rules = [r for r, _, _ in self._rules if r.partial and r.name not in self._partial_hits]
        hits = self._match(line, rules, echo=self._echo.peek(line))
        self._partial_hits.update(h.rule.name for h in hits)
        return hits

    def _ingest(self, text: str, *, final: bool) -> list[Hit]:
        text = self._carry + text
        self._carry = ""
        if self._in_string:
            text = self._skip_string(text)
        if not final:
            text = self._hold_back(text)
        if not text:
            return []
        text, maybe_cjk = rewrite_cjk(text)
        self._count(text, maybe_cjk)
        last = text.rfind("\n")
        if last < 0:
            self._append_pending(text)
            return []
        if self._pending:  # one block with the line's start: fewer searches per chunk
            head = self._take_pending()
            text, last = head + text, last + len(head)
        hits: list[Hit] = []
        start = 0
        if self._partial_hits:  # that line skips the rules check_partial reported
            first = text.find("\n")
            hits += self._complete_line(text[:first][-self._max :])
            start = first + 1
        if start <= last:
            hits += self._complete_block(text, start, last)
        self._append_pending(text[last + 1 :])
        return hits

    def _skip_string(self, text: str) -> str:
        m = STRING_REST.match(text)
        end = m.end() if m else 0
        if end == len(text) and not text.endswith("\x07"):
            return ""  # the string goes on in the next chunk
        self._in_string = False
        return text[end:]

    def _hold_back(self, text: str) -> str:
        """Keep a sequence cut by the chunk end for the next chunk."""
        last = text.rfind("\x1b")
        if last < 0:
            return text
        if INCOMPLETE.fullmatch(text, last):
            self._carry = text[last:]
            return text[:last]
        if OPEN_STRING.fullmatch(text, last):
            self._in_string = True  # rewrite drops the started string
        return text

    def _count(self, text: str, maybe_cjk: bool) -> None:
        # CJK is U+3000 and up: a cheap check (``_controls``) spares most text
        # the many-range count (box drawing, arrows and accents are below it).
        cjk = count_cjk(text) if maybe_cjk else 0
        self._cjk += cjk
        self._other += len(text) - text.count("\n") - cjk

    # -- the pending line --
    def _append_pending(self, piece: str) -> None:
        if not piece:
            return
        self._pending.append(piece)
        self._pending_len += len(piece)
        self._partial_new = True
        if self._pending_len > 2 * self._max:  # trim rarely: amortised O(1) per char
            kept = "".join(self._pending)[-self._max :]
            self._pending, self._pending_len = [kept], len(kept)

    def _peek_pending(self) -> str:
        line = "".join(self._pending)[-self._max :]
        self._pending, self._pending_len = ([line] if line else []), len(line)
        return line

    def _take_pending(self) -> str:
        line = self._peek_pending()
        self._pending, self._pending_len = [], 0
        return line

    # -- matching --
    def _complete_line(self, line: str) -> list[Hit]:
        skip = self._partial_hits
        self._partial_hits = set()
        if not line:
            return []
        echo = self._echo.active and self._echo.consume(line)
        rules = [r for r, _, _ in self._rules if r.name not in skip] if skip else self.rules
        return self._match(line, rules, echo=echo)

    def _complete_block(self, text: str, start: int, end: int) -> list[Hit]:
        """Match the complete lines in ``text[start:end]`` (LF-separated)."""
        if end - start > self._max:
            text, start, end = self._cut_long_lines(text, start, end)
        if self._echo.active:  # every line must go past the echo cursor
            hits: list[Hit] = []
            for line in text[start:end].split("\n"):
                hits += self._complete_line(line[-self._max :])
            return hits
        found: list[tuple[int, int, Hit]] = []  # (line offset, rule order, hit)
        for order, (rule, block, literal) in enumerate(self._rules):
            if literal is not None and text.find(literal, start, end) < 0:
                continue  # no line of the block can match
            if block is None:
                found += self._each_line(text, start, end, order, rule)
                continue
            m = block.search(text, start, end)
            if m is not None:
                found += self._located(text, start, end, order, rule, block, m)
        if not found:
            return []
        found.sort(key=lambda f: f[:2])
        return [hit for _, _, hit in found if not self._redrawn(hit)]

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
        self,
        text: str,
        start: int,
        end: int,
        order: int,
        rule: Rule,
        block: re.Pattern[str],
        m: re.Match[str] | None,
    ) -> list[tuple[int, int, Hit]]:
        """Check the lines where the block search found something.

        Every line with a match of its own is looked at: the block search
        from a line's start finds a match there or in an earlier line.
        """
        found = []
        while m is not None:
            nl = text.rfind("\n", start, m.start())
            begin = start if nl < 0 else nl + 1
            stop = text.find("\n", m.start(), end)
            stop = end if stop < 0 else stop
            line = text[begin:stop][-self._max :]
            hit = rule.pattern.search(line) if line else None
            if hit:
                found.append((begin, order, Hit(rule, line, _groups(hit))))
            m = block.search(text, stop + 1, end) if stop < end else None
        return found

    def _each_line(
        self, text: str, start: int, end: int, order: int, rule: Rule
    ) -> list[tuple[int, int, Hit]]:
        found = []
        offset = start
        for line in text[start:end].split("\n"):
            hit = rule.pattern.search(line[-self._max :]) if line else None
            if hit:
                found.append((offset, order, Hit(rule, line[-self._max :], _groups(hit))))
            offset += len(line) + 1
        return found

    def _redrawn(self, hit: Hit) -> bool:
        return hit.rule.echo_check and self._echo.is_redraw(hit.line)

    def _match(self, line: str, rules: Iterable[Rule], *, echo: bool) -> list[Hit]:
        hits = []
        for rule in rules:
            if echo and rule.echo_check:
                continue
            literal = self._literals.get(rule.name)
            if literal is not None and literal not in line:
                continue
            m = rule.pattern.search(line)
            if m:
                hits.append(Hit(rule, line, _groups(m)))
        if hits and not echo:
            hits = [h for h in hits if not self._redrawn(h)]
        return hits
