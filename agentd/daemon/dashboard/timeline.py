"""A unit's sessions on a time axis, for ``/units/UNIT/timeline.svg``.

``layout`` turns the session rows of ``agentd.supervisor.records.history.sessions``
into what the SVG template draws: one bar per session coloured by its
outcome (the running one up to now), a mark where a session ended on a
sentinel, a mark where a restart began one, and hatched bands over pauses
(usage limits, budgets); each with the words for its tooltip, and on a bar
wide enough what its session spent (its cost, else its tokens). The window is
the last ``span`` (``5m`` ... ``1w``) or the whole run (``all``); a bar is at
least ``MIN_BAR`` wide, so a short session is still there to hover. Pure:
``now`` is an argument; only ``<rect>``s are sessions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentd.reasons import Reason
from agentd.spent import cost_cell, tokens_cell, usage_line
from agentd.times import parse_iso, span

SPANS: dict[str, float | None] = {
    "5m": 300,
    "15m": 900,
    "1h": 3600,
    "6h": 6 * 3600,
    "1d": 86400,
    "1w": 7 * 86400,
    "all": None,
}
DEFAULT_SPAN = "all"
# Outcomes (``agentd.reasons.Outcome``) and their colours; "running" is the session under way.
COLOURS = {
    "running": "#4caf7a",
    "done": "#1f7a4d",
    "handoff": "#3b7fc4",
    "manual": "#17a2b8",
    "context": "#8a63d2",
    "usage-limited": "#d9a21b",
    "timeout": "#e07b28",
    "idle": "#9aa5b1",
    "crashed": "#d64545",
    "stalled": "#8b1e3f",
    "stopped": "#5b6775",
    "verify-failed": "#c0573e",  # it claimed completion; its check refused it
    "unknown": "#c0c4ca",
}
WIDTH, LEFT, RIGHT = 1000.0, 10.0, 10.0
BAR_Y, BAR_H = 26.0, 28.0
AXIS_Y = BAR_Y + BAR_H + 8
HEIGHT = AXIS_Y + 40
MIN_BAR = 4.0  # a session of a few seconds in a week's window is still seen (and hovered)
MIN_WINDOW = 5.0  # seconds: the whole run of a unit that just started
LABEL_HALF = 28.0  # about half a tick label's width: labels cut by an edge are left out
TICK_STEPS = (
    1,
    2,
    5,
    10,
    30,
    60,
    300,
    600,
    900,
    1800,
    3600,
    2 * 3600,
    3 * 3600,
    6 * 3600,
    12 * 3600,
    86400,
    2 * 86400,
    7 * 86400,
)
MAX_TICKS = 10
LABEL_CHAR = 6.5  # about the width of one character of a bar's label


@dataclass(frozen=True)
class Bar:
    session: int
    outcome: str
    x: float
    width: float
    colour: str
    title: str
    label: str = ""  # what the session spent (``4.3k``, ``$0.42``), drawn when it fits

    @property
    def shows_label(self) -> bool:
        return bool(self.label) and self.width >= LABEL_CHAR * len(self.label) + 6


@dataclass(frozen=True)
class Mark:
    kind: str  # sentinel | restart | pause
    x: float
    width: float
    title: str


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass
class Timeline:
    span: str
    start: float
    end: float
    bars: list[Bar] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    width: float = WIDTH
    height: float = HEIGHT
    bar_y: float = BAR_Y
    bar_h: float = BAR_H
    axis_y: float = AXIS_Y

    @property
    def legend(self) -> list[tuple[str, str]]:
        """The outcomes shown, with their colours, in ``COLOURS``' order."""
        shown = {bar.outcome for bar in self.bars}
        return [(name, colour) for name, colour in COLOURS.items() if name in shown]

    def x(self, at: float) -> float:
        """Where the moment ``at`` is drawn (clipped to the window)."""
        at = min(max(at, self.start), self.end)
        return LEFT + (at - self.start) / (self.end - self.start) * (self.width - LEFT - RIGHT)


