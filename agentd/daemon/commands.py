"""What each control command does (SPEC 9): one handler per verb, by name.

A handler gets the daemon's ``Context`` and the request's args, already
validated against ``agentd.daemon.protocol``; what it returns is the reply's
``result``. Handlers act only through the ``Supervisor``'s public API. The
two streaming verbs, ``events -f`` and ``attach``, are in ``streams``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agentd import __version__
from agentd.daemon.protocol import (
    Code,
    EnableArgs,
    EventsArgs,
    LogsArgs,
    NoArgs,
    ProtocolError,
    RestartArgs,
    SessionArgs,
    StatusArgs,
    TailArgs,
    UnitArgs,
    UnitsArgs,
)
from agentd.memory.statedir import tail_lines
from agentd.supervisor.api import Supervisor, UnknownUnit
from agentd.supervisor.history import History

START_WAIT = 60.0  # start/restart reply once the new session runs, or after this

Reload = Callable[[str], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Context:
    """What every handler may use: the supervisor, and the daemon's reload."""

    sup: Supervisor
    reload: Reload


Handler = Callable[[Context, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)
HANDLERS: dict[str, Handler] = {}


def command(name: str) -> Callable[[H], H]:
    """Register the decorated handler as the one for ``name``."""
    def register(handler: H) -> H:
        HANDLERS[name] = handler
        return handler
    return register


@command("ping")
async def ping(ctx: Context, _args: NoArgs) -> dict[str, Any]:
    """Is the daemon there, and which one."""
    return {"pid": os.getpid(), "version": __version__, "units": len(ctx.sup.names()),
            "socket": str(ctx.sup.paths.socket)}


@command("status")
async def status(ctx: Context, args: StatusArgs) -> list[dict[str, Any]]:
    """The status of the named units (all when none are named)."""
    return ctx.sup.status(_known(ctx, args.units))


@command("start")
async def start(ctx: Context, args: UnitsArgs) -> list[dict[str, Any]]:
    """Start units now; reply once each has left ``starting`` (or after START_WAIT)."""
    names = _targets(ctx, args)
    for name in names:
        ctx.sup.start(name)
    return await _wait(ctx, names, lambda before, now: now["state"] != "starting")


@command("stop")
async def stop(ctx: Context, args: UnitsArgs) -> list[dict[str, Any]]:
    """Stop units and wait until their processes are gone."""
    names = _targets(ctx, args)
    await asyncio.gather(*(ctx.sup.stop(name) for name in names))
    return ctx.sup.status(names)


@command("restart")
async def restart(ctx: Context, args: RestartArgs) -> list[dict[str, Any]]:
    """End the running sessions and start fresh ones; reply once they run."""
    names = _targets(ctx, args)
    for name in names:
        ctx.sup.restart(name, args.reason)
    # Done once a new session runs, or the unit settled without one
    # (paused by a budget, backoff, failed...): never wait out START_WAIT for it.
    return await _wait(ctx, names, lambda before, now: (
        now["state"] not in ("starting", "stopping")
        and (now["session"] > before["session"] or now["state"] != "running")))


@command("enable")
async def enable(ctx: Context, args: EnableArgs) -> list[dict[str, Any]]:
    """Start the units whenever the daemon starts (kept across restarts); ``now``: also
    start them now, as ``start`` does."""
    names = _targets(ctx, args)
    for name in names:
        ctx.sup.enable(name, True)
    return await start(ctx, args) if args.now else ctx.sup.status(names)


@command("disable")
async def disable(ctx: Context, args: EnableArgs) -> list[dict[str, Any]]:
    """Do not start the units when the daemon starts; ``now``: also stop them now."""
    names = _targets(ctx, args)
    for name in names:
        ctx.sup.enable(name, False)
    return await stop(ctx, args) if args.now else ctx.sup.status(names)


@command("reload")
async def reload(ctx: Context, _args: NoArgs) -> dict[str, Any]:
    """Read the units dir again (like SIGHUP) and say what changed."""
    return await ctx.reload("agentctl")


@command("logs")
async def logs(ctx: Context, args: LogsArgs) -> dict[str, Any]:
    """The last lines of the unit's transcript, raw, and where to follow it."""
    path = ctx.sup.transcript(args.unit)
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            lines, _ = tail_lines(f, args.lines)
    except FileNotFoundError:
        lines, size = [], 0
    return {"path": str(path), "text": "".join(f"{line}\n" for line in lines), "size": size}


@command("events")
async def events(ctx: Context, args: EventsArgs) -> list[dict[str, Any]]:
    """The last events (of one unit, if named) from ``logs/agentd.jsonl``."""
    return recent_events(ctx.sup, args)


@command("history")
async def history(ctx: Context, args: TailArgs) -> list[dict[str, Any]]:
    """The unit's sessions: start, duration, outcome, reason, bootstrap."""
    rows = sessions(ctx.sup.history(args.unit))
    return rows[-args.lines:] if args.lines else []


@command("bootstrap")
async def bootstrap(ctx: Context, args: UnitArgs) -> dict[str, Any]:
    """What the unit's next session would be given, rendered now."""
    number, boot = ctx.sup.preview_bootstrap(args.unit)
    return {"unit": args.unit, "session": number, "text": boot.text, "tokens": boot.tokens,
            "warnings": boot.warnings, "cut": boot.cut}


@command("precompact")
async def precompact(ctx: Context, args: SessionArgs) -> dict[str, Any]:
    """A session's CLI is about to compact (its PreCompact hook): end that session
    now, so the CLI never sends its summary request; a fresh one starts from the
    state files. ``ending`` is false when that session is not the running one."""
    return {"ending": ctx.sup.precompact(args.unit, args.session)}


# -- helpers -----------------------------------------------------------------------------
def recent_events(sup: Supervisor, args: EventsArgs) -> list[dict[str, Any]]:
    """The last ``args.lines`` events of the event log (of one unit, if named); a unit
    neither loaded nor ever run is unknown."""
    if args.unit is not None and not sup.known(args.unit) \
            and not sup.paths.unit_logs(args.unit).exists():
        raise UnknownUnit(args.unit)
    if not args.lines:
        return []
    found = History(sup.paths.events_file).recent(limit=1_000_000)
    if args.unit is not None:
        found = [e for e in found if e.get("unit") == args.unit]
    return found[-args.lines:]


def sessions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History records (start, end, outcome per session) merged into one row per session."""
    rows: dict[int, dict[str, Any]] = {}
    for rec in records:
        with contextlib.suppress(TypeError, ValueError):
            number = int(rec.get("session", 0))
            row = rows.setdefault(number, {"session": number, "started_at": None,
                                           "duration_s": None, "outcome": None, "reason": None})
            kind = rec.get("kind")
            if kind == "start":
                row.update(started_at=rec.get("at"), started_by=rec.get("reason"),
                           pid=rec.get("pid"), bootstrap=rec.get("bootstrap"))
            elif kind == "end":
                row.update(ended_at=rec.get("at"), reason=rec.get("reason"),
                           duration_s=rec.get("duration_s"), code=rec.get("code"),
                           signal=rec.get("signal"))
                if rec.get("error"):
                    row["error"] = rec["error"]
            elif kind == "outcome":
                row.update(outcome=rec.get("outcome"), detail=rec.get("detail"))
                if rec.get("reset_at"):  # usage-limited / budget: when it may go on
                    row["reset_at"] = rec["reset_at"]
    return [rows[n] for n in sorted(rows)]


def _known(ctx: Context, names: list[str]) -> list[str]:
    unknown = [n for n in names if not ctx.sup.known(n)]
    if unknown:
        raise ProtocolError(f"unknown unit{'s' if len(unknown) > 1 else ''}: "
                            f"{', '.join(unknown)} (agentctl status lists the loaded units)",
                            Code.UNKNOWN_UNIT)
    return list(dict.fromkeys(names))


def _targets(ctx: Context, args: UnitsArgs) -> list[str]:
    if args.all and args.units:
        raise ProtocolError("give unit names or all, not both")
    if not args.all and not args.units:
        raise ProtocolError("name at least one unit (or all)")
    return ctx.sup.names() if args.all else _known(ctx, args.units)


async def _wait(ctx: Context, names: list[str],
                done: Callable[[dict[str, Any], dict[str, Any]], bool]) -> list[dict[str, Any]]:
    before = {s["unit"]: s for s in ctx.sup.status(names)}
    await asyncio.gather(*(ctx.sup.wait(n, lambda now, b=before[n]: done(b, now), START_WAIT)
                           for n in names))
    return ctx.sup.status(names)
