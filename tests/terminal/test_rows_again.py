"""A row a TUI writes again as it was is not searched again (``rows.Mark.final``).

Ink (Claude Code's TUI) erases its whole dynamic area and writes every row of it
again at each redraw, ten times a second, most of them unchanged. A line matched
as final keeps the text it was matched in; matched as final again with the same
text, the rules and the echo as they were, it gives the same hits, all fired
already, so it is not searched. A rule added since, an echo awaited since, or
other text: searched as before.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentd.terminal.matcher import LineMatcher
from agentd.terminal.rules import Rule, RuleSet

ROWS = [f"  row {r}: a tool call's result, src/mod_{r}.py" for r in range(6)]
SENTINEL = "Compacting conversation"


def redraw(rows: list[str], spinner: str) -> bytes:
    """One of Ink's redraws of a 9-row area, in a synchronized update."""
    erase = "\x1b[2K\x1b[1A" * 8 + "\x1b[2K\x1b[G"
    lines = [f"\x1b[2m{row}\x1b[0m" for row in rows]
    return ("\x1b[?2026h" + erase + "\r\n".join([*lines, spinner, "> "]) + "\x1b[?2026l").encode()


@pytest.fixture
def searched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines searched one by one (``RuleSet.line_hits``), in order."""
    lines: list[str] = []
    real = RuleSet.line_hits

    def line_hits(self: RuleSet, line: str, **kw: Any) -> Any:
        lines.append(line)
        return real(self, line, **kw)

    monkeypatch.setattr(RuleSet, "line_hits", line_hits)
    return lines


def matcher() -> LineMatcher:
    return LineMatcher([Rule("compacting", re.compile(SENTINEL))], cols=80, rows=12)


def test_rows_written_again_as_they_were_are_not_searched_again(searched: list[str]) -> None:
    m = matcher()
    hits = m.feed(redraw([*ROWS[:5], SENTINEL], "* Thinking (0s)"))
    assert [h.line for h in hits] == [SENTINEL]
    first = len(searched)
    assert first >= len(ROWS)
    for second in range(1, 20):
        assert m.feed(redraw([*ROWS[:5], SENTINEL], f"* Thinking ({second}s)")) == []
    # each redraw searched the spinner row, whose text changed, and none of the others
    # but the prompt row once: the first redraw left it before it was ever final
    again = searched[first:]
    assert len([line for line in again if line.startswith("* Thinking")]) == 19
    assert [line for line in again if not line.startswith("* Thinking")] == ["> "], again
    assert SENTINEL in m.display()  # the screen is drawn as before


def test_a_row_with_other_text_or_a_rule_added_since_is_searched_and_fires(
    searched: list[str],
) -> None:
    m = matcher()
    m.feed(redraw(ROWS, "* Thinking (0s)"))
    m.feed(redraw(ROWS, "* Thinking (0s)"))
    assert m.feed(redraw([*ROWS[:5], SENTINEL], "* Thinking (1s)"))  # other text: searched
    m.add_rule(Rule("tool", re.compile(r"row 3: a tool")))
    hits = m.feed(redraw([*ROWS[:5], SENTINEL], "* Thinking (1s)"))
    assert [h.rule.name for h in hits] == ["tool"]  # the new rule: every row searched again
    assert m.feed(redraw([*ROWS[:5], SENTINEL], "* Thinking (1s)")) == []


def test_an_echo_awaited_since_has_the_rows_searched_again(searched: list[str]) -> None:
    m = matcher()
    m.feed(redraw(ROWS, "* Thinking (0s)"))
    before = len(searched)
    m.expect_echo("something typed")
    m.feed(redraw(ROWS, "* Thinking (0s)"))
    assert set(ROWS) <= set(searched[before:])


def test_a_frame_that_changes_one_row_offers_that_row_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between Ink's full redraws a TUI may update one row in a frame of its own
    (a spinner's clock): the rows a redraw found unchanged wait for no frame's
    end any more, so only the row the frame changed is offered."""
    offered: list[str] = []
    real = LineMatcher.line

    def line(self: LineMatcher, text: str, mark: Any, how: Any) -> Any:
        offered.append(text)
        return real(self, text, mark, how)

    monkeypatch.setattr(LineMatcher, "line", line)
    m = matcher()
    m.feed(redraw(ROWS, "* Thinking (0s)"))
    m.feed(redraw(ROWS, "* Thinking (0s)"))  # every row as it was
    offered.clear()
    # up to the spinner's row, write it again, back to the prompt: one frame
    tick = "\x1b[?2026h\x1b[1A\r\x1b[2K* Thinking (1s)\x1b[1B\r\x1b[2C\x1b[?2026l"
    for second in range(1, 4):
        assert m.feed(tick.replace("(1s)", f"({second}s)").encode()) == []
    assert offered and set(offered) == {f"* Thinking ({s}s)" for s in range(1, 4)}, offered
