"""``agentctl attach UNIT``: watch a unit's live terminal and type into it.

The daemon (or the unit's ``agentd run``) relays the unit's pty both ways over
one connection (see ``agentd.daemon.control.requests``, ``attach``), starting with a
repaint of the current screen; a thread prints what comes, the main thread
reads the keyboard (raw mode) until Ctrl-] (``DETACH``), EOF or the end of
the stream. Ctrl-C is held back until it is pressed twice in a row (one
Ctrl-C may end the agent's session), unless ``--raw-keys``.

The agent's pty takes the size of this terminal, as a tmux window takes its
client's: a ``resize`` request when attached and on each SIGWINCH (its handler
only wakes the keyboard loop through a pipe; each request is a connection of
its own, so the attach stream is left alone). Detaching keeps the last size.
"""

from __future__ import annotations

import base64
import contextlib
import os
import select
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import click

from agentd.cli.agentctl.client import connected, fail
from agentd.cli.agentctl.params import complete_units, unit_name
from agentd.cli.common import terminal_size
from agentd.paths import Paths

DETACH = b"\x1d"  # Ctrl-]
INTERRUPT = 0x03  # Ctrl-C
ENDS = {
    "daemon stopping": "{who} is stopping",
    "client too slow": "{who} dropped this client: it fell behind the output",
}


@click.command()
@click.argument("unit", callback=unit_name, shell_complete=complete_units)
@click.option(
    "--raw-keys", is_flag=True, help="Pass every key on at once, Ctrl-C too (only Ctrl-] is kept)."
)
@click.option(
    "--no-resize",
    is_flag=True,
    help="Leave the agent's terminal size alone (e.g. to watch from a smaller "
    "terminal while someone else works in it).",
)
def attach(unit: str, raw_keys: bool, no_resize: bool) -> None:
    """Watch UNIT's live terminal and type into it; Ctrl-] detaches.

    The unit's current screen is drawn first, then its output as it comes (it
    follows the unit across restarts); what you type goes to the running
    session. Ctrl-C goes to the agent only when pressed twice in a row (the
    first one asks), or at once with --raw-keys. Needs a terminal on stdin.

    The agent's terminal takes the size of yours, as a tmux window takes its
    client's: when you attach and whenever you resize yours (the agent gets
    SIGWINCH and redraws). When you detach it keeps the last size, later
    sessions too, until the next attach sets it or a reload changes the
    unit's pty:. --no-resize leaves the size alone: the agent then draws for
    a terminal of another size than yours.
    """
    if not sys.stdin.isatty():
        fail(
            "attach needs a terminal: stdin is not one. To read the screen from a "
            f"script use `agentctl screen {unit}`; to follow the output, "
            f"`agentctl logs {unit} -f`"
        )
    with connected("attach", timeout=30.0, unit=unit) as client:
        run = client.path == Paths.resolve().run_socket(unit)
        who = f"the agentd run of {unit}" if run else "agentd"
        info = client.request("attach", unit=unit)["result"]
        click.echo(
            f"agentctl: attached to {unit} (session {info['session']}, {info['state']}); "
            "Ctrl-] detaches",
            err=True,
        )
        out = sys.stdout.buffer
        ended: list[str] = []

        def show() -> None:  # the daemon's side, on a thread: stdin is read below
            try:
                for item in client.stream():
                    if "data" in item:
                        out.write(base64.b64decode(item["data"]))
                        out.flush()
                    elif "end" in item:
                        why = str(item["end"])
                        ended.append(ENDS.get(why, "{who}: " + why).format(who=who))
            except (OSError, ValueError):  # we detached and closed the connection
                return
            if not ended:
                ended.append(f"{who} closed the connection")
            os.kill(os.getpid(), signal.SIGUSR1)  # wake the stdin reader

        signal.signal(signal.SIGUSR1, _stream_ended)
        threading.Thread(target=show, daemon=True).start()
        resizer = None if no_resize or terminal_size() is None else Resizer(client.path, unit)
        try:
            why = _type_until_detach(client, raw_keys, resizer)
        finally:
            if resizer is not None:
                resizer.close()
    if why is None:  # the far side ended it: the stream said why
        why = ended[0] if ended else f"{who} closed the connection"
    click.echo(f"\r\nagentctl: detached from {unit}: {why}", err=True)


