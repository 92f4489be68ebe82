"""Display width: how many terminal cells a character takes (0, 1 or 2).

A row of the screen model (``agentd.terminal.screen``) is a str with one
character per cell: a wide character (CJK, fullwidth forms, most emoji) is
followed by ``PAD``, which stands for its right half and is never part of a
row's text. Zero-width characters (combining marks, joiners, variation
selectors) take no cell: a mark that composes with the character before it
(NFC: ``e`` + U+0301 -> ``é``) is kept in that cell, any other is dropped.

The tables are the East Asian Wide/Fullwidth and zero-width ranges of the
``wcwidth`` package 0.9.4 (Unicode 18.0.0), from U+0300 up (controls never
reach a row); ``tests/terminal/test_cells.py`` checks them against it.
Pure, and C-speed: passes over whole runs, never a loop per character.
"""

from __future__ import annotations

import bisect
import re
import unicodedata

PAD = "\x00"  # the right half of a wide character (NUL never reaches a row)

WIDE_RANGES = """
    1100-115F 231A-231B 2329-232A 23E9-23EC 23F0 23F3 25FD-25FE 2614-2615 2630-2637 2648-2653
    267F 268A-268F 2693 26A1 26AA-26AB 26BD-26BE 26C4-26C5 26CE 26D4 26EA 26F2-26F3 26F5 26FA
    26FD 2705 270A-270B 2728 274C 274E 2753-2755 2757 2795-2797 27B0 27BF 2B1B-2B1C 2B50 2B55
    2E80-2E99 2E9B-2EF3 2F00-2FD5 2FF0-3029 3030-303E 3041-3096 309B-30FF 3105-312F 3131-3163
    3165-318E 3190-31E5 31EF-321E 3220-3247 3250-A48C A490-A4C6 A960-A97C AC00-D7A3 F900-FAFF
    FE10-FE19 FE30-FE52 FE54-FE66 FE68-FE6B FF01-FF60 FFE0-FFE6 16FE0-16FE3 16FF2-16FF6
    17000-18CDA 18CFF-18D20 18D80-18DF2 18E00-19191 191A0-191D2 1AFF0-1AFF3 1AFF5-1AFFB
    1AFFD-1AFFE 1B000-1B128 1B132 1B150-1B152 1B155 1B164-1B168 1B170-1B2FB 1D300-1D356
    1D360-1D376 1F004 1F0CF 1F18E 1F191-1F19A 1F1AE 1F1E6-1F202 1F210-1F23B 1F240-1F248
    1F250-1F251 1F260-1F265 1F300-1F320 1F32D-1F335 1F337-1F37C 1F37E-1F393 1F3A0-1F3CA
    1F3CF-1F3D3 1F3E0-1F3F0 1F3F4 1F3F8-1F43E 1F440 1F442-1F4FC 1F4FF-1F53D 1F54B-1F54E
    1F550-1F567 1F57A 1F595-1F596 1F5A4 1F5FB-1F64F 1F680-1F6C5 1F6CC 1F6D0-1F6D2 1F6D5-1F6D9
    1F6DC-1F6DF 1F6EB-1F6EC 1F6F4-1F6FC 1F7DA 1F7E0-1F7EB 1F7F0 1F90C-1F93A 1F93C-1F945
    1F947-1F9FF 1FA70-1FA7C 1FA80-1FAC6 1FAC8 1FACC-1FADD 1FADF-1FAEB 1FAEF-1FAFA 20000-2FFFD
    30000-3FFFD
"""
ZERO_RANGES = """
    300-36F 483-489 591-5BD 5BF 5C1-5C2 5C4-5C5 5C7-5C9 610-61A 61C 64B-65F 670 6D6-6DC 6DF-6E4
    6E7-6E8 6EA-6ED 711 730-74A 7A6-7B0 7EB-7F3 7FD 816-819 81B-823 825-827 829-82D 859-85B
    897-89F 8CA-8E1 8E3-903 93A-93C 93E-94F 951-957 962-963 981-983 9BC 9BE-9C4 9C7-9C8 9CB-9CD
    9D7 9E2-9E3 9FE A01-A03 A3C A3E-A42 A47-A48 A4B-A4D A51 A70-A71 A75 A81-A83 ABC ABE-AC5
    AC7-AC9 ACB-ACD AE2-AE3 AFA-AFF B01-B03 B3C B3E-B44 B47-B48 B4B-B4D B53-B57 B62-B63 B82
    BBE-BC2 BC6-BC8 BCA-BCD BD7 C00-C04 C3C C3E-C44 C46-C48 C4A-C4D C55-C56 C62-C63 C81-C83 CBC
    CBE-CC4 CC6-CC8 CCA-CCD CD5-CD6 CE2-CE3 CF3 D00-D03 D3B-D3C D3E-D44 D46-D48 D4A-D4D D57
    D62-D63 D81-D83 DCA DCF-DD4 DD6 DD8-DDF DF2-DF3 E31 E34-E3A E47-E4E EB1 EB4-EBC EC8-ECE
    F18-F19 F35 F37 F39 F3E-F3F F71-F84 F86-F87 F8D-F97 F99-FBC FC6 102B-103E 1056-1059
    105E-1060 1062-1064 1067-106D 1071-1074 1082-108D 108F 109A-109D 1160-11FF 135D-135F
    1712-1715 1732-1734 1752-1753 1772-1773 17B4-17D3 17DD 180B-180F 1885-1886 18A9 1920-192B
    1930-193B 1A17-1A1B 1A55-1A5E 1A60-1A7C 1A7F 1AB0-1AF0 1B00-1B04 1B34-1B44 1B6B-1B73
    1B80-1B82 1BA1-1BAD 1BE6-1BF3 1C24-1C37 1CD0-1CD2 1CD4-1CE8 1CED 1CF4 1CF7-1CF9 1DC0-1DFF
    200B-200F 2028-202E 2060-206F 20D0-20F0 2CEF-2CF1 2D7F 2DE0-2DFF 302A-302F 3099-309A 3164
    A66F-A672 A674-A67D A69E-A69F A6F0-A6F1 A802 A806 A80B A823-A827 A82C A880-A881 A8B4-A8C5
    A8E0-A8F1 A8FF A926-A92D A947-A953 A980-A983 A9B3-A9C0 A9E5 AA29-AA36 AA43 AA4C-AA4D
    AA7B-AA7D AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 AAEB-AAEF AAF5-AAF6 ABE3-ABEA ABEC-ABED
    D7B0-D7FF FB1E FE00-FE0F FE20-FE2F FEFF FFA0 FFF0-FFFB 101FD 102E0 10376-1037A 10A01-10A03
    10A05-10A06 10A0C-10A0F 10A38-10A3A 10A3F 10AE5-10AE6 10D24-10D27 10D69-10D6D 10EAB-10EAC
    10ECB-10ECF 10EF0-10EFF 10F46-10F50 10F82-10F85 11000-11002 11038-11046 11070 11073-11074
    1107F-11082 110B0-110BA 110C2 11100-11102 11127-11134 11145-11146 11173 11180-11182
    111B3-111C0 111C9-111CC 111CE-111CF 1122C-11237 1123E 11241 112DF-112EA 11300-11303
    1133B-1133C 1133E-11344 11347-11348 1134B-1134D 11357 11362-11363 11366-1136C 11370-11374
    113B8-113C0 113C2 113C5 113C7-113CA 113CC-113D0 113D2 113E1-113E2 11435-11446 1145E
    114B0-114C3 115AF-115B5 115B8-115C0 115DC-115DD 11630-11640 116AB-116B7 1171D-1172B
    1182C-1183A 11930-11935 11937-11938 1193B-1193E 11940 11942-11943 119D1-119D7 119DA-119E0
    119E4 11A01-11A0A 11A33-11A39 11A3B-11A3E 11A47 11A51-11A5B 11A8A-11A99 11B60-11B67
    11C2F-11C36 11C38-11C3F 11C92-11CA7 11CA9-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D45
    11D47 11D8A-11D8E 11D90-11D91 11D93-11D97 11DF0 11EF3-11EF6 11F00-11F01 11F03 11F34-11F3A
    11F3E-11F42 11F5A 13430-13440 13447-13455 1611E-1612F 16AF0-16AF4 16B30-16B36 16F4F
    16F51-16F87 16F8F-16F92 16FE4 16FF0-16FF1 1BC9D-1BC9E 1BCA0-1BCA3 1CF00-1CF2D 1CF30-1CF46
    1D127-1D128 1D165-1D169 1D16D-1D182 1D185-1D18B 1D1AA-1D1AD 1D242-1D244 1D250-1D252
    1D25B-1D25C 1D25F 1D280-1D281 1DA00-1DA36 1DA3B-1DA6C 1DA75 1DA84 1DA9B-1DA9F 1DAA1-1DAAF
    1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E08F 1E130-1E136 1E2AE
    1E2EC-1E2EF 1E4EC-1E4EF 1E5EE-1E5EF 1E6E3 1E6E6 1E6EE-1E6EF 1E6F5 1E8D0-1E8D6 1E944-1E94A
    E0000-E0FFF
"""