def layout(
    rows: list[dict[str, Any]],
    now: float,
    span_name: str = DEFAULT_SPAN,
    *,
    running: int | None = None,
    paused: Mapping[str, Any] | None = None,
) -> Timeline:
    """The timeline of session ``rows`` (oldest first) at ``now``.

    ``running``: the number of the session under way, if any (its bar reaches
    ``now``). ``paused``: the unit's status when it is paused (``since``,
    ``paused_until``, ``last_reason``), drawn when no session row says so.
    """
    if span_name not in SPANS:
        raise ValueError(f"span must be one of {', '.join(SPANS)}")
    spans = [_times(row, now, running) for row in rows]
    width = SPANS[span_name]
    if width is None:
        first = min((start for start, _ in spans), default=now)
        width = max(now - first, MIN_WINDOW)
    line = Timeline(span_name, now - width, now)
    for index, (row, (start, end)) in enumerate(zip(rows, spans, strict=True)):
        if end < line.start or start > line.end:
            continue
        number = int(row["session"])
        outcome = "running" if number == running else str(row.get("outcome") or "unknown")
        x0, x1 = line.x(start), line.x(end)
        line.bars.append(
            Bar(
                number,
                outcome,
                x0,
                max(x1 - x0, MIN_BAR),
                COLOURS.get(outcome, COLOURS["unknown"]),
                _title(row, outcome, start, end),
                _label(row.get("usage")),
            )
        )
        line.marks += _marks(line, row, number, x0, x1, end, spans[index + 1 :], now)
    if paused and not (rows and rows[-1].get("reset_at")):
        since = parse_iso(paused.get("since")) or now
        until = parse_iso(paused.get("paused_until"))
        line.marks.append(_pause(line, since, now, until, str(paused.get("last_reason") or "")))
    line.ticks = _ticks(line)
    return line


def _times(row: Mapping[str, Any], now: float, running: int | None) -> tuple[float, float]:
    start = parse_iso(row.get("started_at")) or parse_iso(row.get("ended_at")) or now
    end = parse_iso(row.get("ended_at"))
    if end is None:  # under way, or a kill -9 of agentd left no end
        end = now if row.get("session") == running else start + float(row.get("duration_s") or 0)
    return start, max(start, end)


def _title(row: Mapping[str, Any], outcome: str, start: float, end: float) -> str:
    number = row["session"]
    began = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start))
    if outcome == "running":
        return f"session {number}: running for {span(end - start)}, since {began}"
    reason = row.get("reason") or "no end recorded"
    lasted = span(row["duration_s"]) if row.get("duration_s") is not None else span(end - start)
    said = row.get("error") or row.get("detail")
    detail = f"; {said}" if said else ""
    spent = row.get("usage")
    used = f", {usage_line(spent)}" if isinstance(spent, Mapping) else ""
    return f"session {number}: {outcome} ({reason}{detail}), {lasted}, started {began}{used}"


def _label(usage: Any) -> str:
    """A session's spending in a few characters: its cost if known, else its tokens
    (``~`` for an estimate)."""
    if not isinstance(usage, Mapping):
        return ""
    cost = cost_cell(usage)
    return cost if cost != "-" else tokens_cell(usage).removesuffix(" est.")


def _marks(
    line: Timeline,
    row: Mapping[str, Any],
    number: int,
    x0: float,
    x1: float,
    end: float,
    later: list[tuple[float, float]],
    now: float,
) -> list[Mark]:
    marks = []
    started_by = str(row.get("started_by") or "start")
    if started_by != "start":
        marks.append(Mark("restart", x0, 0, f"session {number} began: restart after {started_by}"))
    reason = str(row.get("reason") or "")
    if Reason.parse(reason).is_sentinel:
        marks.append(Mark("sentinel", x1, 0, f"session {number} ended on {reason}"))
    if row.get("reset_at"):
        stop = later[0][0] if later else now  # the next session ends the pause
        marks.append(
            _pause(line, end, stop, parse_iso(row["reset_at"]), str(row.get("outcome") or "paused"))
        )
    return marks


def _pause(line: Timeline, since: float, stop: float, until: float | None, why: str) -> Mark:
    if until is not None:
        stop = min(stop, until)
    x0, x1 = line.x(since), line.x(max(stop, since))
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(until)) if until else "unknown"
    return Mark("pause", x0, max(x1 - x0, MIN_BAR), f"paused ({why}) until {when}")


def _ticks(line: Timeline) -> list[Tick]:
    width = line.end - line.start
    step = next((s for s in TICK_STEPS if width / s <= MAX_TICKS), TICK_STEPS[-1])
    # Steps of a day and more start at local midnight; shorter ones at round minutes.
    offset = time.localtime(line.start).tm_gmtoff
    first = ((line.start + offset) // step + 1) * step - offset
    fmt = "%b %d" if step >= 86400 else "%H:%M" if step >= 60 else "%H:%M:%S"
    ticks, at = [], first
    while at < line.end:
        x = line.x(at)
        if LEFT + LABEL_HALF <= x <= line.width - RIGHT - LABEL_HALF:
            ticks.append(Tick(x, time.strftime(fmt, time.localtime(at))))
        at += step
    return ticks
