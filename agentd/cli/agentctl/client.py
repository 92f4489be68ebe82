"""What every ``agentctl`` daemon verb shares: one request to the daemon,
``--json`` output, and failures as a message and an exit code (their click
parameters, unit names and ``--json``, are in ``ctl_params``).

A request about a unit goes to the ``agentd run`` of that unit when one answers
on its socket (``run/units/UNIT.sock``: it holds the unit's lock, so no daemon
supervises the unit meanwhile), else to the daemon.

Exit codes, the same for every verb: 0 ok, 1 failure (the daemon
unreachable, a command that failed), 2 usage error (also an invalid unit
name), 4 an unknown unit (``status`` adds LSB's 3: a named unit not running).

The protocol (``agentd.daemon.control.requests``) is imported when a request is
made, not with this module.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from agentd.paths import Paths

if TYPE_CHECKING:
    from agentd.daemon.control.client import Client


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"agentctl: {message}", file=sys.stderr)
    sys.exit(code)


def call(
    cmd: str,
    *,
    timeout: float | None = 30.0,
    offline: Callable[[str], Any] | None = None,
    via: str | None = None,
    **args: Any,
) -> Any:
    """One request about unit ``via`` (default ``args["unit"]``), to whoever supervises
    it (the daemon when none is named); its result, or exit with a message.
    ``offline(why)`` answers instead when no agentd does (why: the message)."""
    from agentd.daemon.control.client import Unreachable

    try:
        with connected(
            cmd, timeout=timeout, unit=via or args.get("unit"), offline=offline is not None
        ) as client:
            reply = client.request(cmd, **args)
            say_degraded(reply)
            return reply["result"]
    except Unreachable as exc:
        assert offline is not None
        return offline(str(exc))


def call_units(
    cmd: str, units: list[str], *, timeout: float | None = 30.0, **args: Any
) -> list[dict[str, Any]]:
    """``cmd`` (a verb taking ``units``, replying one status per unit) for each of
    ``units`` from its supervisor: the ``agentd run`` of it, else the daemon (one
    request for all of those); the replies in the order of ``units``."""
    paths = Paths.resolve()
    runs = [u for u in units if answers(paths.run_socket(u))]
    rest = [u for u in units if u not in runs]
    got = [s for u in runs for s in call(cmd, timeout=timeout, units=[u], via=u, **args)]
    if rest:
        got += call(cmd, timeout=timeout, units=rest, **args)
    by_unit = {s["unit"]: s for s in got}
    return [by_unit[u] for u in units if u in by_unit]


def say_degraded(reply: dict[str, Any]) -> None:
    """A warning on stderr when the daemon says some of its writes fail (a full disk)."""
    for spell in reply.get("degraded") or []:
        print(
            f"agentctl: warning: agentd is degraded: {spell.get('what')} writes fail "
            f"since {spell.get('since')} ({spell.get('failed')}x): {spell.get('path')}: "
            f"{spell.get('error')}",
            file=sys.stderr,
        )


def every_status() -> list[dict[str, Any]]:
    """The daemon's units and those of every ``agentd run`` (the run's entry wins: it
    holds the unit's lock); exit 1 when neither answers."""
    runs = [s for name in run_units() for s in call("status", via=name, units=[name])]
    daemon = call("status", units=[], offline=(lambda _why: []) if runs else None)
    merged = {s["unit"]: s for s in daemon} | {s["unit"]: s for s in runs}
    return [merged[name] for name in sorted(merged)]


def run_units() -> list[str]:
    """The units of the ``agentd run``s that answer on their sockets now."""
    found = sorted(Paths.resolve().run.glob("units/*.sock"))
    return [path.stem for path in found if answers(path)]


def answers(path: Path) -> bool:
    """Does someone listen on the socket ``path`` (an ``agentd run``)?"""
    from agentd.daemon.control.client import listening

    return path.exists() and listening(path)  # exists: the common case, one syscall


def open_client(unit: str | None, *, timeout: float | None) -> Client:
    """A connected client: the ``agentd run`` of ``unit`` when one answers, else the
    daemon (Unreachable when it does not)."""
    from agentd.daemon.control.client import Client, Unreachable

    paths = Paths.resolve()
    if unit is not None and paths.run_socket(unit) != paths.socket:
        client = Client(paths.run_socket(unit), timeout=timeout)
        with contextlib.suppress(Unreachable):
            client.connect()
            return client
    paths.check_socket()
    client = Client(paths.socket, timeout=timeout)
    client.connect()
    return client


@contextlib.contextmanager
def connected(
    cmd: str, *, timeout: float | None = 30.0, unit: str | None = None, offline: bool = False
) -> Iterator[Client]:
    """A client for whoever supervises ``unit`` (the daemon when None); any failure
    becomes a message and an exit code (with ``offline``, Unreachable is raised)."""
    from agentd.daemon.control.client import RemoteError, Unreachable
    from agentd.errors import PathError

    try:
        with open_client(unit, timeout=timeout) as client:
            yield client
    except Unreachable as exc:
        if offline:
            raise
        fail(str(exc))
    except PathError as exc:
        fail(str(exc))
    except RemoteError as exc:
        fail(str(exc), exc.code)  # the reply's code is the exit code: 4 an unknown unit
    except TimeoutError:
        fail(
            f"agentd did not answer {cmd!r} within {timeout:g}s; is it stuck? "
            "(see its log: journalctl --user -u agentd)"
        )
    except OSError as exc:
        fail(f"lost the connection to agentd during {cmd!r}: {exc}")


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))
