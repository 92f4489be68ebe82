"""What each control command does (docs/commands.md): one handler per verb, by name.

A handler gets the daemon's ``Context`` and the request's args, already
validated against ``agentd.daemon.control.requests``; what it returns is the reply's
``result``. Handlers act only through the ``Supervisor``'s public API. The
two streaming verbs, ``events -f`` and ``attach``, are in ``streams``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentd import __version__
from agentd.config.shown import effective
from agentd.daemon.control.protocol import Code
from agentd.daemon.control.requests import (
    DescribeArgs,
    EnableArgs,
    EventsArgs,
    LogsArgs,
    NoArgs,
    ProtocolError,
    ResizeArgs,
    RestartArgs,
    SessionArgs,
    StatusArgs,
    TailArgs,
    UnitArgs,
    UnitsArgs,
)
from agentd.session.transcript import read_tail
from agentd.supervisor.api import Supervisor
from agentd.supervisor.records.history import recent_events_of, sessions
from agentd.supervisor.unitrefs import InvalidUnit, UnknownUnit
from agentd.terminal.ansi import strip_ansi

START_WAIT = 60.0  # start/restart reply once the new session runs, or after this

Reload = Callable[[str], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Context:
    """What every handler may use: the supervisor, the daemon's reload, and the
    dashboard's URL when the daemon serves one (``agentd serve --http``)."""

    sup: Supervisor
    reload: Reload
    dashboard: str | None = None


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
    """Is the daemon there, and which one (and where its dashboard is, if it serves one)."""
    return {
        "pid": os.getpid(),
        "version": __version__,
        "units": len(ctx.sup.names()),
        "socket": str(ctx.sup.paths.socket),
        "dashboard": ctx.dashboard,
    }


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
    return await _wait(
        ctx,
        names,
        lambda before, now: (
            now["state"] not in ("starting", "stopping")
            and (now["session"] > before["session"] or now["state"] != "running")
        ),
    )


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
    text, size = await asyncio.to_thread(read_tail, path, args.lines)  # megabytes, off the loop
    return {"path": str(path), "text": text, "size": size}


@command("events")
async def events(ctx: Context, args: EventsArgs) -> list[dict[str, Any]]:
    """The last events (of one unit, if named) from ``logs/agentd.jsonl``."""
    return await asyncio.to_thread(recent_events, ctx.sup, args)  # megabytes, off the loop


@command("history")
async def history(ctx: Context, args: TailArgs) -> list[dict[str, Any]]:
    """The unit's sessions: start, duration, outcome, reason, bootstrap."""
    rows = sessions(ctx.sup.history(args.unit))
    return rows[-args.lines :] if args.lines else []


@command("bootstrap")
async def bootstrap(ctx: Context, args: UnitArgs) -> dict[str, Any]:
    """What the unit's next session would be given, rendered now."""
    # rendered off the loop: it reads the agent's state dir
    number, boot = await asyncio.to_thread(ctx.sup.preview_bootstrap, args.unit)
    return {
        "unit": args.unit,
        "session": number,
        "text": boot.text,
        "tokens": boot.tokens,
        "warnings": boot.warnings,
        "cut": boot.cut,
    }


@command("screen")
async def screen(ctx: Context, args: UnitArgs) -> dict[str, Any]:
    """The unit's current screen as a terminal shows it: rows of text and the cursor.
    Drawn on a worker thread: the terminal emulator is slow, the loop must not wait."""
    capture = ctx.sup.screen(args.unit)
    drawn = await asyncio.to_thread(capture.draw)
    return drawn.as_json()


@command("resize")
async def resize(ctx: Context, args: ResizeArgs) -> dict[str, Any]:
    """An attached terminal's size: the running session's pty (the agent gets
    SIGWINCH) and the later sessions' take it."""
    ctx.sup.resize(args.unit, args.cols, args.rows)
    return {"unit": args.unit, "cols": args.cols, "rows": args.rows}


