"""State text made safe to hand over: control characters shown, never sent.

A bootstrap is data. It is typed into a terminal (where ``\\x03`` is Ctrl-C
and ``ESC`` starts a command to the terminal), passed as an argument (where
a NUL byte ends it, and exec refuses it) or written to a file; whatever a
state file holds, none of its characters may act. ``escape_controls``
replaces each C0 or C1 control character other than tab and newline, DEL,
and each unpaired surrogate (JSON's ``"\\ud800"``, which no encoder takes)
by its escape as Python writes it: ``\\x03``, ``\\x1b``, ``\\ud800``.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROLS = [chr(c) for c in (*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]
_SURROGATES = re.compile("[\ud800-\udfff]")
_NAMES = {
    "\x00": "NUL",
    "\x03": "Ctrl-C",
    "\x04": "Ctrl-D",
    "\x1b": "ESC",
    "\r": "CR",
    "\x7f": "DEL",
}


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_TABLE = {ord(c): _escaped(c) for c in _CONTROLS}


def escape_controls(text: str) -> tuple[str, list[str]]:
    """``text`` with its unsafe characters escaped, and the names of those found
    (each once, in order of appearance). Linear and at C speed: a state file
    of four megabytes of NUL bytes takes milliseconds."""
    if not _UNSAFE.search(text):
        return text, []
    found = [c for c in _CONTROLS if c in text]
    surrogates = set(_SURROGATES.findall(text)) if _SURROGATES.search(text) else set()
    table = {**_TABLE, **{ord(c): _escaped(c) for c in surrogates}} if surrogates else _TABLE
    found += surrogates
    found.sort(key=text.index)
    return text.translate(table), [_NAMES.get(c, _escaped(c)) for c in found]


def escape_lines(lines: list[str]) -> list[str]:
    """Escape every line of ``lines`` in place; the names of what was found."""
    found: dict[str, None] = {}
    for i, line in enumerate(lines):
        clean, names = escape_controls(line)
        if names:
            lines[i] = clean
            found.update(dict.fromkeys(names))
    return list(found)
