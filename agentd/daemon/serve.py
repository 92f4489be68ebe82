"""``agentd serve``: the daemon.

One asyncio loop, one thread that acts. Signals are queued by the loop's
signal handlers and dispatched to ``handle_<sig>`` by ``run``; the units-dir
watcher's thread only calls ``loop.call_soon_threadsafe``; control requests
are tasks on the same loop. Nothing wakes up periodically except the systemd
watchdog ping, and only when systemd asks for one.

Life::

    lock run/agentd.lock -> bind the control socket -> load units
    (unit.loaded / unit.invalid) -> reclaim sessions a killed agentd left ->
    start the enabled units -> watch units/ -> READY=1 -> serve signals until TERM/INT
    -> stop every session (whole trees) -> daemon.stop -> exit 0

Reload (SIGHUP, ``agentctl reload``, or the watcher): new unit files are
loaded (and started if enabled: ``agentctl enable|disable``, else their
``autostart``; never one a person stopped or that ended done, failed or
stalled: that state is kept until someone starts it), deleted ones stopped
and forgotten, changed ones apply from their next session; an invalid file
is reported with its file and line (one ``unit.invalid`` per change of what
is wrong), shown by ``agentctl status``, and the unit keeps its last good
definition. The watcher re-parses only files whose stat changed; SIGHUP
(which also reopens the log files, as logrotate expects) and ``agentctl
reload`` re-parse all (e.g. after a missing workdir was created). Unit files
are read and parsed on a worker thread, never on the loop: a slow or huge
file cannot hold up sessions or requests (``loader``).

With ``--http HOST:PORT`` the daemon also serves its web dashboard
(``agentd.daemon.dashboard``, imported only then) on the same loop, started
before the control socket so that ``ping`` can say where it is, and closed
before it. The two count their connections together (``Clients``): a flood
of one cannot take the fds the other needs.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from typing import TYPE_CHECKING, Any

from agentd import __version__
from agentd import events as ev
from agentd.console import Console
from agentd.daemon.control.commands import Context
from agentd.daemon.control.connections import Clients
from agentd.daemon.control.server import ControlServer
from agentd.daemon.loader import UnitLoader
from agentd.daemon.notify import SystemdNotify
from agentd.errors import AgentdError, PathError
from agentd.events import EventLog
from agentd.fileio import Held, hold
from agentd.paths import Paths, ensure_private_dir
from agentd.supervisor.api import Supervisor

if TYPE_CHECKING:
    from agentd.daemon.dashboard.access import Bind
    from agentd.daemon.dashboard.server import Dashboard

SIGNALS = {signal.SIGTERM: "term", signal.SIGINT: "int", signal.SIGHUP: "hup"}


class AlreadyRunning(AgentdError):
    pass


def acquire_lock(paths: Paths) -> int:
    """Hold an flock on ``run/agentd.lock`` (the fd) or raise AlreadyRunning."""
    ensure_private_dir(paths.run)
    path = paths.run / "agentd.lock"
    try:
        return hold(path, str(paths.socket))
    except OSError as exc:
        raise PathError.cannot("take the lock", path, exc) from None
    except Held as held:
        raise AlreadyRunning(
            f"agentd is already running (pid {held.pid}, socket {held.note or paths.socket}, "
            f"lock {path}); stop it first (systemctl --user stop agentd, or kill -TERM "
            f"{held.pid}), or give this one another AGENTD_HOME"
        ) from None


class Daemon:
    def __init__(
        self, paths: Paths, *, console: Console | None = None, http: Bind | None = None
    ) -> None:
        self.paths = paths
        self.http = http
        self.console = console or Console()
        self.systemd = SystemdNotify()  # first: sessions must not see NOTIFY_SOCKET
        self._signals: asyncio.Queue[int] = asyncio.Queue()
        self._watchdog: asyncio.TimerHandle | None = None
        self.control: ControlServer | None = None
        self.dashboard: Dashboard | None = None

    async def run(self) -> int:
        """Serve until SIGTERM/SIGINT; 0 after a clean stop. AgentdError if it cannot start."""
        self.paths.check_socket()
        lock = acquire_lock(self.paths)
        loop = asyncio.get_running_loop()
        self.events = EventLog(self.paths.events_file)
        self.events.subscribe(self.console)
        self.events.subscribe(self._on_event)
        self.sup = Supervisor(self.paths, self.events, subreaper=True)
        self.sup.attach()
        self.loader = UnitLoader(self.paths, self.sup, self.events)
        for sig in SIGNALS:
            loop.add_signal_handler(sig, self._signals.put_nowait, sig)
        # one count of connections for the control socket and the dashboard's port
        self.clients = Clients(self.events.emit)
        try:
            url = await self._serve_dashboard() if self.http is not None else None
            self.control = ControlServer(
                self.sup, reload=self.reload, dashboard=url, clients=self.clients
            )
            await self.control.listen(open_now=False)  # requests wait for the units
            ensure_private_dir(self.paths.units)
            self.events.emit(
                ev.DAEMON_START,
                pid=os.getpid(),
                version=__version__,
                socket=str(self.paths.socket),
                units_dir=str(self.paths.units),
                subreaper=self.sup.subreaper,
                dashboard=url,
            )
            await self.loader.load_all()
            self.sup.reclaim_orphans()  # the sessions of units that did not load again
            self.control.open()
            self.loader.watch()
            self.systemd.send("READY=1", f"STATUS={self.summary()}")
            self._ping_watchdog()
            self.console.say(
                f"agentd {__version__}: pid {os.getpid()}, socket "
                f"{self.paths.socket}; {self.summary()}",
                always=True,
            )
            if self.dashboard is not None:  # its token is for `agentctl dashboard`, not logs
                self.console.say(
                    f"agentd: dashboard at {self.dashboard.url} (`agentctl dashboard` prints "
                    "the link with its token; --open opens it)",
                    always=True,
                )
            while await self._dispatch(await self._signals.get()):
                pass
        finally:
            await self._shutdown()
            for sig in SIGNALS:
                loop.remove_signal_handler(sig)
                signal.signal(sig, signal.SIG_IGN)  # everything is stopped: exit 0 regardless
            self.events.close()
            os.close(lock)
        return 0

    # -- signals: queued by the loop, handled here ------------------------------------------
    async def _dispatch(self, sig: int) -> bool:
        """Run ``handle_<sig>``; False when the daemon is to stop."""
        handler = getattr(self, f"handle_{SIGNALS[signal.Signals(sig)]}")
        return bool(await handler())

    async def handle_hup(self) -> bool:
        """Reopen the log files (logrotate moved them) and reload the units."""
        self.events.reopen()
        self.sup.reopen_logs()
        await self.reload("SIGHUP")
        return True

    async def handle_term(self) -> bool:
        self.console.say(
            "agentd: SIGTERM, stopping every unit (again to kill at once)", always=True
        )
        return False

    async def handle_int(self) -> bool:
        self.console.say("agentd: SIGINT, stopping every unit (again to kill at once)", always=True)
        return False

    async def _kill_on_second_signal(self) -> None:
        while True:
            if await self._signals.get() != signal.SIGHUP:
                pids = self.sup.kill_all()
                self.console.say(f"agentd: killed {pids or 'nothing'}", always=True)

    async def reload(self, why: str) -> dict[str, Any]:
        """Read every unit file again and apply the result (SIGHUP, agentctl reload)."""
        return await self.loader.reload(why)

    async def _shutdown(self) -> None:
        self.loader.stop()  # a rescan still waiting for the lock will do nothing
        self.systemd.send("STOPPING=1", "STATUS=stopping every unit")
        killer = asyncio.get_running_loop().create_task(self._kill_on_second_signal())
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self.dashboard is not None:
            await self.dashboard.close()
        if self.control is not None:
            await self.control.close()
        async with self.loader.lock:  # no reload under way while every unit stops
            await self.sup.shutdown()
        killer.cancel()
        self.events.emit(ev.DAEMON_STOP, pid=os.getpid())

    async def _serve_dashboard(self) -> str:
        """Start the web dashboard (``--http``); its URL."""
        from agentd.daemon.dashboard.server import Dashboard

        assert self.http is not None
        self.dashboard = Dashboard(Context(self.sup, self.reload), self.http, self.clients)
        return await self.dashboard.start()

    # -- systemd -----------------------------------------------------------------------------
    def summary(self) -> str:
        counts = Counter(s["state"] for s in self.sup.status())
        parts = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        return f"{sum(counts.values())} units" + (f": {parts}" if parts else "")

    def _ping_watchdog(self) -> None:
        if self.systemd.watchdog is not None:
            self.systemd.send("WATCHDOG=1")
            loop = asyncio.get_running_loop()
            self._watchdog = loop.call_later(self.systemd.watchdog, self._ping_watchdog)

    def _on_event(self, event: dict[str, Any]) -> None:
        name = event.get("event")
        if name == ev.UNIT_STATE and self.systemd.enabled:
            self.systemd.send(f"STATUS={self.summary()}")
        elif name == ev.UNIT_INVALID:
            where = str(event.get("file")) + (f":{event['line']}" if event.get("line") else "")
            kept = f" (kept {event['kept']})" if event.get("kept") else ""
            self.console.say(f"agentd: {where}: {event.get('error')}{kept}", always=True)
        elif name in (ev.UNIT_LOADED, ev.UNIT_REMOVED, ev.DAEMON_RELOAD, ev.DAEMON_WARNING):
            what = [event.get(k) for k in ("unit", "change", "why", "error")]
            self.console.say(" ".join(["agentd:", str(name), *(str(w) for w in what if w)]))


def serve(paths: Paths, *, console: Console | None = None, http: Bind | None = None) -> int:
    """Run the daemon in the foreground (serving the dashboard at ``http``); its exit code."""
    return asyncio.run(Daemon(paths, console=console, http=http).run())
