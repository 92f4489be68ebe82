"""Tables for the pure converters: each accepted spelling, each refusal."""

from __future__ import annotations

import signal

import pytest

from agentd.config.convert import parse_duration, parse_signal, parse_size, signal_name

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
