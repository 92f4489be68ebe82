"""Secrets hidden in what agentd writes: each replaced by ``***``.

Values of environment variables whose names contain a marker (KEY, TOKEN,
SECRET, PASSWORD) are secrets (SPEC section 5). The ``Redactor`` is pure
(bytes in, bytes out, or text in, text out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
# Values shorter than this are not treated as secrets: replacing "1" or "yes"
# everywhere would garble the transcript and leak nothing worth hiding.
MIN_SECRET_LEN = 4
MASK = b"***"


def secrets_from_env(env: Mapping[str, str]) -> list[str]:
    """Values of variables whose name contains a marker, longest first.

    Longest first so that a secret containing another is replaced whole.
    """
    found = {
        value
        for name, value in env.items()
        if len(value) >= MIN_SECRET_LEN and any(m in name.upper() for m in SECRET_MARKERS)
    }
    return sorted(found, key=lambda v: (-len(v), v))


class Redactor:
    """Replaces secrets in a byte stream, also when a chunk cuts one in two.

    ``redact`` holds back the end of a chunk while it could still be the start
    of a secret (at most the longest secret's length - 1 bytes) and emits it
    with the next call or ``flush``. The output of any chunking equals the
    output for the whole stream.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        # A terminal shows a multi-line secret (a PEM key) with CRLF line ends.
        variants = {v for s in secrets if s for v in (s, s.replace("\n", "\r\n"))}
        ordered = sorted(variants, key=lambda s: (-len(s), s))
        self._secrets = [s.encode("utf-8") for s in ordered]
        self._longest = max((len(s) for s in self._secrets), default=0)
        # Alternation tries longest first at each position: leftmost, then longest.
        self._bytes_re = re.compile(b"|".join(re.escape(s) for s in self._secrets) or b"(?!)")
        self._text_re = re.compile("|".join(re.escape(s) for s in ordered) or "(?!)")
        self._by_first: dict[bytes, list[bytes]] = {}
        for secret in self._secrets:
            self._by_first.setdefault(secret[:1], []).append(secret)
        self._held = b""

    def redact(self, data: bytes) -> bytes:
        if not self._secrets:
            return data
        buf = self._held + data
        # A match decision at position p needs buf[p : p + longest]; before
        # `settled` every decision is final whatever comes next.
        settled = len(buf) - self._longest + 1
        out: list[bytes] = []
        done = 0
        # memmem per secret is ~20x faster than the regex scan: most chunks
        # hold no secret, and then only the tail needs a look.
        whole = any(s in buf for s in self._secrets)
        for m in self._bytes_re.finditer(buf) if whole else ():
            if m.start() >= settled:
                break
            out += (buf[done : m.start()], MASK)
            done = m.end()
        keep = self._hold_from(buf, max(done, settled))
        out.append(buf[done:keep])
        self._held = buf[keep:]
        return b"".join(out)

    def flush(self) -> bytes:
        """Emit what is held back (end of stream)."""
        held, self._held = self._held, b""
        return self._bytes_re.sub(MASK, held)

    def redact_text(self, text: str) -> str:
        return self._text_re.sub(MASK.decode(), text) if self._secrets else text

    def _hold_from(self, buf: bytes, start: int) -> int:
        """First index from ``start`` where a secret could begin or does."""
        found = len(buf)
        for first, secrets in self._by_first.items():  # bytes.find: no loop per byte
            i = buf.find(first, start, found)
            while i >= 0:
                tail = buf[i:]
                if any(s.startswith(tail) or tail.startswith(s) for s in secrets):
                    found = i
                    break
                i = buf.find(first, i + 1, found)
        return found
