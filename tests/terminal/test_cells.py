"""Display widths: the tables against wcwidth, and a run turned into cells."""

from __future__ import annotations

import pytest

from agentd.terminal.cells import PAD, compose, split_marks, to_cells, width


def test_widths_are_wcwidths() -> None:
    wcwidth = pytest.importorskip("wcwidth")  # pyte's dependency
    if wcwidth.list_versions()[-1] != "18.0.0":
        pytest.skip("the tables come from wcwidth's Unicode 18.0.0 tables")
    for code in [*range(0x300, 0x30000), *range(0xE0000, 0xE1000)]:
        char = chr(code)
        expected = wcwidth.wcwidth(char)
        if expected >= 0:  # -1: a control, never in a row
            assert width(char) == expected, hex(code)


@pytest.mark.parametrize(
    ("text", "cells"),
    [
        ("plain ascii", "plain ascii"),
        ("✓ ok ─ … é\u00a0", "✓ ok ─ … é\u00a0"),  # narrow, untouched
        ("中文x", f"中{PAD}文{PAD}x"),
        ("🎉!", f"🎉{PAD}!"),
        ("e\u0301x", "éx"),  # composed into one cell
        ("⚠\ufe0f ok", "⚠ ok"),  # a variation selector takes no cell
        ("\u1100\u1161x", f"가{PAD}x"),  # jamo composed into a wide syllable
        ("\u0301a", "a"),  # a mark with nothing before it in the run
    ],
)
def test_to_cells(text: str, cells: str) -> None:
    assert to_cells(text) == cells


def test_marks_after_a_cell_drawn_before() -> None:
    assert split_marks("\u0301\u0302ab") == ("\u0301\u0302", "ab")
    assert split_marks("ab") == ("", "ab")
    assert compose("e", "\u0301") == "é"
    assert compose("中", "\u0301") is None  # does not compose: dropped
    assert compose(PAD, "\u0301") is None
