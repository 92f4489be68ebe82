"""``agentctl status|start|stop|restart|enable|disable|reload``: the units' states,
and changing them.

``status`` uses the LSB exit codes: 3 a named unit is not running, 4 an
unknown unit (and 1 when agentd cannot be reached). Units under ``agentd run``
are asked through their run's socket: ``status`` lists them beside the
daemon's, and the verbs that name units reach them there. ``enable``/``disable``
are systemctl's: whether the daemon starts a unit when it starts (``--now``:
start or stop it now too).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from agentd.cli.agentctl.client import call, call_units, fail, print_json
from agentd.cli.agentctl.params import color_option, complete_units, json_option, unit_names
from agentd.cli.agentctl.status import DETAIL_LINES, show

TROUBLE = ("backoff", "failed", "stalled")


@click.command()
@click.argument("units", nargs=-1, callback=unit_names, shell_complete=complete_units)
@click.option("--table", is_flag=True, help="The table, also for named units.")
@click.option(
    "-n",
    "--lines",
    default=DETAIL_LINES,
    show_default=True,
    type=click.IntRange(0, 1000),
    help="Lines of the transcript in the detail view.",
)
@color_option
@json_option
def status(units: list[str], table: bool, lines: int, color: str, as_json: bool) -> None:
    """Show units: the table (UNIT STATE PID SESSION UPTIME RESTARTS LAST), or for
    named units what each is, as `systemctl status` does.

    A named unit's view: its unit file and preset, its state and since when
    (and why, when it is not running), the effective command, workdir and
    state dir, the main pid and how many processes its tree has, the session
    and what started it, restarts, today's use of its budget and the
    transcript's last lines (-n). --json: the status objects (the detail
    view's add unit_file, command, workdir, state_dir, last_lines...).

    Exit 0 if every named unit is running, 3 if one is not, 4 if one is
    unknown, 1 if agentd cannot be reached.
    """
    code = show(units, as_json, table=table, lines=lines, color=color)
    if code:
        sys.exit(code)


def _units_verb(name: str, doc: str, **extra: Any) -> click.Command:
    def verb(units: list[str], all_units: bool, as_json: bool, **opts: Any) -> None:
        if bool(units) == all_units:
            raise click.UsageError("name one or more units, or give --all")
        stopping = name == "stop" or (name == "disable" and opts.get("now"))
        timeout = None if stopping else 180.0
        result = (
            call(name, timeout=timeout, units=[], all=True, **opts)
            if all_units
            else call_units(name, units, timeout=timeout, **opts)
        )
        if as_json:
            print_json(result)
        for s in [] if as_json else result:
            pid = f", pid {s['pid']}" if s.get("pid") else ""
            why = ""
            if s["state"] in TROUBLE and s.get("last_reason"):
                more = f": {s['detail']}" if s.get("detail") else ""
                why = f" ({s['last_reason']}{more})"
            said = f"{s['state']}{why} (session {s['session']}{pid})"
            if name in ("enable", "disable"):
                said = f"{'enabled' if s.get('enabled') else 'disabled'}; {said}"
            click.echo(f"{s['unit']}: {said}")
        starting = name in ("start", "restart") or (name == "enable" and opts.get("now"))
        bad = [s["unit"] for s in result if starting and s["state"] in TROUBLE]
        if bad:
            fail(f"{', '.join(bad)} did not start cleanly; see: agentctl logs {bad[0]}")

    verb.__doc__ = doc
    cmd = click.command(name)(verb)
    for option in extra.values():
        cmd = option(cmd)
    cmd = json_option(cmd)
    cmd = click.option("--all", "all_units", is_flag=True, help="Every loaded unit.")(cmd)
    return click.argument("units", nargs=-1, callback=unit_names, shell_complete=complete_units)(
        cmd
    )


start = _units_verb(
    "start",
    "Start units now (also from done, failed, backoff or paused); "
    "a disabled unit starts too, and stays disabled.",
)
stop = _units_verb("stop", "Stop units; waits until their processes are gone.")
restart = _units_verb(
    "restart",
    "End the running sessions and start fresh ones with a new bootstrap.",
    reason=click.option(
        "--reason",
        default="manual",
        show_default=True,
        help="Why (the next bootstrap says manual:REASON).",
    ),
)


_NOW = "Also {} the units now (else only when the daemon starts)."
enable = _units_verb(
    "enable",
    "Start units whenever the daemon starts (kept across restarts and reboots).",
    now=click.option("--now", is_flag=True, help=_NOW.format("start")),
)
disable = _units_verb(
    "disable",
    "Do not start units when the daemon starts; a running unit goes on.",
    now=click.option("--now", is_flag=True, help=_NOW.format("stop")),
)


@click.command()
@json_option
def reload(as_json: bool) -> None:
    """Read the units dir again: load new units, stop deleted ones, apply changes.

    Changed units apply from their next session. Exit 1 if a file is invalid
    (that unit keeps its previous definition).
    """
    result = call("reload", timeout=180.0)
    if as_json:
        print_json(result)
    else:
        for key in ("loaded", "changed", "removed"):
            if result[key]:
                click.echo(f"{key}: {', '.join(result[key])}")
        for bad in result["invalid"]:
            error = str(bad["error"])
            # several problems carry their own lines: `line 3: ...; line 5: ...`
            line = bad.get("line") if not error.startswith(f"line {bad.get('line')}: ") else None
            where = bad["file"] + (f":{line}" if line else "")
            click.echo(f"invalid: {where}: {bad['error']}", err=True)
        if not any(result[k] for k in ("loaded", "changed", "removed", "invalid")):
            click.echo("no changes")
    if result["invalid"]:
        sys.exit(1)
