"""Echo of injected text: output lines that only show what agentd typed.

A TUI displays its argv prompt and a terminal echoes typed input; such lines
must never fire a sentinel, or a bootstrap that mentions "Compacting
conversation" would restart the agent forever.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
_ECHO_SLACK = 256  # normalised chars an echo line may skip (lines a TUI drops)
_ECHO_PATIENCE = 1000  # non-echo lines in a row before we stop expecting echo
_REDRAW_MIN = 8  # shorter echo lines are too common to remember as redraws
_REDRAW_MAX = 4096  # bound on remembered echo lines


def _normalise(text: str) -> str:
    # case kept: a terminal echoes what was typed as it was typed, and "GO" printed
    # by the agent is not the echo of a bootstrap that says "sentinel:go"
    return "".join(_WORD.findall(text))


class EchoFilter:
    """Recognises output lines that only echo text agentd injected.

    Trade-off: injected text is consumed in order. A line is echo if its word
    characters occur in the injected text at most ``_ECHO_SLACK`` characters
    past the cursor; the cursor then moves past it. So an echo of a bootstrap
    that mentions "Compacting conversation" does not restart the agent, while
    the same words printed later by the agent do hit: by then the cursor has
    moved past the mention. What this costs: (a) while echo is expected, a
    genuine sentinel whose words happen to come next in the injected text is
    taken for echo once; (b) output that decorates the echo with words of its
    own on the same line is not echo and is matched normally. Expectation ends
    when the cursor reaches the end, or after ``_ECHO_PATIENCE`` non-echo lines
    in a row (the TUI folded the text away, e.g. "[Pasted text +40 lines]").
    TUIs also redraw a prompt they already showed, after the cursor went past
    it; lines consumed as echo are remembered, and a later line equal to one of
    them (in normalised form) is echo too. A genuine sentinel line is only lost
    that way if the injected text held that whole line, word for word.

    A row of the screen is offered again and again as it is drawn and redrawn;
    the position where its text was found is kept with the row (``since``),
    and a row offered again is looked for there first, so that its words are
    not consumed twice.
    """

    def __init__(self) -> None:
        self._want = ""
        self._base = 0  # position of _want[0] in all the text injected so far
        self._pos = 0
        self._misses = 0
        self._seen: set[str] = set()
        self.version = 0  # counts the calls that may change what it says of a line

    @property
    def active(self) -> bool:
        return self._pos < len(self._want)

    def expect(self, text: str) -> None:
        self.version += 1
        self._base += self._pos
        self._want = self._want[self._pos :] + _normalise(text)
        self._pos = 0
        self._misses = 0

    def consume(
        self, line: str, since: int | None = None, before: str = ""
    ) -> tuple[bool, int | None]:
        """Is this final line echo? Moves the cursor past it if so. Returns
        that, and where the line was found (to pass as ``since`` next time,
        with the line as it was then as ``before``)."""
        self.version += 1
        norm = _normalise(line)
        if not norm:
            return False, since
        at = self._again(norm, since)
        if at >= 0 and before:
            self._seen.discard(_normalise(before))  # the row grew: remember it whole
        if at < 0 and self.active:
            at = self._near_cursor(norm)
            if at < 0:
                self._misses += 1
                if self._misses > _ECHO_PATIENCE:
                    self._want, self._base, self._pos = "", self._base + len(self._want), 0
        if at >= 0:
            self._pos = max(self._pos, at + len(norm))
            self._misses = 0
            self._remember(norm)
            return True, self._base + at
        return norm in self._seen, since

    def peek(self, line: str, since: int | None = None) -> bool:
        """Would this (partly drawn) line be echo? Does not move the cursor."""
        if not self.active and not self._seen and since is None:
            return False
        norm = _normalise(line)
        if not norm:
            return False
        return self._again(norm, since) >= 0 or self._near_cursor(norm) >= 0 or norm in self._seen

    def _again(self, norm: str, since: int | None) -> int:
        """Where ``norm`` is, if at ``since`` (in _want), else -1."""
        if since is None or since < self._base:
            return -1
        at = since - self._base
        return at if self._want.startswith(norm, at) else -1

    def _near_cursor(self, norm: str) -> int:
        if not self.active:
            return -1
        return self._want.find(norm, self._pos, self._pos + _ECHO_SLACK + len(norm))

    def is_redraw(self, line: str) -> bool:
        return bool(self._seen) and _normalise(line) in self._seen

    def _remember(self, norm: str) -> None:
        if len(norm) >= _REDRAW_MIN and len(self._seen) < _REDRAW_MAX:
            self._seen.add(norm)
