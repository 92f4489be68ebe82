"""Terminal escape grammar, and a quick reading of it as lines for people.

The extent of each sequence (CSI, ESC, OSC/DCS/APC strings) is defined here.
``strip_ansi`` reads text the way a person skims a transcript (``agentctl
logs``): carriage returns, line/screen erases and vertical cursor moves break
the line, horizontal cursor moves become one space, every other sequence and
control is dropped. The line matcher reads a model of the screen instead
(``agentd.terminal.screen``) and takes from here what carries a sequence or
string cut by a chunk end over to the next chunk (``ChunkCut``), on the raw
bytes. Pure.
"""

from __future__ import annotations

import re

# --- the escape grammar ------------------------------------------------------
# Every ESC starts a sequence, and no sequence contains an ESC, so the extent
# of each sequence is decided by the characters right after its ESC. The
# bounds keep the carried-over prefix of a cut sequence small. Parameter,
# intermediate and final bytes are disjoint ranges, so the possessive repeats
# (``{0,64}+``: no backtracking, several times faster) change no result.
_CSI_REST = r"\[[0-?]{0,64}+[ -/]{0,16}+"  # after ESC; then one final byte in @-~
_CSI = r"\x1b" + _CSI_REST
_BODY = r"[^\x07\x18\x1a\x1b]*+"  # OSC/DCS/SOS/PM/APC text: ends at BEL, CAN, SUB or ESC
_STRINGS = re.compile(r"\x1b[\]PX^_]" + _BODY + r"\x07?")
_BREAKS = re.compile(_CSI + r"[ABEFHJKLMSTdef]|\x1b[DEM]")
_SPACES = re.compile(_CSI + r"[CDGIZ`a]")
_DROPS = re.compile(r"\x1b(?:" + _CSI_REST + r"[@-~]|[ -/]{0,8}+[0-~])?")
# The tail of a chunk that more input could still turn into another sequence,
# the start of a string cut by the chunk end, and the rest of a string, as
# they show in the raw bytes (the grammar is ASCII).
INCOMPLETE_BYTES = re.compile((r"\x1b(?:" + _CSI_REST + r"|[ -/]{0,8}+)?").encode())
OPEN_STRING_BYTES = re.compile((r"\x1b[\]PX^_]" + _BODY).encode())
STRING_REST_BYTES = re.compile((_BODY + r"\x07?").encode())
# Single control characters: CR, VT, FF break the line, TAB is a space, the
# rest of C0 and C1 is dropped.
_ASCII_MAP = bytes.maketrans(b"\r\x0b\x0c\t", b"\n\n\n ")
_ASCII_DROP = bytes(range(0x09)) + bytes(range(0x0E, 0x20)) + b"\x7f"
_C1_UTF8 = re.compile(b"\xc2[\x80-\x9f]")  # U+0080..U+009F encoded


# Bytes that are not the lead byte of U+3000..U+FFFF in UTF-8 (E3..EF):
# deleting them with bytes.translate (a C pass) leaves nothing when a text has
# no CJK, ~4x faster than a regex scan for the range.
_NOT_CJK_LEAD = bytes(b for b in range(256) if not 0xE3 <= b <= 0xEF)


def _controls(text: str) -> tuple[str, bool]:
    """``text`` with control characters rewritten, and whether it may hold CJK."""
    # bytes.translate: one C pass, ~10x faster than a regex scan over a str.
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_MAP, _ASCII_DROP).decode("ascii"), False
    # In UTF-8 an ASCII byte is always that character, never part of another,
    # so C0 controls are translated on the encoded text too; C1 controls are
    # two bytes there (C2 80..C2 9F), and dropped where a C2 byte shows up.
    data = text.encode("utf-8", "surrogatepass").translate(_ASCII_MAP, _ASCII_DROP)
    if b"\xc2" in data:
        data = _C1_UTF8.sub(b"", data)
    return data.decode("utf-8", "surrogatepass"), bool(data.translate(None, _NOT_CJK_LEAD))


def rewrite(text: str) -> str:
    """``text`` with each sequence turned into LF (break), space, or nothing.

    ``text`` must not end inside a sequence (the matcher carries such a tail
    over to the next chunk). LF is the only line break in the result.
    """
    return rewrite_cjk(text)[0]


def rewrite_cjk(text: str) -> tuple[str, bool]:
    """``rewrite``, and whether the result may hold CJK (False: it holds none)."""
    if "\x1b" in text:
        # Strings go first: their text may hold anything but ESC, so a later
        # LF or TAB must not land inside one. The replacements (NUL, dropped
        # at the end; LF; TAB, a space at the end) cannot extend a CSI or an
        # ESC sequence, so each pass sees the sequences of the original text.
        text = _STRINGS.sub("\x00", text)
        text = _BREAKS.sub("\n", text)
        text = _SPACES.sub("\t", text)
        text = _DROPS.sub("", text)
    return _controls(text)


def strip_ansi(data: str) -> list[str]:
    """The non-empty lines a complete string shows once escapes are rewritten."""
    return [line for line in rewrite(data).split("\n") if line]


def cut_character(data: bytes) -> int:
    """How many bytes at the end of ``data`` begin a UTF-8 character that the
    next chunk completes (0 if none)."""
    for back in range(1, min(len(data), 3) + 1):
        byte = data[-back]
        if byte < 0x80:
            return 0
        if byte >= 0xC0:  # a lead byte: how long is its character?
            return back if back < (2 if byte < 0xE0 else 3 if byte < 0xF0 else 4) else 0
    return 0


class ChunkCut:
    """What a chunk's end cut through, for the next chunk: a sequence or a UTF-8
    character is carried over (a few bytes), an OSC or DCS string is skipped by
    a flag rather than buffered. Each chunk then decodes alone, and a C1
    control is whole."""

    __slots__ = ("carry", "in_string")

    def __init__(self) -> None:
        self.carry = b""  # a cut escape sequence or character, read with the next chunk
        self.in_string = False  # inside an OSC/DCS/... string: skip to its end

    def whole(self, data: bytes, *, final: bool) -> bytes:
        """``data`` after what the chunk before cut off, less what its own end cuts
        off (kept for the next chunk; nothing is kept from the ``final`` one)."""
        if self.carry:
            data, self.carry = self.carry + data, b""
        if self.in_string:
            data = self._skip_string(data)
        if not final:
            data = self._hold_back(data)
        return data

    def _skip_string(self, data: bytes) -> bytes:
        m = STRING_REST_BYTES.match(data)
        end = m.end() if m else 0
        if end == len(data) and not data.endswith(b"\x07"):
            return b""  # the string goes on in the next chunk
        self.in_string = False
        return data[end:]

    def _hold_back(self, data: bytes) -> bytes:
        """Keep a sequence or a UTF-8 character cut by the chunk end for the
        next chunk."""
        last = data.rfind(b"\x1b")
        if last >= 0:
            if INCOMPLETE_BYTES.fullmatch(data, last):
                self.carry = data[last:]
                cut_short = data.rfind(b"\x1b", 0, last)
                if cut_short >= 0 and INCOMPLETE_BYTES.fullmatch(data, cut_short, last):
                    last = cut_short  # an ESC ends it: gone, as clean drops it in one chunk
                return data[:last]
            if OPEN_STRING_BYTES.fullmatch(data, last):
                self.in_string = True  # clean drops the started string
        cut = cut_character(data) if data and data[-1] >= 0x80 else 0
        if cut:
            self.carry = data[-cut:]
            return data[:-cut]
        return data
