"""`agentd run UNIT` until something happens: the real-CLI tests' one loop."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from tests.realcli.agentd_run import _stop
from tests.support import agentd_popen, events, poll_for

T = TypeVar("T")


@contextmanager
def agentd_run(home: Path, unit: str) -> Iterator[None]:
    """`agentd run UNIT` in the background while the body runs, stopped with
    SIGINT (and reaped) at the end whatever happens."""
    proc = agentd_popen(home, "run", unit)
    try:
        yield
    finally:
        _stop(proc)


def run_until(
    home: Path, unit: str, probe: Callable[[], T], *, what: str, timeout: float = 90
) -> T:
    """`agentd run UNIT` until ``probe()`` is truthy (its value), then stopped; on a
    timeout the failure shows the daemon's last events (what the unit did instead)."""
    with agentd_run(home, unit):
        return poll_for(probe, timeout=timeout, what=what, seen=lambda: last_events(home))


def last_events(home: Path, n: int = 15) -> list[str]:
    """The daemon's last ``n`` events, one short line each."""
    return [
        " ".join(f"{k}={v!r:.160}" for k, v in e.items() if k not in ("level", "unit"))
        for e in events(home)[-n:]
    ]


def state_change(home: Path, to: str) -> dict[str, Any] | None:
    """The first `unit.state` event into state ``to``, if any."""
    return next((e for e in events(home, "unit.state") if e["to"] == to), None)


def sentinel(home: Path, name: str | None = None) -> dict[str, Any] | None:
    """The first `session.sentinel` event (of sentinel ``name``), if any."""
    return next(
        (e for e in events(home, "session.sentinel") if name is None or e["name"] == name), None
    )
