"""agentd's own writes that fail: counted, reported once, shown until they work again.

A full disk, a read-only state dir or a logs dir that vanished must not
wedge a unit or crash the daemon: every writer of agentd's own files (the
event log, transcripts, histories, bootstrap copies, the lifecycle and run
records, the state dir in file mode) catches its ``OSError`` and tells
``WriteHealth`` instead. The first failure of a kind of write starts a
*spell*: it is reported once (``daemon.degraded``), later ones are only
counted; the next write of that kind that works ends the spell
(``daemon.recovered``), so writes resume by themselves when space returns.
While any spell lasts the daemon is degraded: ``status()`` says which
writes fail, since when and how often, and ``agentctl`` shows it.

Single-threaded: called on the daemon's loop only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEGRADED = "daemon.degraded"
RECOVERED = "daemon.recovered"

Report = Callable[[str, dict[str, Any]], None]  # (event name, fields)


@dataclass
class Spell:
    """One kind of write failing, from its first failure on."""

    path: str
    error: str
    since: float
    count: int = 1


class WriteHealth:
    def __init__(
        self, report: Report | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.report = report
        self._clock = clock
        self._failing: dict[str, Spell] = {}
        self.failed_total = 0  # failed writes since the daemon started

    def failed(self, what: str, path: Path | str, exc: BaseException) -> None:
        """A write of kind ``what`` (``events``, ``transcript:UNIT``...) to ``path`` failed."""
        self.failed_total += 1
        spell = self._failing.get(what)
        if spell is not None:
            spell.count += 1
            return
        error = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        self._failing[what] = Spell(str(path), error, self._clock())
        if self.report is not None:
            self.report(
                DEGRADED, {"what": what, "path": str(path), "error": error, "level": "warning"}
            )

    def ok(self, what: str) -> None:
        """A write of kind ``what`` worked: a spell of failures of it is over."""
        if not self._failing:  # the common case: one dict test per write
            return
        spell = self._failing.pop(what, None)
        if spell is not None and self.report is not None:
            self.report(RECOVERED, {"what": what, "path": spell.path, "failed": spell.count})

    @property
    def degraded(self) -> bool:
        return bool(self._failing)

    def status(self) -> list[dict[str, Any]]:
        """The writes failing now: what, path, error, since (epoch s), failed (count)."""
        return [
            {"what": what, "path": s.path, "error": s.error, "since": s.since, "failed": s.count}
            for what, s in sorted(self._failing.items())
        ]
