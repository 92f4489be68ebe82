"""Times as agent CLIs print them and as agentd writes them.

``parse_reset_time`` reads when a usage limit resets from what a CLI printed
(``3pm``, ``Oct 9, 5pm (Europe/Paris)``, ``in 2h``...); ``iso`` writes an
epoch as ISO 8601 UTC for events and messages and ``parse_iso`` reads it
back; ``span`` writes a duration for people. Pure: ``now`` is an argument.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ZONE_IN_PARENS = re.compile(r"(.*?)\s*\(\s*([^()]+?)\s*\)")
_BARE_ZONE = re.compile(r"(.*?\S)\s+([A-Za-z][A-Za-z0-9_+\-/:]*)")
_CLOCK = re.compile(
    r"(?:(?P<mon>[a-z]{3,9})\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+"
    r"(?:(?P<year>\d{4}),?\s+)?(?:at\s+)?)?"
    r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?(?::(?P<s>\d{2}))?\s*(?:(?P<ampm>[ap])\.?m\.?)?",
    re.IGNORECASE,
)
# UTC, GMT, Z, and UTC/GMT with an offset such as GMT+2 or UTC-03:30.
_OFFSET_ZONE = re.compile(r"(?:UTC|GMT|Z)(?:([+-])(\d{1,2})(?::?(\d{2}))?)?", re.IGNORECASE)
_RELATIVE_PART = re.compile(
    r"(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b",
    re.IGNORECASE,
)
_RELATIVE_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_RESET_HELP = (
    "an epoch, HH:MM, 3pm, 3:30 pm, 'Oct 9, 5pm', an ISO date-time or 'in 2h',"
    " optionally followed by a zone like (Europe/Paris) or UTC"
)


def parse_reset_time(text: str, now: float) -> float:
    """Epoch seconds at which a usage limit resets, from what a CLI printed.

    A time without a date means its next occurrence after ``now``. Without a
    zone it is the machine's local time: the CLIs print local time, and an
    abbreviation that is not a known zone (``PST`` on a Paris machine) is read
    as local time too, because the CLI runs on this machine.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a reset time as text, got {text!r}")
    body = text.strip().rstrip(".,;").strip()
    if re.fullmatch(r"\d{9,13}(?:\.\d+)?", body):
        epoch = float(body)
        return epoch / 1000 if epoch > 1e11 else epoch
    relative = _relative_seconds(body)
    if relative is not None:
        return now + relative
    body, zone = _split_zone(body)
    iso = _iso_datetime(body, zone)
    if iso is not None:
        return iso
    return _clock_time(body, zone, now, original=text)


def _relative_seconds(body: str) -> float | None:
    """Seconds of ``in 2 hours 5 minutes`` / ``in 30m``; None if not that form."""
    match = re.fullmatch(r"in\s+(.+)", body, re.IGNORECASE)
    if not match:
        return None
    parts = list(_RELATIVE_PART.finditer(match.group(1)))
    rest = _RELATIVE_PART.sub("", match.group(1))
    if not parts or re.sub(r"[\s,]|and", "", rest):
        return None
    return sum(float(p.group(1)) * _RELATIVE_SECONDS[p.group(2)[0].lower()] for p in parts)


def _split_zone(body: str) -> tuple[str, tzinfo | None]:
    """Split a trailing ``(Area/City)`` or bare zone off; None means local time."""
    match = _ZONE_IN_PARENS.fullmatch(body)
    if match:
        return match.group(1), _zone(match.group(2), strict="/" in match.group(2))
    match = _BARE_ZONE.fullmatch(body)
    if match and match.group(2).lower() not in ("am", "pm", "a.m", "p.m"):
        name = match.group(2)
        if "/" in name or _OFFSET_ZONE.fullmatch(name) or re.fullmatch(r"[A-Z]{2,5}", name):
            return match.group(1), _zone(name, strict="/" in name)
    return body, None