def _ranges(table: str) -> tuple[list[int], list[int]]:
    firsts, lasts = [], []
    for item in table.split():
        first, _, last = item.partition("-")
        firsts.append(int(first, 16))
        lasts.append(int(last or first, 16))
    return firsts, lasts


_WIDE = _ranges(WIDE_RANGES)
_ZERO = _ranges(ZERO_RANGES)
_ASCII = bytes(range(0x80))
_widths: dict[str, int] = {}  # the characters seen so far (bounded: cleared when full)


def _in(ranges: tuple[list[int], list[int]], code: int) -> bool:
    i = bisect.bisect_right(ranges[0], code) - 1
    return i >= 0 and code <= ranges[1][i]


def width(char: str) -> int:
    """Cells ``char`` takes: 2 wide, 0 zero-width, else 1 (controls included)."""
    known = _widths.get(char)
    if known is None:
        code = ord(char)
        known = 0 if _in(_ZERO, code) else 2 if _in(_WIDE, code) else 1
        if len(_widths) >= 65536:
            _widths.clear()
        _widths[char] = known
    return known


def to_cells(text: str) -> str:
    """``text`` (printable, no controls) as cells: one character per cell."""
    if text.isascii():
        return text
    others = _others(text)
    zero = "".join(c for c in others if width(c) == 0)
    if zero:
        cluster = re.compile(f"[^{zero}]?[{zero}]+")
        text = cluster.sub(lambda m: _compose(m.group(), zero), text)
        others = _others(text)  # composing may make wide characters (Hangul jamo)
    wide = "".join(c for c in others if width(c) == 2)
    if wide:
        text = re.sub(f"[{wide}]", "\\g<0>" + PAD, text)
    return text


def _others(text: str) -> set[str]:
    """The characters of ``text`` that are not ASCII: found by deleting the
    ASCII bytes from its UTF-8 (one C pass), to be looked up once each."""
    return set(text.encode("utf-8", "surrogatepass").translate(None, _ASCII).decode())


def _compose(cluster: str, zero: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFC", cluster) if c not in zero)


def compose(cell: str, marks: str) -> str | None:
    """``cell`` with zero-width ``marks`` written after it, if some compose with
    it into another character; None if none do (the marks are then dropped)."""
    if not cell or cell == PAD:
        return None
    # as ``to_cells`` does within one chunk: what composes is kept, the rest dropped
    composed = "".join(c for c in unicodedata.normalize("NFC", cell + marks) if width(c))
    return composed if len(composed) == 1 and composed != cell else None


def split_marks(text: str) -> tuple[str, str]:
    """The zero-width characters ``text`` starts with, and the rest: marks
    written after a cell drawn before (the previous chunk, a cursor move)."""
    n = 0
    while n < len(text) and width(text[n]) == 0:
        n += 1
    return text[:n], text[n:]
