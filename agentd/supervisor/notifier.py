"""Runs a unit's ``notify.command`` for events (done, failed, a notify sentinel...).

Each command runs detached from the loop: spawned in its own session with no
stdin, watched by a pidfd (or the supervisor's SIGCHLD), reaped here — and the
reaper is told these pids are ours — and killed if it runs past ``TIMEOUT``.
A failing notifier is an event, never an error of the unit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable

from agentd import events as ev
from agentd.config.placeholders import fill_placeholders
from agentd.config.unit import Unit

TIMEOUT = 30.0


class Notifier:
    def __init__(self, emit: Callable[..., None]) -> None:
        self._emit = emit
        self._running: dict[int, tuple[subprocess.Popen[bytes], int | None, str, str]] = {}

    def owns(self, pid: int) -> bool:
        return pid in self._running

    def send(self, unit: Unit, event: str, session: int) -> None:
        command = unit.notify.command
        if not command:
            return
        values = {
            "unit": unit.name,
            "event": event,
            "session": str(session),
            "workdir": str(unit.workdir),
            "bootstrap": "",
            "bootstrap_file": "",
        }
        argv = [fill_placeholders(arg, values) for arg in command]
        try:
            proc = subprocess.Popen(
                argv,
                cwd=unit.workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            self._emit(
                ev.UNIT_NOTIFY,
                level="warning",
                unit=unit.name,
                notify_event=event,
                error=f"cannot run notify command {argv[0]!r}: {exc.strerror or exc}",
            )
            return
        loop = asyncio.get_running_loop()
        try:
            pidfd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            pidfd = None
        self._running[proc.pid] = (proc, pidfd, unit.name, event)
        if pidfd is not None:
            loop.add_reader(pidfd, self.check)
        loop.call_later(TIMEOUT, self._kill, proc.pid, proc)

    def check(self) -> None:
        """Reap the commands that finished (pidfd readable, or SIGCHLD)."""
        for pid, (proc, pidfd, unit, event) in list(self._running.items()):
            if proc.poll() is None:
                continue
            del self._running[pid]
            if pidfd is not None:
                asyncio.get_running_loop().remove_reader(pidfd)
                os.close(pidfd)
            self._emit(ev.UNIT_NOTIFY, unit=unit, notify_event=event, code=proc.returncode)

    def _kill(self, pid: int, proc: subprocess.Popen[bytes]) -> None:
        if self._running.get(pid, (None,))[0] is proc and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    async def close(self, timeout: float = 5.0) -> None:
        """Give running commands ``timeout`` seconds, then kill and reap them."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._running and loop.time() < deadline:
            self.check()
            await asyncio.sleep(0.05)
        for pid, (proc, _, _, _) in list(self._running.items()):
            self._kill(pid, proc)
        while self._running:
            self.check()
            await asyncio.sleep(0.01)
