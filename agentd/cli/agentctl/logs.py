"""``agentctl logs|events|history|bootstrap``: what the daemon recorded and would give.

``logs -f`` asks the daemon where the transcript is and then follows the
file itself; ``events -f`` is streamed by the daemon. ``logs`` without a unit
shows every unit's transcript, line by line with the unit's name (like ``pm2
logs``). ``logs``, ``history`` and ``events`` read the files themselves when no
agentd answers (the daemon stopped, an ``agentd run`` over).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from agentd.cli.agentctl.client import call, connected, fail, print_json
from agentd.cli.agentctl.output import format_event, history_rows
from agentd.cli.agentctl.params import color_option, complete_units, json_option, unit_name
from agentd.cli.colour import Painter, wanted
from agentd.cli.common import clean
from agentd.paths import Paths

FOLLOW_POLL = 0.25
UNIT_LINES, EVERY_UNIT_LINES = 50, 15  # the default tail: of one unit, of each unit


@click.command()
@click.argument("unit", required=False, callback=unit_name, shell_complete=complete_units)
@click.option(
    "-n",
    "--lines",
    type=click.IntRange(0, 100_000),
    help=f"The last N lines [default: {UNIT_LINES}; of each unit: {EVERY_UNIT_LINES}].",
)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new output (Ctrl-C ends).")
@click.option("--raw", is_flag=True, help="Keep escape sequences (colours, cursor moves).")
@json_option
def logs(unit: str | None, lines: int | None, follow: bool, raw: bool, as_json: bool) -> None:
    """Print the end of UNIT's transcript (the agent's output); without UNIT, of
    every unit, each line after its unit's name."""
    if as_json and follow:
        raise click.UsageError(
            "--json prints the last lines once; use -f without --json "
            "(or `agentctl events UNIT -f --json` for a JSON stream)"
        )
    if unit is None:
        _every_unit(EVERY_UNIT_LINES if lines is None else lines, follow, raw, as_json)
        return
    lines = UNIT_LINES if lines is None else lines
    result = call(
        "logs",
        unit=unit,
        lines=lines,
        offline=lambda why: _offline(
            why, unit, "transcript.log", lambda path: _transcript(path, lines)
        ),
    )
    text = result["text"]
    if as_json:
        shown = text if raw else clean(text)
        click.echo(
            json.dumps(
                {"unit": unit, "path": result["path"], "lines": shown.splitlines()},
                ensure_ascii=False,
            )
        )
        return
    click.echo(text if raw else clean(text), nl=False, color=raw or None)
    if follow:
        _follow({unit: _Tail(Path(result["path"]), int(result["size"]))}, raw, named=False)


def _every_unit(lines: int, follow: bool, raw: bool, as_json: bool) -> None:
    """Every unit's transcript, read from the files (they are all in the logs dir)."""
    from agentd.session.transcript import read_tail

    found = _transcripts()
    if not found and not follow:
        fail(f"no transcripts yet in {Paths.resolve().logs}")
    tails: dict[str, _Tail] = {}
    shown: list[dict[str, Any]] = []
    for unit, path in found.items():
        text, size = read_tail(path, lines)
        tails[unit] = _Tail(path, size)
        shown.append(
            {"unit": unit, "path": str(path), "lines": (text if raw else clean(text)).splitlines()}
        )
    if as_json:
        print_json(shown)
        return
    width = max(map(len, found), default=0)
    for part in shown:
        for line in part["lines"]:
            click.echo(f"{part['unit']:<{width}} | {line}", color=raw or None)
    if follow:
        _follow(tails, raw, named=True, discover=_transcripts)


def _transcripts() -> dict[str, Path]:
    """unit -> its transcript, for every unit with one in the logs dir."""
    logs_dir = Paths.resolve().logs
    return {path.parent.name: path for path in sorted(logs_dir.glob("*/transcript.log"))}


class _Tail:
    """A file read on from ``offset``, across rotations (a new file is read from 0)."""

    def __init__(self, path: Path, offset: int) -> None:
        self.path = path
        self.offset = offset
        self._ino: int | None = None

    def read(self) -> bytes:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return b""
        if self._ino is not None and (st.st_ino != self._ino or st.st_size < self.offset):
            self.offset = 0  # rotated or truncated: the new file from its start
        self._ino = st.st_ino
        if st.st_size <= self.offset:
            return b""
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read(st.st_size - self.offset)
        self.offset += len(data)
        return data


