"""``agentd run --attach``: the unit's terminal in yours while the run goes on.

The agent's output is written to stdout as it comes and every key you type
goes to the running session (stdin in raw mode, so Ctrl-C too). agentd's own
lines go only to the event log, but for one line when a session starts or
ends or the unit settles. Ctrl-] (or the end of stdin) detaches the view: the
terminal is itself again, the run goes on printing its events, and Ctrl-C
then stops it. The terminal's mode is restored however the run ends. While
attached, the agent's pty has the size of the terminal: at the start and
after each resize of it (SIGWINCH), as tmux or ssh pass it on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import termios
import tty
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentd import events as ev
from agentd.cli.common import terminal_size
from agentd.console import Console, describe

if TYPE_CHECKING:
    from agentd.supervisor.service import Service

DETACH = b"\x1d"  # Ctrl-]
# The events worth a status line in the agent's terminal: a session changes.
STATUS_EVENTS = frozenset({ev.SESSION_START, ev.SESSION_EXIT, ev.UNIT_STATE, ev.UNIT_ERROR})


class AttachedView:
    """Shows ``service``'s terminal on ours and types our keys into it, until detached."""

    def __init__(self, service: Service, console: Console) -> None:
        self._service = service
        self._console = console
        self._in = sys.stdin.fileno()
        self._out = sys.stdout.fileno()
        self._saved: list[Any] | None = None
        self._unwatch: Callable[[], None] | None = None

    @property
    def attached(self) -> bool:
        return self._saved is not None

    def start(self) -> None:
        self._saved = termios.tcgetattr(self._in)
        tty.setraw(self._in, termios.TCSANOW)
        self._unwatch = self._service.watch(self._show)
        loop = asyncio.get_running_loop()
        loop.add_reader(self._in, self._on_keys)
        loop.add_signal_handler(signal.SIGWINCH, self._on_resize)
        self._on_resize()
        self._line(
            f"agentd: {self._service.unit.name} in this terminal; keys go to the agent "
            "(Ctrl-C too); Ctrl-] detaches"
        )

    def on_event(self, event: dict[str, Any]) -> None:
        """An event of the run: one status line while attached, else the console's."""
        if not self.attached:
            self._console(event)
        elif event.get("event") in STATUS_EVENTS:
            line = describe(event)
            if line:
                self._line(f"agentd: {event.get('unit', '')}: {line}")

    def stop(self, why: str = "") -> None:
        """Give the terminal back (idempotent: also on errors and at the end)."""
        if self._saved is None:
            return
        loop = asyncio.get_running_loop()
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(self._in)
        loop.remove_signal_handler(signal.SIGWINCH)  # the agent keeps the size it has
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        saved, self._saved = self._saved, None
        with contextlib.suppress(termios.error):
            termios.tcsetattr(self._in, termios.TCSADRAIN, saved)
        if why:
            self._console.say(
                f"\nagentd: detached ({why}); the run goes on, Ctrl-C stops it", always=True
            )

    def _on_keys(self) -> None:
        try:
            data = os.read(self._in, 4096)
        except OSError:
            data = b""
        if not data:
            self.stop("stdin closed")
            return
        data, detach, _ = data.partition(DETACH)
        if data:
            self._service.type_input(data)
        if detach:
            self.stop("you pressed Ctrl-]")

    def _on_resize(self) -> None:
        size = terminal_size()
        if size is not None:  # else the terminal is gone: the run goes on at the size it has
            self._service.resize(*size)

    def _show(self, data: bytes) -> None:
        with contextlib.suppress(OSError):  # a closed terminal: the run goes on
            while data:
                data = data[os.write(self._out, data) :]

    def _line(self, text: str) -> None:
        # Reverse video, on a line of its own: told apart from the agent's output.
        self._show(f"\r\n\x1b[0;7m {text} \x1b[0m\r\n".encode())
