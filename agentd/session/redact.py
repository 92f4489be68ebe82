"""Secrets hidden in what agentd writes: each replaced by ``***``.

Where secrets come from: values of environment variables whose names contain
a marker (KEY, TOKEN, SECRET, PASSWORD), and what
``secrets_in`` finds in the state a bootstrap shows: values assigned to such
names (``API_TOKEN=...``, ``password: ...``), well-known token shapes
(``TOKEN_SHAPES``) and the unit's ``secrets:`` patterns.

The ``Redactor`` is pure (bytes in, bytes out, or text in, text out). In a
terminal stream it finds a secret also when a chunk cuts it in two, and when
escape sequences (a colour code, a cursor move, an OSC string such as a
title), line breaks (a wrap) or a character drawn over with a backspace
split it up to ``MAX_CUTS`` times (except a line break right after its first
few bytes at the end of a chunk: a line's end is not held back for a short
match). Each watcher of a live terminal gets a ``stream`` of its own; a
drawn screen asks for the ``spans`` to hide. A person's text (``restart
--reason``) has well-known token shapes hidden too (``hide_token_shapes``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from agentd.regexes import MatchTimeout, searcher

Text = TypeVar("Text", str, bytes)

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
# Values shorter than this are not treated as secrets: replacing "1" or "yes"
# everywhere would garble the transcript and leak nothing worth hiding.
MIN_SECRET_LEN = 4
MASK = b"***"
# A secret split more often than this in the output may be missed (a colour
# code per character); splitting it once or twice is what a terminal does.
MAX_CUTS = 3
MIN_PIECE = 6  # bytes of a secret looked for whole before a closer look
# What may split a secret on a terminal: a CSI sequence (colour, cursor move), an
# OSC/DCS/APC string (a title), a two-byte escape, a line break, a backspace (the
# character before it is drawn over by the next one).
_GAP = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\r\n\x08]"
)
# an escape or string the chunk's end cut
_CUT_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*|[\]PX^_][^\x07\x1b]*)?\Z")
BACKSPACE = 0x08
OVERDRAWN = 2  # bytes at a chunk's end that a backspace in the next may draw over
# Learned secrets (from the state) kept per unit, so a state full of them cannot grow it forever.
MAX_LEARNED = 1000
# What replaces output a unit's `secrets:` pattern takes too long on (it backtracks, and
# runs within a time budget: ``agentd.regexes``): hidden whole rather than maybe shown.
TOO_SLOW = "[agentd: output hidden: a `secrets:` pattern took too long on it]\n"

# A value assigned to a name like a secret's, in state text: `GITHUB_TOKEN=ghp_...`,
# `password: "..."`. At least 8 characters, so `password: yes` is left alone.
_ASSIGNED = re.compile(
    r"(?i)\b[\w.-]*(?:key|token|secret|password|passwd)\b['\"]?\s*[:=]\s*"
    r"['\"]?([^\s'\"`,;]{8,})"
)
TOKEN_SHAPES = (
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    r"\b(?:sk|rk)-[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic (sk-ant-...), Stripe
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
    r"\bAIza[0-9A-Za-z_-]{35}",  # Google API key
)
_TOKEN_SHAPES = [re.compile(p) for p in TOKEN_SHAPES]


def secrets_from_env(env: Mapping[str, str]) -> list[str]:
    """Values of variables whose name contains a marker, longest first.

    Longest first so that a secret containing another is replaced whole.
    """
    found = {
        value
        for name, value in env.items()
        if len(value) >= MIN_SECRET_LEN and any(m in name.upper() for m in SECRET_MARKERS)
    }
    return _longest_first(found)


def secrets_in(text: str, patterns: Sequence[re.Pattern[str]] = ()) -> list[str]:
    """The secrets in state text: values assigned to secret-like names, well-known token
    shapes and whatever ``patterns`` (a unit's ``secrets:``) match, longest first."""
    found = {m.group(1) for m in _ASSIGNED.finditer(text)}
    for pattern in (*_TOKEN_SHAPES, *patterns):
        found.update(m.group(0) for m in pattern.finditer(text))
    return _longest_first(s for s in found if len(s) >= MIN_SECRET_LEN)


def _longest_first(values: Iterable[Text]) -> list[Text]:
    return sorted(set(values), key=lambda v: (-len(v), v))


def _shown(raw: bytes) -> tuple[bytes, Sequence[int]]:
    """``raw`` as a terminal shows it in a line (escape sequences and line breaks
    left out, also one the end cut; a character before a backspace left out, as the
    next one draws over it), and for each byte left its index in ``raw``."""
    if b"\x1b" not in raw and b"\r" not in raw and b"\n" not in raw and b"\x08" not in raw:
        return raw, range(len(raw))
    shown = bytearray()
    where: list[int] = []
    at = 0
    for gap in _GAP.finditer(raw):
        if gap.start() > at:
            shown += raw[at : gap.start()]
            where.extend(range(at, gap.start()))
        if raw[gap.start()] == BACKSPACE:
            while shown:  # one character back: its UTF-8 bytes
                byte = shown.pop()
                where.pop()
                if byte < 0x80 or byte >= 0xC0:
                    break
        at = gap.end()
    cut = _CUT_ESCAPE.search(raw, at)
    end = cut.start() if cut is not None else len(raw)
    if end > at:
        shown += raw[at:end]
        where.extend(range(at, end))
    return bytes(shown), where


def _pieces(secret: bytes) -> set[bytes]:
    """Parts of ``secret`` (as written) of which any copy split at most ``MAX_CUTS``
    times more keeps one whole: each run between its own line breaks, in
    ``MAX_CUTS + 1`` parts (fewer for a short run: a short piece is found everywhere, and
    slowly)."""
    out: set[bytes] = set()
    for run in _GAP.split(secret):
        count = max(1, min(MAX_CUTS + 1, len(run) // MIN_PIECE))
        size = len(run) // count
        out.update(
            run[i * size : (i + 1) * size if i < count - 1 else len(run)] for i in range(count)
        )
    out.discard(b"")
    return out


class Redactor:
    """Replaces secrets in a byte stream, also when a chunk cuts one in two.

    ``redact`` holds back the end of a chunk while it could still be the start
    of a secret and emits it with the next call or ``flush``. The output of any
    chunking equals the output for the whole stream. ``patterns`` (a unit's
    ``secrets:``) are matched in text and within what each call emits.
    """

    def __init__(self, secrets: Iterable[str], patterns: Sequence[re.Pattern[str]] = ()) -> None:
        self._patterns = list(patterns)
        self._given = [s for s in secrets if s]
        self._learned: dict[str, None] = {}  # insertion-ordered: the oldest go first
        self._held = b""
        self._compile()

    def learn(self, secrets: Iterable[str]) -> None:
        """Hide these too from now on (secrets found in the state)."""
        new = [s for s in secrets if s and s not in self._learned and s not in self._given]
        if not new:
            return
        self._learned.update(dict.fromkeys(new))
        while len(self._learned) > MAX_LEARNED:
            del self._learned[next(iter(self._learned))]
        self._compile()

    def hide_state(self, text: str, patterns: Sequence[re.Pattern[str]] = ()) -> str:
        """``text`` (state a bootstrap shows) with its secrets hidden (``secrets_in``,
        with ``patterns``: the unit's ``secrets:``); they are learned, so the
        transcript and the events hide them too."""
        self.learn(secrets_in(text, patterns))
        return self.redact_text(text)

    def _compile(self) -> None:
        written = _longest_first([*self._given, *self._learned])
        # A terminal shows a multi-line secret (a PEM key) with CRLF line ends.
        variants = _longest_first({v for s in written for v in (s, s.replace("\n", "\r\n"))})
        self._text_re = re.compile("|".join(re.escape(s) for s in variants) or "(?!)")
        encoded = [s.encode("utf-8") for s in written]
        shown = [s for s in _longest_first(_shown(s)[0] for s in encoded) if s]
        self._secrets = shown
        self._longest = max((len(s) for s in shown), default=0)
        # Alternation tries longest first at each position: leftmost, then longest.
        self._bytes_re = re.compile(b"|".join(re.escape(s) for s in shown) or b"(?!)")
        self._by_first: dict[bytes, list[bytes]] = {}
        for secret in shown:
            self._by_first.setdefault(secret[:1], []).append(secret)
        self._pieces = set().union(*(_pieces(s) for s in encoded)) if encoded else set()
        # How far back a secret's start is looked for when no piece of one is in sight.
        self._reach = self._longest + 64

    def redact(self, data: bytes) -> bytes:
        out, self._held = self.redact_held(self._held, data)
        return out

    def stream(self) -> RedactStream:
        """A stream of its own (what it holds back) for another reader of the same
        output: an attached terminal."""
        return RedactStream(self)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where secrets are in ``text`` (a drawn screen), as (start, end)."""
        found = [m.span() for m in self._text_re.finditer(text)] if self._secrets else []
        for pattern in self._patterns:
            try:
                found += searcher(pattern).spans(text)
            except MatchTimeout:
                return [(0, len(text))]  # it backtracks here: all of it hidden
        return found

    def redact_held(self, held: bytes, data: bytes) -> tuple[bytes, bytes]:
        """``redact`` with what a stream holds back given and returned (``stream``)."""
        if not self._secrets:
            return self._match_patterns(held + data), b""
        buf = held + data
        # memmem per piece is much faster than the scan below: most chunks hold
        # no secret, and then only the tail needs a look.
        start = 0 if any(p in buf for p in self._pieces) else max(0, len(buf) - self._reach)
        region = buf[start:]
        shown, where = _shown(region)
        # A match decision at shown position p needs shown[p : p + longest]; before
        # `settled` every decision is final whatever comes next.
        settled = len(shown) - self._longest + 1
        out, done, done_shown = self._mask(region, shown, where, settled)
        keep_shown = self._hold_from(shown, max(done_shown, settled))
        if (
            len(shown) - keep_shown < MIN_PIECE and b"\n" in region[where[-1] + 1 :]
            if shown
            else False
        ):
            # A line ended: a short held end (a "t" a secret starts with) would keep the
            # line from the transcript until more output comes, maybe for hours.
            keep_shown = len(shown)
        keep = where[keep_shown] if keep_shown < len(shown) else len(region)
        out.append(region[done:keep])
        return self._match_patterns(buf[:start] + b"".join(out)), region[keep:]

    def flush(self) -> bytes:
        """Emit what is held back (end of stream)."""
        held, self._held = self._held, b""
        return self.flush_held(held)

    def flush_held(self, held: bytes) -> bytes:
        shown, where = _shown(held)
        out, done, _ = self._mask(held, shown, where, len(shown) + 1)
        out.append(held[done:])
        return self._match_patterns(b"".join(out))

    def redact_text(self, text: str) -> str:
        if self._secrets:
            text = self._text_re.sub(MASK.decode(), text)
        return self._sub_patterns(text)

    def _sub_patterns(self, text: str) -> str:
        """The unit's ``secrets:`` patterns masked in ``text``, each in linear time or
        within a time budget (the agent writes the text)."""
        for pattern in self._patterns:
            try:
                text = searcher(pattern).sub(MASK.decode(), text)
            except MatchTimeout:
                return TOO_SLOW
        return text

    def _mask(
        self, raw: bytes, shown: bytes, where: Sequence[int], settled: int
    ) -> tuple[list[bytes], int, int]:
        """``raw`` up to the end of the last secret that starts before ``settled``
        (in ``shown``), each secret masked with what splits it; where that end is in
        ``raw`` and in ``shown``."""
        out: list[bytes] = []
        done = done_shown = 0
        for m in self._bytes_re.finditer(shown):
            if m.start() >= settled:
                break
            out += (raw[done : where[m.start()]], MASK)
            done, done_shown = where[m.end() - 1] + 1, m.end()
        return out, done, done_shown

    def _match_patterns(self, data: bytes) -> bytes:
        if not self._patterns or not data:
            return data
        text = self._sub_patterns(data.decode("utf-8", "surrogateescape"))
        return text.encode("utf-8", "surrogateescape")

    def _hold_from(self, buf: bytes, start: int) -> int:
        """First index from ``start`` where a secret could begin or does."""
        found = len(buf)
        for first, secrets in self._by_first.items():  # bytes.find: no loop per byte
            i = buf.find(first, start, found)
            while i >= 0:
                tail = buf[i:]
                # ...also with a few bytes at its end that a backspace in the next chunk
                # may have drawn over (`sk-liveX` + `\bve...`)
                cut = [tail[:-k] for k in range(1, min(OVERDRAWN, len(tail) - 1) + 1)]
                if any(
                    s.startswith(tail) or tail.startswith(s) or any(map(s.startswith, cut))
                    for s in secrets
                ):
                    found = i
                    break
                i = buf.find(first, i + 1, found)
        return found


class RedactStream:
    """One more reader of a redacted stream (``Redactor.stream``): the redactor's
    secrets, what it holds back its own."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._held = b""

    def redact(self, data: bytes) -> bytes:
        out, self._held = self.redactor.redact_held(self._held, data)
        return out

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return self.redactor.flush_held(held)


def hide_token_shapes(text: str) -> str:
    """``text`` (a person's: ``restart --reason``) with well-known token shapes and
    values given to secret-like names replaced by ``***``."""
    for shape in _TOKEN_SHAPES:
        text = shape.sub(MASK.decode(), text)
    return _ASSIGNED.sub(lambda m: m.group(0).replace(m.group(1), MASK.decode()), text)
