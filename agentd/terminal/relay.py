"""What of a session's output may reach a person's terminal (``agentctl attach``).

The agent writes the bytes; an attached terminal runs them. Most sequences
only draw, but some make the person's terminal act: OSC 52 writes their
clipboard, and queries (device status, attributes, window reports, colour
and title reports, DECRQSS, XTGETTCAP...) make it answer, and the answer is
typed, as if by the person, into the agent's session. ``TerminalFilter``
passes everything that draws (text, colours, cursor moves, modes, titles,
hyperlinks) and drops the rest: queries, clipboard and colour OSCs, DCS/APC/
PM/SOS strings (queries, image protocols, a multiplexer's pass-through), ENQ
and 8-bit C1 controls. A sequence cut by a chunk's end is carried over
(a few bytes); a string is passed or skipped as it comes, never buffered
whole. Pure.
"""

from __future__ import annotations

import re

# OSC numbers that only draw or describe: titles (0, 1, 2), the working
# directory (7), hyperlinks (8), prompt marks (133, VS Code's 633).
SAFE_OSC = frozenset({0, 1, 2, 7, 8, 133, 633})
MAX_CARRY = 256  # bytes of a cut sequence carried over; a longer one is dropped

_SPECIAL = re.compile(rb"[\x05\x1b\xc2]")
_CSI = re.compile(rb"\x1b\[([0-?]*)([ -/]*)([@-~])")
_CSI_OPEN = re.compile(rb"\x1b\[[0-?]*[ -/]*\Z")
_OSC_HEAD = re.compile(rb"\x1b\](\d*)(;?)")
_ESC_OTHER = re.compile(rb"\x1b[ -/]*[0-~]")
_ESC_OPEN = re.compile(rb"\x1b[ -/]*\Z")
# A string's text: up to ST (ESC \), CAN, SUB (and BEL for an OSC) or an ESC that starts
# something else; a doubled ESC is text (a multiplexer's pass-through doubles the ESCs
# of the sequence it wraps).
_STRING_BODY = re.compile(rb"(?:[^\x1b\x18\x1a]|\x1b\x1b)*")  # DCS, SOS, PM, APC
_OSC_BODY = re.compile(rb"(?:[^\x07\x1b\x18\x1a]|\x1b\x1b)*")
_C1 = re.compile(rb"\xc2[\x80-\x9f]")  # U+0080..U+009F: 8-bit controls, for some terminals


def _query(params: bytes, inter: bytes, final: bytes) -> bool:
    """Does this CSI sequence make a terminal answer (or act on its window)?"""
    lead = params[:1] if params[:1] in (b"?", b">", b"=", b"<") else b""
    if final in (b"n", b"c", b"x"):  # DSR, DA1/DA2/DA3, DECREQTPARM
        return True
    if final == b"t":  # window ops: only the title stack (22, 23) is harmless
        first = params.split(b";", 1)[0]
        return first not in (b"22", b"23")
    if final == b"q":
        return lead == b">" and not inter  # XTVERSION
    if final == b"p":
        return inter == b"$"  # DECRQM
    if final == b"w":
        return inter == b"$"  # DECRQPSR
    if final == b"y":
        return inter == b"*"  # DECRQCRA
    if final == b"|":
        return inter == b"'"  # DECRQLP
    return lead == b"?" and final in (b"S", b"m", b"u")  # XTSMGRAPHICS, XTQMODKEYS, kitty


class TerminalFilter:
    """Output bytes in, the part that may reach a person's terminal out (stateful)."""

    def __init__(self) -> None:
        self._carry = b""
        self._string: bool | None = None  # inside a string: pass it (True) or skip it
        self._body = _OSC_BODY  # the text of the string it is in

    def feed(self, data: bytes) -> bytes:
        data = self._carry + data
        self._carry = b""
        if b"\xc2" in data:  # 8-bit CSI, OSC, DCS... read as the 7-bit ones they are
            data = _C1.sub(lambda m: b"\x1b" + bytes([m.group(0)[1] - 0x40]), data)
        out = bytearray()
        pos = 0
        if self._string is not None:
            pos = self._in_string(data, 0, out)
        while pos < len(data):
            m = _SPECIAL.search(data, pos)
            if m is None:
                out += data[pos:]
                break
            out += data[pos : m.start()]
            pos = self._sequence(data, m.start(), out)
        return bytes(out)

    def _sequence(self, data: bytes, at: int, out: bytearray) -> int:
        """Deal with the special byte at ``at``; where to go on from."""
        byte = data[at]
        if byte == 0x05:  # ENQ: the terminal answers with its answerback
            return at + 1
        if byte == 0xC2:  # (an 8-bit control was made 7-bit above) cut at the end?
            if at + 1 >= len(data):
                return self._carried(data, at)
            out.append(byte)
            return at + 1
        if at + 1 >= len(data):
            return self._carried(data, at)
        kind = data[at + 1 : at + 2]
        if kind == b"[":
            csi = _CSI.match(data, at)
            if csi is None:
                if _CSI_OPEN.match(data, at):
                    return self._carried(data, at)
                return at + 2  # a broken sequence: dropped
            if not _query(*csi.groups()):
                out += csi.group(0)
            return csi.end()
        if kind == b"]":
            head = _OSC_HEAD.match(data, at)
            assert head is not None
            if head.end() == len(data) and not head.group(2):
                return self._carried(data, at)  # its number may go on
            number = int(head.group(1)) if head.group(1) else -1
            self._string = number in SAFE_OSC and data[head.end() : head.end() + 1] != b"?"
            self._body = _OSC_BODY
            if self._string:
                out += data[at : head.end()]
            return self._in_string(data, head.end(), out)
        if kind in (b"P", b"X", b"^", b"_"):  # DCS, SOS, PM, APC: skipped whole
            self._string = False
            self._body = _STRING_BODY
            return self._in_string(data, at + 2, out)
        other = _ESC_OTHER.match(data, at)
        if other is None:
            if _ESC_OPEN.match(data, at):
                return self._carried(data, at)
            return at + 1
        if other.group(0) != b"\x1bZ":  # DECID: answered like DA
            out += other.group(0)
        return other.end()

    def _in_string(self, data: bytes, pos: int, out: bytearray) -> int:
        """Pass or skip a string up to its end (or the chunk's); where to go on from."""
        body = self._body.match(data, pos)
        assert body is not None
        stop = body.end()
        if self._string:
            out += data[pos:stop]
        if stop == len(data):
            return stop  # it goes on in the next chunk
        if data[stop] == 0x1B:
            if stop + 1 == len(data):  # ESC \ cut in two, or a doubled ESC?
                self._carry = b"\x1b"
                return len(data)
            if data[stop + 1] != 0x5C:  # an ESC that starts something else: it aborts
                self._string = None
                return stop
            end = stop + 2
        else:
            end = stop + 1  # BEL, CAN, SUB
        if self._string:
            out += data[stop:end]
        self._string = None
        return end

    def _carried(self, data: bytes, at: int) -> int:
        if len(data) - at <= MAX_CARRY:
            self._carry = data[at:]
        return len(data)
