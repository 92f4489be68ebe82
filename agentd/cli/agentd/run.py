"""``agentd run``: supervise one unit in the foreground until it settles.

The same supervisor as the daemon, for one unit. Its control socket is a
private one (``run/units/UNIT.sock``, 0600 in a 0700 dir, peer uid checked,
removed on exit) that answers for that unit alone: the session's
``AGENTD_SOCKET`` names it, so ``agentctl`` inside the session (and the CLI's
hooks) reach this run as they would reach the daemon, and so do ``agentctl
status|logs|screen|history|attach UNIT`` from another terminal. The first
SIGINT/SIGTERM/SIGHUP stops the session gracefully, a second one kills its
tree at once. With ``attach`` the agent's terminal is shown in ours
(``run_attach``). A run that does not end ``done`` names the transcript and
shows its last lines.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from pathlib import Path
from typing import Any

from agentd.cli.agentd.attached import AttachedView
from agentd.cli.common import terminal_size
from agentd.config.unit import Unit
from agentd.console import Console
from agentd.daemon.control.protocol import Code
from agentd.daemon.control.requests import ProtocolError
from agentd.daemon.control.server import ControlServer
from agentd.errors import AgentdError, PathError
from agentd.events import EventLog
from agentd.paths import Paths
from agentd.supervisor.api import Supervisor
from agentd.supervisor.states import State

# `agentd run` ends when the unit reaches one of these.
FINAL = frozenset({State.DONE, State.FAILED, State.STALLED, State.STOPPED})


TAIL_LINES = 12  # of the transcript, after a run that did not end done


def run_unit(
    unit: Unit, paths: Paths, *, console: Console | None = None, attach: bool = False
) -> int:
    """Supervise ``unit`` until it settles; returns the process exit code. With
    ``attach`` (stdin and stdout must be a terminal) the agent's terminal is ours,
    its pty of our terminal's size."""
    console = console or Console()
    if attach and terminal_size() is None:
        raise AgentdError("--attach needs a terminal on stdin and stdout")
    return asyncio.run(_run(unit, paths, console, attach=attach))


async def _run(unit: Unit, paths: Paths, console: Console, *, attach: bool) -> int:
    loop = asyncio.get_running_loop()
    events = EventLog(paths.events_file)
    # Sessions get AGENTD_SOCKET from the supervisor's paths: this run's own socket.
    paths = dataclasses.replace(paths, socket=paths.run_socket(unit.name))
    sup = Supervisor(paths, events, subreaper=True)
    sup.attach()
    service = sup.add(unit)
    view = AttachedView(service, console) if attach else None
    events.subscribe(view.on_event if view is not None else console)
    signals: list[int] = []
    stopping: list[asyncio.Task[None]] = []  # keep a reference: the loop holds tasks weakly

    def on_signal(sig: int) -> None:
        if signals:  # a second one: no more grace
            pids = sup.kill_all()
            print(f"agentd: killed {pids or 'nothing'}", file=console.stream, flush=True)
            return
        signals.append(sig)
        print(
            f"agentd: {signal.Signals(sig).name}, stopping {unit.name} (again to kill at once)",
            file=console.stream,
            flush=True,
        )
        stopping.append(loop.create_task(service.stop()))

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal, sig)
    started, before = time.monotonic(), service.session_no  # this run's sessions come after
    refused = service.claim()
    if refused:
        await sup.shutdown()
        events.close()
        console.say(f"agentd: {refused}", always=True)
        return 1
    control = await _listen(sup, console)
    try:
        if view is not None:
            view.start()
        if service.start() is not None:  # refused: the unit.error event said why
            return 1
        await service.wait(lambda s: s in FINAL)
        await service.join()
    finally:
        if view is not None:
            view.stop()
        await sup.shutdown()
        if control is not None:
            await control.close()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        events.close()
    status = sup.status([service.unit.name])[0]
    took = time.monotonic() - started
    why = service.detail or (service.state_reason if service.state != State.DONE else "")
    if signals:
        why = f"interrupted by {signal.Signals(signals[0]).name}"
    detail = f"; {why}" if why else ""
    ran = service.session_no - before  # of this run, as the time is
    which = f" (sessions {before + 1}-{service.session_no})" if before and ran > 1 else ""
    which = f" (session {service.session_no})" if before and ran == 1 else which
    console.say(
        f"agentd: {unit.name} {service.state} after {ran} session(s){which} in "
        f"{took:.1f}s (last: {status['last_reason'] or '-'}{detail})",
        always=True,
    )
    if service.state != State.DONE or signals:
        _show_transcript(service.transcript.path, console)
    # 0 ok, 1 failure (docs/commands.md); only `done` is ok (an interrupted run is not).
    return 0 if service.state == State.DONE and not signals else 1


def _show_transcript(path: Path, console: Console) -> None:
    """Where the agent's output is, and how it ended (its last lines, escapes removed)."""
    from agentd.cli.common import clean
    from agentd.session.transcript import read_tail

    text, _ = read_tail(path, TAIL_LINES)
    lines = clean(text).splitlines()
    console.say(
        f"agentd: transcript: {path}" + (", last lines:" if lines else " (empty)"), always=True
    )
    for line in lines:
        console.say(f"  | {line}", always=True)


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
    raise ProtocolError(
        "`agentd run` supervises one unit file and has no units dir to reload; "
        "stop the run and start it again to apply a changed unit",
        Code.FAILURE,
    )