class _StreamEnded(Exception):
    """The daemon ended the attach stream (raised in the main thread by SIGUSR1)."""


def _stream_ended(*_: object) -> None:
    # os.read retries after a signal (PEP 475) unless the handler raises.
    raise _StreamEnded


class Resizer:
    """Sends this terminal's size to whoever supervises ``unit`` (socket ``path``): once
    at the start, then after each SIGWINCH, when the keyboard loop sees ``wake``."""

    def __init__(self, path: Path, unit: str) -> None:
        self._path, self._unit = path, unit
        self._failed = False  # said once why the size could not be sent
        self.wake, self._poke = os.pipe()
        os.set_blocking(self._poke, False)
        signal.signal(signal.SIGWINCH, self._on_winch)
        self._on_winch()  # the size at the start goes the same way

    def _on_winch(self, *_: object) -> None:
        with contextlib.suppress(BlockingIOError):  # full: a wake-up is pending anyway
            os.write(self._poke, b"w")

    def send(self) -> None:
        """Send the size now (all the SIGWINCHs so far at once)."""
        from agentd.daemon.control.client import Client
        from agentd.errors import AgentdError

        os.read(self.wake, 4096)
        size = terminal_size()
        if size is None:  # the terminal is gone: the agent keeps the size it has
            return
        try:
            with Client(self._path, timeout=10.0) as client:
                client.call("resize", unit=self._unit, cols=size[0], rows=size[1])
        except (AgentdError, OSError) as exc:
            if not self._failed:
                self._failed = True
                os.write(
                    sys.stderr.fileno(),
                    f"\r\nagentctl: could not give the agent this "
                    f"terminal's size: {exc}\r\n".encode(),
                )

    def close(self) -> None:
        """No more resizing (detached): the agent keeps the last size."""
        signal.signal(signal.SIGWINCH, signal.SIG_DFL)
        os.close(self.wake)
        os.close(self._poke)


def _type_until_detach(client: Any, raw_keys: bool, resizer: Resizer | None) -> str | None:
    """Send the keyboard to the session (raw mode), and the terminal's size when
    ``resizer`` is woken, until Ctrl-] or EOF (says which) or the end of the stream (None)."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd, termios.TCSANOW)
    armed = False  # a first Ctrl-C was held back
    try:
        watched = [fd] if resizer is None else [resizer.wake, fd]
        while True:
            ready = select.select(watched, [], [])[0]
            if resizer is not None and resizer.wake in ready:  # before keys typed after it
                resizer.send()
            if fd not in ready:
                continue
            data = os.read(fd, 4096)
            if not data:
                return "stdin closed"
            data, detach, _ = data.partition(DETACH)
            if not raw_keys:
                data, armed, held = hold_interrupts(data, armed)
                if held:
                    os.write(
                        sys.stderr.fileno(),
                        b"\r\nagentctl: Ctrl-C not sent (it may end "
                        b"the agent's session): press it again to send it; Ctrl-] "
                        b"detaches\r\n",
                    )
            if data:
                client.send({"input": base64.b64encode(data).decode()})
            if detach:
                return "you pressed Ctrl-]"
    except _StreamEnded:
        return None
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # no late wake-up after this
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def hold_interrupts(data: bytes, armed: bool) -> tuple[bytes, bool, bool]:
    """Keys to send, with a Ctrl-C passed on only right after another one.

    ``armed``: the key before was a held-back Ctrl-C. Returns what to send, the
    new ``armed``, and whether a Ctrl-C was just held back (to say so).
    """
    if INTERRUPT not in data and not armed:
        return data, False, False
    out = bytearray()
    held = False
    for key in data:
        if key == INTERRUPT and not armed:
            armed = held = True
            continue
        armed = False
        out.append(key)
    return bytes(out), armed, held
