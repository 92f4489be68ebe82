"""Reset times as CLIs print them: each accepted spelling, each refusal."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agentd.times import parse_reset_time

PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture
def paris_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run as if the machine's local zone were Europe/Paris."""
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def at(*parts: int, zone: ZoneInfo = PARIS) -> float:
    return datetime(*parts, tzinfo=zone).timestamp()  # type: ignore[misc]


NOW = at(2026, 11, 30, 10, 0)  # Monday 10:00 in Paris


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1764500000", 1764500000.0),
        ("1764500000000", 1764500000.0),  # milliseconds
        ("15:30", at(2026, 11, 30, 15, 30)),
        ("09:15", at(2026, 12, 1, 9, 15)),  # already past today: tomorrow
        ("10:00", at(2026, 12, 1, 10, 0)),  # exactly now is not "after now"
        ("3pm", at(2026, 11, 30, 15, 0)),
        ("3PM", at(2026, 11, 30, 15, 0)),
        ("3:30pm", at(2026, 11, 30, 15, 30)),
        ("3 pm", at(2026, 11, 30, 15, 0)),
        ("3 p.m.", at(2026, 11, 30, 15, 0)),
        ("11am", at(2026, 11, 30, 11, 0)),
        ("9am", at(2026, 12, 1, 9, 0)),
        ("12am", at(2026, 12, 1, 0, 0)),
        ("12pm", at(2026, 11, 30, 12, 0)),
        ("3pm.", at(2026, 11, 30, 15, 0)),
        ("3pm (Europe/Paris)", at(2026, 11, 30, 15, 0)),
        ("3pm (America/New_York)", at(2026, 11, 30, 15, 0, zone=ZoneInfo("America/New_York"))),
        ("3pm UTC", at(2026, 11, 30, 15, 0, zone=ZoneInfo("UTC"))),
        ("08:00 UTC", at(2026, 12, 1, 8, 0, zone=ZoneInfo("UTC"))),  # 09:00 Paris < now
        ("11:05 AM GMT+2", at(2026, 11, 30, 9, 5, zone=ZoneInfo("UTC"))),
        ("3:45 PM PST", at(2026, 11, 30, 15, 45)),  # unknown abbreviation: local time
        ("3:45\u202fPM PST", at(2026, 11, 30, 15, 45)),  # ICU's narrow no-break space
        ("5:15 AM GMT+5:30", at(2026, 11, 30, 23, 45, zone=ZoneInfo("UTC"))),  # Node, en-US
        ("Oct 9, 5pm", at(2027, 10, 9, 17, 0)),  # passed this year: next year
        ("Dec 1, 5pm", at(2026, 12, 1, 17, 0)),
        ("Nov 30th, 2025 3:45 PM", at(2025, 11, 30, 15, 45)),  # an explicit year is kept
        ("in 2 hours 5 minutes", NOW + 7500),
        ("in 30m", NOW + 1800),
        ("2026-12-02 18:55:29", at(2026, 12, 2, 18, 55, 29)),
        ("2026-12-02T18:55:29Z", at(2026, 12, 2, 18, 55, 29, zone=ZoneInfo("UTC"))),
    ],
)
def test_parse_reset_time(paris_machine: None, text: str, expected: float) -> None:
    assert parse_reset_time(text, NOW) == expected


def test_parse_reset_time_across_dst(paris_machine: None) -> None:
    """Clocks go forward on 2026-03-29 in Paris: 16:00 to 3pm next day is 22 hours."""
    now = at(2026, 3, 28, 16, 0)
    assert parse_reset_time("3pm", now) == at(2026, 3, 29, 15, 0)
    assert parse_reset_time("3pm", now) - now == 22 * 3600


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "cannot read a reset time"),
        ("soon", "cannot read a reset time"),
        ("15", "cannot read a reset time"),  # a bare number is neither a clock nor an epoch
        ("25:00", "no such time of day"),
        ("13pm", "not on a 12-hour clock"),
        ("3pm (Mars/Olympus_Mons)", "unknown time zone 'Mars/Olympus_Mons'"),
        ("Foo 9, 5pm", "unknown month 'Foo'"),
        ("Feb 30, 2027 5pm", "no such date"),
        ("2026-13-01 10:00", "invalid date-time"),
    ],
)
def test_parse_reset_time_refuses(paris_machine: None, text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_reset_time(text, NOW)