@command("precompact")
async def precompact(ctx: Context, args: SessionArgs) -> dict[str, Any]:
    """A session's CLI is about to compact (its PreCompact hook): end that session
    now, so the CLI never sends its summary request; a fresh one starts from the
    state files. ``ending`` is false when that session is not the running one."""
    return {"ending": ctx.sup.precompact(args.unit, args.session)}


@command("describe")
async def describe(ctx: Context, args: DescribeArgs) -> list[dict[str, Any]]:
    """``agentctl status UNIT``: each named unit's status and what it runs, how many
    processes its session has, and the last lines of its transcript."""
    out = []
    for name in _known(ctx, args.units):
        details = ctx.sup.details(name)
        pids = await asyncio.to_thread(ctx.sup.processes, name)  # a process-table scan
        # blank lines and redraws fall away once escapes are removed: read more than asked
        raw = 2 * args.lines + 10
        text, _ = await asyncio.to_thread(read_tail, Path(details["transcript"]), raw)
        lines = strip_ansi(text) if args.lines else []
        out.append({**details, "processes": len(pids), "last_lines": lines[-args.lines :]})
    return out


@command("unit")
async def unit(ctx: Context, args: UnitArgs) -> dict[str, Any]:
    """The unit's effective definition (after its preset and the defaults) and its file;
    of a file that does not load only the file and the problem (``effective`` null)."""
    try:
        return effective(ctx.sup.definition(args.unit))
    except InvalidUnit as exc:
        problem = ctx.sup.invalid[args.unit]
        return {
            "unit": args.unit,
            "file": problem.get("file"),
            "preset": None,
            "preset_file": None,
            "effective": None,
            "invalid": str(exc),
        }


@command("verify")
async def verify(ctx: Context, args: UnitArgs) -> dict[str, Any]:
    """Run the unit's completion check now (``complete.verify``), by hand; what it said.
    It changes no state; the reply comes when the check has ended (its timeout bounds it)."""
    return await ctx.sup.verify(args.unit)


@command("worktree")
async def worktree(ctx: Context, args: UnitArgs) -> dict[str, Any]:
    """The unit's git worktree: path, branch, base, how far ahead of the base."""
    return await ctx.sup.worktree(args.unit)


# -- helpers -----------------------------------------------------------------------------
def recent_events(sup: Supervisor, args: EventsArgs) -> list[dict[str, Any]]:
    """The last ``args.lines`` events of the event log (of one unit, if named); a unit
    neither loaded nor ever run is unknown."""
    if (
        args.unit is not None
        and not sup.known(args.unit)
        and not sup.paths.unit_logs(args.unit).exists()
    ):
        raise UnknownUnit(args.unit)
    return recent_events_of(sup.paths.events_file, args.unit, args.lines)


def _known(ctx: Context, names: list[str]) -> list[str]:
    unknown = [n for n in names if not ctx.sup.known(n)]
    if unknown:
        raise ProtocolError(
            f"unknown unit{'s' if len(unknown) > 1 else ''}: "
            f"{', '.join(unknown)} (agentctl status lists the loaded units)",
            Code.UNKNOWN_UNIT,
        )
    return list(dict.fromkeys(names))


def _targets(ctx: Context, args: UnitsArgs) -> list[str]:
    if args.all and args.units:
        raise ProtocolError("give unit names or all, not both")
    if not args.all and not args.units:
        raise ProtocolError("name at least one unit (or all)")
    return ctx.sup.names() if args.all else _known(ctx, args.units)


async def _wait(
    ctx: Context, names: list[str], done: Callable[[dict[str, Any], dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    before = {s["unit"]: s for s in ctx.sup.status(names)}

    def changed(name: str) -> Callable[[dict[str, Any]], bool]:
        return lambda now: done(before[name], now)

    await asyncio.gather(*(ctx.sup.wait(n, changed(n), START_WAIT) for n in names))
    return ctx.sup.status(names)
