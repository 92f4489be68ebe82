"""Small pure converters from what people write in unit files to values:
durations, sizes and signals.

Each takes a value and returns a value or raises
``ValueError`` saying what was wrong and what is accepted, so the unit loader
can put that message next to the file, line and key that caused it.
"""

from __future__ import annotations

import math
import re
import signal
from decimal import Decimal

# --- durations ---------------------------------------------------------------

_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_DURATION_HELP = "a number of seconds or a duration like 500ms, 10s, 5m, 1.5h, 1d, 1h30m"


def _finite_number(value: float, what: str) -> float:
    """``value`` as a float >= 0; rejects inf/nan, which no timer can wait for."""
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"{what} {value!r} is too large") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} must be finite, got {value!r}")
    if number < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")
    return number


def parse_duration(value: str | int | float) -> float:
    """Seconds from ``10``, ``2.5``, ``"500ms"``, ``"5m"``, ``"1h30m"``..."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected {_DURATION_HELP}, got {value!r}")
    if not isinstance(value, str):
        return _finite_number(value, "duration")
    text = value.strip()
    if text.startswith("-"):
        raise ValueError(f"duration must not be negative, got {value!r}")
    if _NUMBER.fullmatch(text):
        return _finite_number(float(text), "duration")
    parts = list(_DURATION_PART.finditer(text))
    covered = "".join(m.group(0) for m in parts)
    if not parts or re.sub(r"\s+", "", covered) != re.sub(r"\s+", "", text):
        raise ValueError(f"expected {_DURATION_HELP}, got {value!r}")
    total = sum(float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()] for m in parts)
    return _finite_number(total, "duration")


# --- sizes -------------------------------------------------------------------

_SIZE_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)", re.IGNORECASE)
_SIZE_HELP = "a number of bytes or a size like 512KB, 10MB, 1GB (x1000) or 512KiB, 1GiB (x1024)"


def parse_size(value: str | int) -> int:
    """Bytes from ``4096``, ``"512KB"`` (powers of 1000), ``"1GiB"`` (of 1024)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected {_SIZE_HELP}, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size must not be negative, got {value}")
        return value
    match = _SIZE.fullmatch(value.strip())
    if not match or match.group(2).lower() not in ("", *_SIZE_UNITS):
        raise ValueError(f"expected {_SIZE_HELP}, got {value!r}")
    factor = _SIZE_UNITS.get(match.group(2).lower(), 1)
    return round(Decimal(match.group(1)) * factor)


# --- signals -----------------------------------------------------------------


def parse_signal(value: str | int) -> signal.Signals:
    """A signal from ``TERM``, ``SIGTERM``, ``term``, ``"15"`` or ``15``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected a signal name like TERM or INT, or a number, got {value!r}")
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, int) or text.isdigit():
        try:
            return signal.Signals(int(text))
        except ValueError:
            raise ValueError(f"no signal has number {value}") from None
    name = text.upper().removeprefix("SIG")
    try:
        return signal.Signals[f"SIG{name}"]
    except KeyError:
        known = ", ".join(sorted(s.name[3:] for s in signal.Signals if "_" not in s.name))
        raise ValueError(f"unknown signal {value!r}; known: {known}") from None


def signal_name(sig: int) -> str:
    """``15`` -> ``"TERM"``: the name events and messages show."""
    try:
        return signal.Signals(sig).name.removeprefix("SIG")
    except ValueError:
        return str(sig)
