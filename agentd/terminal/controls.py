"""What each control does to the screen model: the terminal's grammar, applied.

A chunk goes through three steps, each a few C-speed passes over the whole
of it rather than a loop over characters:

1. ``clean`` (on the raw bytes): sequences and controls that change no cell
   and no cursor position go (colours and other SGR, modes other than the
   alternate screen and synchronized updates, ``ESC[?2026h``/``l``, which
   make a frame: see ``agentd.terminal.screen``; OSC/DCS/APC strings such as
   window titles, NUL, BEL, C1 controls), and line ends are made one
   character each.
2. ``split``: the text falls into *plain* pieces (characters, CR, LF, TAB and
   line erases ``ESC[K``/``ESC[0K``/``ESC[1K``/``ESC[2K``: what plain output is
   made of) and the other controls between them.
3. plain pieces are drawn line by line (``draw``; the matcher sends whole
   screens of plain lines to ``agentd.terminal.bulk`` instead), the other
   controls are applied by ``apply``.

Sequences follow ``agentd.terminal.ansi``'s grammar (the matcher carries a
sequence cut by a chunk end over to the next chunk). Unknown sequences are
ignored, as terminals do; so are charsets, tab stops and origin mode.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agentd.terminal.screen import Screen

# Sequences that change no cell and no cursor position, in the raw bytes. The
# regex starts with ESC: sre skips to the next ESC at C speed (a character
# class in an alternative would make it try every position, ~10x slower).
_NOOPS = re.compile(
    rb"\x1b(?:[\]PX^_][^\x07\x18\x1a\x1b]*+\x07?"  # OSC, DCS, SOS, PM, APC strings
    rb"|\[[0-9;:]{0,64}+m"  # SGR: colours and styles
    # modes, but the alternate screen and synchronized updates (frames)
    rb"|\[\?(?!(?:1049|1047|47|2026)[hl])[0-9;]{0,64}+[hl]"
    # a sequence cut short by a control or another ESC: gone before what
    # follows it is removed, so the two never join into another sequence
    rb"|(?:\[[0-?]{0,64}+[ -/]{0,16}+|[ -/]{0,8}+)(?=[\x00-\x1f\x7f]))"
)
# Controls that move nothing (all of C0 but BS, TAB, LF, VT, FF, CR, ESC).
_NOTHING = bytes(b for b in [*range(0x20), 0x7F] if b not in b"\x08\t\n\x0b\x0c\r\x1b")
_LF_AS_VT = bytes.maketrans(b"\n", b"\x0b")
_C1 = re.compile(b"\xc2[\x80-\x9f]")  # U+0080..U+009F in UTF-8
_ASCII = bytes(range(0x80))
# The controls that split plain text: every other sequence (a broken CSI is its
# "ESC [", as in ansi), and BS, FF where the text has any.
_SEQUENCE = (
    r"\x1b\[(?![012]?K)(?:[0-?]{0,64}+[ -/]{0,16}+[@-~])?|\x1b(?!\[)[ -/]{0,8}+[0-~]|\x1b(?!\[)"
)
_SPLIT = re.compile(f"({_SEQUENCE})")
_SPLIT_MOVES = re.compile(f"({_SEQUENCE}|[\\x08\\x0c])")
_NOT_ERASE = re.compile(r"\x1b(?!\[[012]?K)")  # a sequence other than a line erase
_PART = re.compile(r"(\r|\t|\x0b|\x1b\[[012]?K)")  # what a line holds besides characters
_PARAMS = re.compile(r"\??[0-9;]{0,64}")


def clean(data: bytes) -> tuple[bytes, bytes]:
    """Raw bytes without what changes no cell and moves no cursor (step 1),
    CR LF written as LF and any other LF as VT (both move down a row; CR LF
    also to column 0, as one step: a new line); and the bytes of the
    characters that are not ASCII (to look up their widths once)."""
    # C passes: in UTF-8 an ASCII byte is always that character, never part
    # of another, so bytes.translate and replace work on the raw bytes.
    if b"\x1b" in data:
        data = _NOOPS.sub(b"", data)
    data = data.translate(_LF_AS_VT, _NOTHING)
    if b"\r\x0b" in data:
        data = data.replace(b"\r\x0b", b"\n")
    if data.isascii():
        return data, b""
    if b"\xc2" in data:
        data = _C1.sub(b"", data)
    return data, data.translate(None, _ASCII)


def split(text: str) -> list[str]:
    """Plain pieces at even indices, one control at each odd index (step 2)."""
    if "\x08" in text or "\x0c" in text:
        return _SPLIT_MOVES.split(text)
    if "\x1b" not in text or not _NOT_ERASE.search(text):
        return [text]  # line erases only: plain
    return _SPLIT.split(text)


def draw(screen: Screen, text: str) -> None:
    """Plain ``text`` at the cursor: characters, CR, TAB, line erases, LF for
    CR LF and VT for a lone LF (``clean``)."""
    if not ("\n" in text or "\r" in text or "\t" in text or "\x0b" in text or "\x1b" in text):
        screen.write(text)
        return
    for i, line in enumerate(text.split("\n")):
        if i:
            screen.x = 0
            screen.linefeed()
        for part in _PART.split(line):
            if part == "\r":
                screen.x = 0
            elif part == "\t":
                screen.tab()
            elif part == "\x0b":
                screen.linefeed()
            elif part.startswith("\x1b"):
                erase_line(screen, int(part[2:-1] or 0))
            elif part:
                screen.write(part)


def apply(screen: Screen, control: str) -> None:
    """Apply one control from ``split`` to ``screen``."""
    parsed = _parsed.get(control)
    if parsed is None:
        parsed = _parse(control)
        if len(_parsed) >= 4096:  # a TUI uses a few dozen; garbage must not grow it
            _parsed.clear()
        _parsed[control] = parsed
    if parsed is not None:
        parsed[0](screen, parsed[1])


_Action = Callable[[Screen, list[int]], None]
_parsed: dict[str, tuple[_Action, list[int]] | None] = {}


def _parse(control: str) -> tuple[_Action, list[int]] | None:
    """What ``control`` does, and its parameters; None if nothing."""
    if control[0] != "\x1b":
        return (_backspace if control == "\x08" else _linefeed), []  # BS; FF
    if len(control) == 2:
        escape = _ESCAPES.get(control[1])
        return None if escape is None else ((lambda s, p: escape(s)), [])
    if control[1:2] != "[" or not _PARAMS.fullmatch(control, 2, len(control) - 1):
        return None
    body, final = control[2:-1], control[-1]
    params = [int(p) if p else 0 for p in body.lstrip("?").split(";")]
    if body.startswith("?"):
        if final in "hl" and params[0] in (1049, 1047, 47):
            on, cursor = final == "h", params[0] == 1049
            return (lambda s, p: alternate_screen(s, on, cursor=cursor)), params
        if final in "hl" and params[0] == 2026:  # synchronized update: a frame
            return (_begin_frame if final == "h" else _end_frame), params
        # selective erase: no protected cells here, so an erase
        return (_CSI[final], params) if final in "JK" else None
    return (_CSI[final], params) if final in _CSI else None


def _begin_frame(screen: Screen, params: list[int]) -> None:
    screen.begin_frame()


def _end_frame(screen: Screen, params: list[int]) -> None:
    screen.end_frame()


def _backspace(screen: Screen, params: list[int]) -> None:
    screen.left(1)


def _linefeed(screen: Screen, params: list[int]) -> None:
    screen.linefeed()


# -- erasing and editing a row ---------------------------------------------------------
def erase_line(screen: Screen, how: int) -> None:
    """EL: 0 cursor to end, 1 start to cursor, 2 the whole row."""
    screen.destroy()
    row, x, y = screen.text[screen.y], min(screen.x, screen.cols - 1), screen.y
    if how == 0:
        screen.set_row(y, row[: screen.x], end_erased=True)
    elif how == 1:
        screen.set_row(y, " " * min(x + 1, len(row)) + row[x + 1 :])
    elif how == 2:
        screen.set_row(y, "", end_erased=True)


def erase_display(screen: Screen, how: int) -> None:
    """ED: 0 cursor to end, 1 start to cursor, 2 and 3 everything."""
    if how not in (0, 1, 2, 3):
        return
    if how in (0, 1):
        erase_line(screen, how)
    screen.destroy()
    rows = {0: range(screen.y + 1, screen.rows), 1: range(screen.y)}.get(how, range(screen.rows))
    for y in rows:
        screen.set_row(y, "", end_erased=True)
    if how:
        screen.prefix = ""


def _edit(screen: Screen, edit: Callable[[str, int], str]) -> None:
    row, x = screen.text[screen.y], screen.x
    if x < len(row):
        screen.destroy()
        screen.set_row(screen.y, edit(row, x)[: screen.cols])


def alternate_screen(screen: Screen, on: bool, *, cursor: bool) -> None:
    """?1049/?1047/?47 h/l: the other screen shows; both start blank here."""
    if on and cursor:
        screen.save_cursor()
    erase_display(screen, 2)
    if not on and cursor:
        screen.restore_cursor()


def _count(params: list[int]) -> int:
    return max(params[0], 1)


def _at(params: list[int], i: int) -> int:
    return params[i] if i < len(params) else 0


def _next_line(screen: Screen) -> None:  # NEL
    screen.linefeed()
    screen.x = 0


def _lines_down(screen: Screen, params: list[int]) -> None:  # CNL
    screen.down(_count(params))
    screen.x = 0


def _lines_up(screen: Screen, params: list[int]) -> None:  # CPL
    screen.up(_count(params))
    screen.x = 0


def _position(screen: Screen, params: list[int]) -> None:  # CUP, HVP
    screen.move_to(max(params[0], 1) - 1, max(_at(params, 1), 1) - 1)


def _column(screen: Screen, params: list[int]) -> None:  # CHA, HPA
    screen.move_to(screen.y, _count(params) - 1)


def _insert_chars(screen: Screen, params: list[int]) -> None:  # ICH
    _edit(screen, lambda row, x: row[:x] + " " * _count(params) + row[x:])


def _delete_chars(screen: Screen, params: list[int]) -> None:  # DCH
    _edit(screen, lambda row, x: row[:x] + row[x + _count(params) :])


def _erase_chars(screen: Screen, params: list[int]) -> None:  # ECH
    n = _count(params)
    _edit(screen, lambda row, x: row[:x] + " " * min(n, len(row) - x) + row[x + n :])


def _scroll_down(screen: Screen, params: list[int]) -> None:  # SD (with 5 params: mouse)
    if len(params) == 1:
        screen.scroll_down(_count(params))


_ESCAPES: dict[str, Callable[[Screen], None]] = {
    "7": Screen.save_cursor,  # DECSC
    "8": Screen.restore_cursor,  # DECRC
    "c": Screen.reset,  # RIS
    "D": Screen.linefeed,  # IND
    "E": _next_line,  # NEL
    "M": Screen.reverse_linefeed,  # RI
}

_CSI: dict[str, Callable[[Screen, list[int]], None]] = {
    "@": _insert_chars,
    "A": lambda s, p: s.up(_count(p)),  # CUU
    "B": lambda s, p: s.down(_count(p)),  # CUD
    "C": lambda s, p: s.right(_count(p)),  # CUF
    "D": lambda s, p: s.left(_count(p)),  # CUB
    "E": _lines_down,
    "F": _lines_up,
    "G": _column,
    "`": _column,
    "a": lambda s, p: s.right(_count(p)),  # HPR
    "d": lambda s, p: s.move_to(_count(p) - 1),  # VPA
    "e": lambda s, p: s.down(_count(p)),  # VPR
    "H": _position,
    "f": _position,
    "J": lambda s, p: erase_display(s, p[0]),  # ED
    "K": lambda s, p: erase_line(s, p[0]),  # EL
    "L": lambda s, p: s.insert_lines(_count(p)),  # IL
    "M": lambda s, p: s.delete_lines(_count(p)),  # DL
    "P": _delete_chars,
    "X": _erase_chars,
    "S": lambda s, p: s.scroll_up(_count(p)),  # SU
    "T": _scroll_down,
    "r": lambda s, p: s.set_margins(p[0], _at(p, 1)),  # DECSTBM
    "s": lambda s, p: s.save_cursor(),  # SCOSC
    "u": lambda s, p: s.restore_cursor(),  # SCORC
}