def _follow(
    tails: dict[str, _Tail],
    raw: bool,
    *,
    named: bool,
    discover: Callable[[], dict[str, Path]] | None = None,
) -> None:
    """Print what is appended to the files, as it comes (Ctrl-C ends: exit 130); with
    ``named``, line by line after the unit's name; ``discover`` finds new files."""
    out = sys.stdout.buffer
    pending = dict.fromkeys(tails, b"")
    try:
        while True:
            wrote = False
            width = max(map(len, tails), default=0)
            for unit, tail in tails.items():
                data = tail.read()
                if not data:
                    continue
                wrote = True
                if raw and not named:
                    out.write(data)
                    continue
                buf = pending[unit] + data
                cut = buf.rfind(b"\n") + 1 if len(buf) < 65536 else len(buf)
                text, pending[unit] = buf[:cut].decode("utf-8", "replace"), buf[cut:]
                text = text if raw else clean(text)
                if named:
                    text = "".join(f"{unit:<{width}} | {line}\n" for line in text.splitlines())
                out.write(text.encode())
            if wrote:
                out.flush()
                continue
            time.sleep(FOLLOW_POLL)
            for unit, path in (discover() if discover else {}).items():
                if unit not in tails:  # a unit that started writing since
                    tails[unit], pending[unit] = _Tail(path, 0), b""
    except KeyboardInterrupt:
        sys.exit(130)


def _offline(why: str, unit: str, name: str, read: Callable[[Path], Any]) -> Any:
    """``read(logs/UNIT/NAME)`` when no agentd answers (said on stderr); when that
    file is missing too, exit 1 with ``why``."""
    return _from_file(why, Paths.resolve().unit_logs(unit) / name, read)


def _from_file(why: str, path: Path, read: Callable[[Path], Any]) -> Any:
    if not path.exists():
        fail(f"{why} (nor is there {path} to read)")
    click.echo(f"agentctl: no agentd answers; read from {path}", err=True)
    return read(path)


def _transcript(path: Path, lines: int) -> dict[str, Any]:
    from agentd.session.transcript import read_tail

    text, size = read_tail(path, lines)
    return {"path": str(path), "text": text, "size": size}


@click.command()
@click.argument("unit", required=False, callback=unit_name, shell_complete=complete_units)
@click.option("-n", "--lines", default=20, show_default=True, type=click.IntRange(0, 100_000))
@click.option("-f", "--follow", is_flag=True, help="Keep printing new events (Ctrl-C ends).")
@color_option
@json_option
def events(unit: str | None, lines: int, follow: bool, color: str, as_json: bool) -> None:
    """Print the daemon's last events (of UNIT only, if given); JSON lines with --json."""
    painter = Painter(wanted(color, sys.stdout))

    def show(event: dict[str, Any]) -> str:
        return json.dumps(event, ensure_ascii=False) if as_json else format_event(event, painter)

    if not follow:
        found = call(
            "events", unit=unit, lines=lines, offline=lambda why: _events(why, unit, lines)
        )
        for event in found:
            click.echo(show(event), color=painter.on or None)
        return
    try:
        with connected("events", unit=unit) as client:
            reply = client.request("events", unit=unit, lines=lines, follow=True)
            for event in reply["result"]:
                click.echo(show(event), color=painter.on or None)
            for item in client.stream():
                if "event" not in item:
                    fail(f"the event stream ended: {item.get('end')}")
                click.echo(show(item["event"]), color=painter.on or None)
    except KeyboardInterrupt:
        sys.exit(130)


@click.command()
@click.argument("unit", callback=unit_name, shell_complete=complete_units)
@click.option(
    "-n",
    "--lines",
    default=20,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="The last N sessions.",
)
@color_option
@json_option
def history(unit: str, lines: int, color: str, as_json: bool) -> None:
    """List UNIT's sessions: start, duration, outcome, reason, bootstrap file."""
    result = call(
        "history",
        unit=unit,
        lines=lines,
        offline=lambda why: _offline(
            why, unit, "history.jsonl", lambda path: _history(path, lines)
        ),
    )
    if as_json:
        print_json(result)
        return
    painter = Painter(wanted(color, sys.stdout))
    click.echo(history_rows(unit, result, painter), color=painter.on or None)


@click.command()
@click.argument("unit", callback=unit_name, shell_complete=complete_units)
@json_option
def bootstrap(unit: str, as_json: bool) -> None:
    """Print the bootstrap UNIT's next session would be given, rendered now."""
    result = call("bootstrap", unit=unit)
    if as_json:
        print_json(result)
    else:
        click.echo(result["text"], nl=False)


def _history(path: Path, lines: int) -> list[dict[str, Any]]:
    from agentd.supervisor.records.history import History, sessions

    return sessions(History(path).recent())[-lines:] if lines else []


def _events(why: str, unit: str | None, lines: int) -> list[dict[str, Any]]:
    from agentd.supervisor.records.history import recent_events_of

    found: list[dict[str, Any]] = _from_file(
        why, Paths.resolve().events_file, lambda path: recent_events_of(path, unit, lines)
    )
    return found
