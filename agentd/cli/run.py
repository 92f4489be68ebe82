"""``agentd run``: supervise one unit in the foreground until it settles.

The same supervisor as the daemon, for one unit. Its control socket is a
private one (``run/units/UNIT.sock``, 0600 in a 0700 dir, peer uid checked,
removed on exit) that answers for that unit alone: the session's
``AGENTD_SOCKET`` names it, so ``agentctl`` inside the session (and the CLI's
hooks) reach this run as they would reach the daemon. The first
SIGINT/SIGTERM/SIGHUP stops the session gracefully, a second one kills its
tree at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from typing import Any

from agentd.config.unit import Unit
from agentd.console import Console
from agentd.daemon.control import ControlServer
from agentd.daemon.protocol import Code, ProtocolError
from agentd.errors import PathError
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State

# `agentd run` ends when the unit reaches one of these.
FINAL = frozenset({State.DONE, State.FAILED, State.STALLED, State.STOPPED})


def run_unit(unit: Unit, paths: Paths, *, console: Console | None = None) -> int:
    """Supervise ``unit`` until it settles; returns the process exit code."""
    return asyncio.run(_run(unit, paths, console or Console()))


async def _run(unit: Unit, paths: Paths, console: Console) -> int:
    loop = asyncio.get_running_loop()
    events = EventLog(paths.events_file)
    events.subscribe(console)
    # Sessions get AGENTD_SOCKET from the supervisor's paths: this run's own socket.
    paths = dataclasses.replace(paths, socket=paths.run_socket(unit.name))
    sup = Supervisor(paths, events, subreaper=True)
    sup.attach()
    service = sup.add(unit)
    signals: list[int] = []
    stopping: list[asyncio.Task[None]] = []  # keep a reference: the loop holds tasks weakly

    def on_signal(sig: int) -> None:
        if signals:  # a second one: no more grace
            pids = sup.kill_all()
            print(f"agentd: killed {pids or 'nothing'}", file=console.stream, flush=True)
            return
        signals.append(sig)
        print(f"agentd: {signal.Signals(sig).name}, stopping {unit.name} "
              "(again to kill at once)", file=console.stream, flush=True)
        stopping.append(loop.create_task(service.stop()))

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal, sig)
    started = time.monotonic()
    refused = service.claim()
    if refused:
        await sup.shutdown()
        events.close()
        console.say(f"agentd: {refused}", always=True)
        return 1
    control = await _listen(sup, console)
    try:
        if service.start() is not None:  # refused: the unit.error event said why
            return 1
        await service.wait(lambda s: s in FINAL)
        await service.join()
    finally:
        await sup.shutdown()
        if control is not None:
            await control.close()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        events.close()
    status = service.status()
    took = time.monotonic() - started
    why = service.detail or (service.state_reason if service.state != State.DONE else "")
    if signals:
        why = f"interrupted by {signal.Signals(signals[0]).name}"
    detail = f"; {why}" if why else ""
    console.say(f"agentd: {unit.name} {service.state} after {service.session_no} session(s) in "
                f"{took:.1f}s (last: {status['last_reason'] or '-'}{detail})", always=True)
    # SPEC 8: 0 ok, 1 failure; only `done` is ok (an interrupted run is not).
    return 0 if service.state == State.DONE and not signals else 1


async def _listen(sup: Supervisor, console: Console) -> ControlServer | None:
    """This run's control socket; None (said once) if it cannot be bound: the run goes
    on, but `agentctl` and the CLI's hooks inside its sessions cannot reach it."""
    control = ControlServer(sup, reload=_no_reload)
    try:
        await control.listen()
    except PathError as exc:
        console.say(f"agentd: {exc}; agentctl cannot reach this run", always=True)
        return None
    return control


async def _no_reload(_source: str) -> dict[str, Any]:
    raise ProtocolError("`agentd run` supervises one unit file and has no units dir to reload; "
                        "stop the run and start it again to apply a changed unit", Code.FAILURE)
