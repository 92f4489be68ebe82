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
does the work; chunks without ESC skip the passes. The rules are searched in
all complete lines of a chunk at once (``agentd.terminal.rules.RuleSet``).
~75 MB/s for tool output in 4 KiB reads (the pty's read size), against
~35 MB/s with a regex scan per rule and a str pass for controls.
"""

from __future__ import annotations

import codecs
from collections.abc import Collection, Sequence

from agentd.terminal.ansi import INCOMPLETE, OPEN_STRING, STRING_REST, rewrite_cjk
from agentd.terminal.echo import EchoFilter
from agentd.terminal.rules import Hit, Rule, RuleSet
from agentd.tokens import count_cjk

PARTIAL_MAX = 4096  # longest unterminated line check_partial looks at


class LineMatcher:
    """Feeds pty output, returns sentinel hits; see the module docstring."""

    def __init__(self, rules: Sequence[Rule] = (), *, max_line_chars: int = 65536) -> None:
        if max_line_chars < 1:
            raise ValueError("max_line_chars must be positive")
        self._max = max_line_chars
        self._rules = RuleSet(max_line_chars)
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
        return self._rules.rules

    def add_rule(self, rule: Rule) -> None:
        """Add ``rule``, replacing a rule of the same name."""
        self._rules.add(rule)
        self._partial_new = True

    def remove_rule(self, name: str) -> None:
        self._rules.remove(name)

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
        if not self._rules.any_partial:
            return []
        self._partial_new = False
        line = self._peek_pending()
        if not line:
            return []
        hits = self._match(
            line, skip=self._partial_hits, partial_only=True, echo=self._echo.peek(line)
        )
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
        return self._match(line, skip=skip, echo=echo)

    def _complete_block(self, text: str, start: int, end: int) -> list[Hit]:
        """Match the complete lines in ``text[start:end]`` (LF-separated)."""
        if self._echo.active:  # every line must go past the echo cursor
            hits: list[Hit] = []
            for line in text[start:end].split("\n"):
                hits += self._complete_line(line[-self._max :])
            return hits
        return [hit for hit in self._rules.block_hits(text, start, end) if not self._redrawn(hit)]

    def _redrawn(self, hit: Hit) -> bool:
        return hit.rule.echo_check and self._echo.is_redraw(hit.line)

    def _match(
        self, line: str, *, skip: Collection[str], partial_only: bool = False, echo: bool
    ) -> list[Hit]:
        hits = self._rules.line_hits(line, skip=skip, partial_only=partial_only, echo=echo)
        if hits and not echo:
            hits = [h for h in hits if not self._redrawn(h)]
        return hits
