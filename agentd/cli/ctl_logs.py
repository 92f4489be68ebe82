"""``agentctl logs|events|history|bootstrap``: what the daemon recorded and would give.

``logs -f`` asks the daemon where the transcript is and then follows the
file itself; ``events -f`` is streamed by the daemon.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from agentd.cli.ctl_client import call, connected, fail, json_option, print_json, unit_name
from agentd.cli.ctl_format import clean, format_event, span, table

FOLLOW_POLL = 0.25


@click.command()
@click.argument("unit", callback=unit_name)
@click.option("-n", "--lines", default=50, show_default=True, type=click.IntRange(0, 100_000))
@click.option("-f", "--follow", is_flag=True, help="Keep printing new output (Ctrl-C ends).")
@click.option("--raw", is_flag=True, help="Keep escape sequences (colours, cursor moves).")
@json_option
def logs(unit: str, lines: int, follow: bool, raw: bool, as_json: bool) -> None:
    """Print the end of UNIT's transcript (the agent's output)."""
    if as_json and follow:
        raise click.UsageError("--json prints the last lines once; use -f without --json "
                               "(or `agentctl events UNIT -f --json` for a JSON stream)")
    result = call("logs", unit=unit, lines=lines)
    text = result["text"]
    if as_json:
        shown = text if raw else clean(text)
        click.echo(json.dumps({"unit": unit, "path": result["path"],
                               "lines": shown.splitlines()}, ensure_ascii=False))
        return
    click.echo(text if raw else clean(text), nl=False, color=raw or None)
    if follow:
        try:
            follow_file(Path(result["path"]), int(result["size"]), raw)
        except KeyboardInterrupt:
            sys.exit(130)


def follow_file(path: Path, offset: int, raw: bool) -> None:
    """Print what is appended to ``path`` from ``offset`` on, across rotations."""
    out = sys.stdout.buffer
    pending = b""
    ino = None
    while True:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            time.sleep(FOLLOW_POLL)
            continue
        if ino is not None and (st.st_ino != ino or st.st_size < offset):
            offset = 0  # rotated or truncated: the new file from its start
        ino = st.st_ino
        if st.st_size > offset:
            with path.open("rb") as f:
                f.seek(offset)
                data = f.read(st.st_size - offset)
            offset += len(data)
            if raw:
                out.write(data)
            else:
                pending += data
                cut = pending.rfind(b"\n") + 1 if len(pending) < 65536 else len(pending)
                out.write(clean(pending[:cut].decode("utf-8", "replace")).encode())
                pending = pending[cut:]
            out.flush()
        else:
            time.sleep(FOLLOW_POLL)


@click.command()
@click.argument("unit", required=False, callback=unit_name)
@click.option("-n", "--lines", default=20, show_default=True, type=click.IntRange(0, 100_000))
@click.option("-f", "--follow", is_flag=True, help="Keep printing new events (Ctrl-C ends).")
@json_option
def events(unit: str | None, lines: int, follow: bool, as_json: bool) -> None:
    """Print the daemon's last events (of UNIT only, if given); JSON lines with --json."""
    show = (lambda e: json.dumps(e, ensure_ascii=False)) if as_json else format_event
    if not follow:
        for event in call("events", unit=unit, lines=lines):
            click.echo(show(event))
        return
    try:
        with connected("events") as client:
            reply = client.request("events", unit=unit, lines=lines, follow=True)
            for event in reply["result"]:
                click.echo(show(event))
            for item in client.stream():
                if "event" not in item:
                    fail(f"the event stream ended: {item.get('end')}")
                click.echo(show(item["event"]))
    except KeyboardInterrupt:
        sys.exit(130)


@click.command()
@click.argument("unit", callback=unit_name)
@click.option("-n", "--lines", default=20, show_default=True, type=click.IntRange(0, 100_000),
              help="The last N sessions.")
@json_option
def history(unit: str, lines: int, as_json: bool) -> None:
    """List UNIT's sessions: start, duration, outcome, reason, bootstrap file."""
    result = call("history", unit=unit, lines=lines)
    if as_json:
        print_json(result)
        return
    rows = [["SESSION", "STARTED", "DURATION", "OUTCOME", "REASON", "BOOTSTRAP"]]
    for s in result:
        ended = s.get("reason") is not None
        rows.append([str(s["session"]), str(s.get("started_at") or "-"),
                     span(s.get("duration_s")) if s.get("duration_s") is not None else "-",
                     s.get("outcome") or ("-" if ended else "running"),
                     s.get("reason") or "-", s.get("bootstrap") or "-"])
    click.echo(table(rows) if len(rows) > 1 else f"{unit}: no sessions yet")


@click.command()
@click.argument("unit", callback=unit_name)
@json_option
def bootstrap(unit: str, as_json: bool) -> None:
    """Print the bootstrap UNIT's next session would be given, rendered now."""
    result = call("bootstrap", unit=unit)
    if as_json:
        print_json(result)
    else:
        click.echo(result["text"], nl=False)
