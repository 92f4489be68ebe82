"""Tables for the pure converters: each accepted spelling, each refusal."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agentd.config.convert import (
    PLACEHOLDERS,
    check_placeholders,
    fill_placeholders,
    parse_duration,
    parse_reset_time,
    parse_signal,
    parse_size,
    placeholders_in,
    signal_name,
)

# --- durations ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        (10, 10.0),
        (2.5, 2.5),
        ("10", 10.0),
        ("0.5", 0.5),
        ("500ms", 0.5),
        ("10s", 10.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("1.5h", 5400.0),
        (".5s", 0.5),
        (" 10 s ", 10.0),
        ("10S", 10.0),
        ("1h30m", 5400.0),
        ("1h 30m 10s", 5410.0),
    ],
)
def test_parse_duration(value: str | int | float, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (-1, "must not be negative"),
        ("-5s", "must not be negative"),
        (True, "expected a number of seconds"),
        (None, "expected a number of seconds"),
        ([1], "expected a number of seconds"),
        ("", "expected a number of seconds"),
        ("10 parsecs", "like 500ms, 10s, 5m"),
        ("5w", "like 500ms, 10s, 5m"),
        ("1h30", "like 500ms, 10s, 5m"),
        ("s", "like 500ms, 10s, 5m"),
        (float("inf"), "must be finite"),
        (float("nan"), "must be finite"),
        (10**400, "too large"),
    ],
)
def test_parse_duration_refuses(value: object, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_duration(value)  # type: ignore[arg-type]


# --- sizes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (0, 0),
        (512, 512),
        ("512", 512),
        ("512B", 512),
        ("512KB", 512_000),
        ("10MB", 10_000_000),
        ("1GB", 1_000_000_000),
        ("512KiB", 512 * 1024),
        ("10MiB", 10 * 1024**2),
        ("1GiB", 1024**3),
        ("10 mb", 10_000_000),
        ("1gib", 1024**3),
        ("1.5KB", 1500),
    ],
)
def test_parse_size(value: str | int, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (-1, "must not be negative"),
        (True, "expected a number of bytes"),
        (1.5, "expected a number of bytes"),
        ("10XB", "like 512KB, 10MB, 1GB"),
        ("MB", "like 512KB, 10MB, 1GB"),
        ("-5MB", "like 512KB, 10MB, 1GB"),
        ("", "like 512KB, 10MB, 1GB"),
    ],
)
def test_parse_size_refuses(value: object, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_size(value)  # type: ignore[arg-type]


# --- signals -----------------------------------------------------------------


@pytest.mark.parametrize("value", ["TERM", "SIGTERM", "term", "sigterm", " TERM ", "15", 15])
def test_parse_signal(value: str | int) -> None:
    assert parse_signal(value) is signal.SIGTERM


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("FOO", "unknown signal 'FOO'; known: .*TERM"),
        (99999, "no signal has number 99999"),
        ("-15", "unknown signal"),
        (True, "expected a signal name"),
        (None, "expected a signal name"),
    ],
)
def test_parse_signal_refuses(value: object, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_signal(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(("number", "name"), [(15, "TERM"), (2, "INT"), (9, "KILL"), (999, "999")])
def test_signal_name(number: int, name: str) -> None:
    assert signal_name(number) == name


# --- reset times ---------------------------------------------------------------

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


# --- placeholders ------------------------------------------------------------

VALUES = {"bootstrap": "BOOT", "unit": "shop", "session": "3"}


@pytest.mark.parametrize(
    ("template", "filled"),
    [
        ("{bootstrap}", "BOOT"),
        ("--unit={unit} #{session}", "--unit=shop #3"),
        ("{{bootstrap}}", "{bootstrap}"),
        ("{{{unit}}}", "{shop}"),
        ("a }} b {{ c", "a } b { c"),
        ("${HOME}/x", "${HOME}/x"),  # the environment's, never a placeholder
        ("f() { echo hi; }", "f() { echo hi; }"),  # shell braces pass through
        ("{ unit }", "{ unit }"),
        ("no braces", "no braces"),
    ],
)
def test_fill_placeholders(template: str, filled: str) -> None:
    assert fill_placeholders(template, VALUES) == filled


def test_fill_placeholders_names_the_unknown_and_the_known() -> None:
    with pytest.raises(ValueError) as caught:
        fill_placeholders("run {bootstrp}", VALUES)
    assert str(caught.value) == (
        "unknown placeholder {bootstrp}; known: {bootstrap}, {unit}, {session}"
        " (write {{ and }} for braces)"
    )


@pytest.mark.parametrize(
    ("template", "names"),
    [
        ("{bootstrap} {unit}", {"bootstrap", "unit"}),
        ("{{bootstrap}} ${unit}", set()),
        ("{nope}", {"nope"}),
    ],
)
def test_placeholders_in(template: str, names: set[str]) -> None:
    assert placeholders_in(template) == names


def test_check_placeholders_knows_every_placeholder() -> None:
    check_placeholders(" ".join("{" + name + "}" for name in PLACEHOLDERS))
    with pytest.raises(ValueError, match=r"unknown placeholder \{nope\}; known: \{bootstrap\}"):
        check_placeholders("{nope}")
