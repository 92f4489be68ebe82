"""``agentctl attach UNIT``: watch a unit's live terminal and type into it.

The daemon relays the unit's pty both ways over one connection (see
``agentd.daemon.protocol``, ``attach``); a thread prints what comes, the main
thread reads stdin until Ctrl-] (``DETACH``), EOF or the end of the stream.
"""

from __future__ import annotations

import base64
import os
import signal
import sys
import threading
from typing import Any

import click

from agentd.cli.ctl_client import connected, unit_name

DETACH = b"\x1d"  # Ctrl-]


@click.command()
@click.argument("unit", callback=unit_name)
def attach(unit: str) -> None:
    """Watch UNIT's live terminal and type into it; Ctrl-] detaches.

    Output of every session of the unit is shown as it comes (it follows the
    unit across restarts); what you type goes to the running session.
    """
    with connected("attach", timeout=30.0) as client:
        info = client.request("attach", unit=unit)["result"]
        click.echo(f"agentctl: attached to {unit} (session {info['session']}, {info['state']}); "
                   "Ctrl-] detaches", err=True)
        out = sys.stdout.buffer
        ended: list[str] = []

        def show() -> None:  # the daemon's side, on a thread: stdin is read below
            try:
                for item in client.stream():
                    if "data" in item:
                        out.write(base64.b64decode(item["data"]))
                        out.flush()
                    elif "end" in item:
                        ended.append(str(item["end"]))
            except (OSError, ValueError):  # we detached and closed the connection
                return
            if not ended:
                ended.append("the daemon closed the connection")
            os.kill(os.getpid(), signal.SIGUSR1)  # wake the stdin reader

        signal.signal(signal.SIGUSR1, _stream_ended)
        threading.Thread(target=show, daemon=True).start()
        _type_until_detach(client)
    click.echo(f"\r\nagentctl: detached from {unit}" + (f" ({ended[0]})" if ended else ""),
               err=True)


class _StreamEnded(Exception):
    """The daemon ended the attach stream (raised in the main thread by SIGUSR1)."""


def _stream_ended(*_: object) -> None:
    # os.read retries after a signal (PEP 475) unless the handler raises.
    raise _StreamEnded


def _type_until_detach(client: Any) -> None:
    """Send stdin to the session (raw mode on a terminal) until Ctrl-], EOF or the end."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd) if os.isatty(fd) else None
    if saved is not None:
        tty.setraw(fd, termios.TCSANOW)
    try:
        while True:
            data = os.read(fd, 4096)
            if not data:
                return
            data, detach, _ = data.partition(DETACH)
            if data:
                client.send({"input": base64.b64encode(data).decode()})
            if detach:
                return
    except _StreamEnded:
        return
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # no late wake-up after this
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