def _zone(name: str, *, strict: bool) -> tzinfo | None:
    """The zone called ``name``; an unknown abbreviation is local time unless strict."""
    offset = _OFFSET_ZONE.fullmatch(name)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        minutes = int(offset.group(2) or 0) * 60 + int(offset.group(3) or 0)
        return timezone(sign * timedelta(minutes=minutes)) if minutes < 24 * 60 else None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        if strict:
            raise ValueError(f"unknown time zone {name!r}") from None
        return None


def _iso_datetime(body: str, zone: tzinfo | None) -> float | None:
    """Epoch of ``2026-09-21 18:55:29`` (or with an offset); None if not ISO."""
    if not re.match(r"\d{4}-\d{2}-\d{2}", body):
        return None
    try:
        moment = datetime.fromisoformat(body.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"invalid date-time {body!r}") from None
    if moment.tzinfo is None and zone is not None:
        moment = moment.replace(tzinfo=zone)
    return moment.timestamp()


def _clock_time(body: str, zone: tzinfo | None, now: float, *, original: str) -> float:
    """Epoch of ``3pm``/``15:30``/``Oct 9, 5pm``: the next such moment after ``now``."""
    match = _CLOCK.fullmatch(body)
    if not match or (match.group("ampm") is None and match.group("m") is None):
        raise ValueError(f"cannot read a reset time from {original!r}; expected {_RESET_HELP}")
    hour, minute = int(match.group("h")), int(match.group("m") or 0)
    second = int(match.group("s") or 0)
    if match.group("ampm"):
        if not 1 <= hour <= 12:
            raise ValueError(f"hour {hour} is not on a 12-hour clock in {original!r}")
        hour = hour % 12 + (12 if match.group("ampm").lower() == "p" else 0)
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"no such time of day in {original!r}")
    today = datetime.fromtimestamp(now, zone).date()
    if match.group("mon"):
        return _dated(match, today, (hour, minute, second), zone, now, original)
    for offset in range(3):  # today, else tomorrow (a DST gap may skip one)
        moment = _at(today + timedelta(days=offset), (hour, minute, second), zone)
        if moment > now:
            return moment
    raise ValueError(f"cannot place {original!r} after now")  # pragma: no cover


def _dated(
    match: re.Match[str],
    today: date,
    clock: tuple[int, int, int],
    zone: tzinfo | None,
    now: float,
    original: str,
) -> float:
    """Epoch of a month-day time; without a year, its next occurrence after ``now``."""
    prefix = match.group("mon")[:3].lower()
    if prefix not in _MONTHS:
        raise ValueError(f"unknown month {match.group('mon')!r} in {original!r}")
    month, day = _MONTHS.index(prefix) + 1, int(match.group("day"))
    years = [int(match.group("year"))] if match.group("year") else [today.year, today.year + 1]
    for year in years:
        try:
            moment = _at(date(year, month, day), clock, zone)
        except ValueError:
            raise ValueError(f"no such date in {original!r}") from None
        if moment > now or match.group("year"):
            return moment
    return moment


def _at(day: date, clock: tuple[int, int, int], zone: tzinfo | None) -> float:
    """Epoch of wall-clock ``clock`` on ``day`` in ``zone`` (None: the local zone)."""
    return datetime(day.year, day.month, day.day, *clock, tzinfo=zone).timestamp()


def iso(epoch: float) -> str:
    """An epoch as ISO 8601 UTC to the second: ``2026-11-30T14:32:00Z``."""
    stamp = datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
    return stamp.replace("+00:00", "Z")


def parse_iso(value: str | None) -> float | None:
    """The epoch of an ISO 8601 stamp (as ``iso`` writes); None when absent or malformed."""
    try:
        return datetime.fromisoformat(str(value)).timestamp() if value else None
    except ValueError:
        return None


def span(seconds: float | None) -> str:
    """``42s``, ``5m03s``, ``2h05m``, ``3d04h``."""
    if seconds is None:
        return "-"
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def local(value: float | str | None, *, seconds: bool = True) -> str:
    """A moment (epoch or ISO stamp) as people read it everywhere agentd prints one:
    local time, ``2026-12-01 14:03:07``; ``-`` when there is none."""
    at = parse_iso(value) if isinstance(value, str) or value is None else value
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", time.localtime(at))
