"""The ``agentctl`` verbs that talk to the daemon (SPEC 8, 9), as click commands.

``register(group)`` adds them to a click group (``agentctl``'s). Each verb
sends one request (``agentd.daemon.protocol``) and prints the result for people, or
as JSON with ``--json``. ``logs -f`` asks the daemon where the transcript is
and then follows the file itself; ``events -f`` is streamed by the daemon.

Exit codes: 0 ok, 1 failure (the daemon unreachable, a command that failed,
an unknown unit), 2 usage error (also an invalid unit name); ``status`` uses
the LSB codes: 3 a named unit is not running, 4 an unknown unit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from agentd.paths import Paths

if TYPE_CHECKING:  # imported when used: `agentctl state` need not load the protocol
    from agentd.daemon.protocol import Client

ACTIVE = ("starting", "running", "stopping")
TROUBLE = ("backoff", "failed", "stalled")
FOLLOW_POLL = 0.25


def _fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"agentctl: {message}", err=True)
    sys.exit(code)


def call(cmd: str, *, timeout: float | None = 30.0, unknown_code: int = 1, **args: Any) -> Any:
    """One request to the daemon; its result, or exit with a message."""
    with connected(cmd, timeout=timeout, unknown_code=unknown_code) as client:
        return client.call(cmd, **args)


@contextlib.contextmanager
def connected(cmd: str, *, timeout: float | None = 30.0,
              unknown_code: int = 1) -> Iterator[Client]:
    """A client for the daemon; any failure becomes a message and an exit code."""
    from agentd.daemon.protocol import Client, Code, RemoteError, Unreachable
    from agentd.errors import PathError

    try:
        paths = Paths.resolve()
        paths.check_socket()
        with Client(paths.socket, timeout=timeout) as client:
            yield client
    except (Unreachable, PathError) as exc:
        _fail(str(exc))
    except RemoteError as exc:
        _fail(str(exc), unknown_code if exc.code == Code.UNKNOWN_UNIT else exc.code)
    except TimeoutError:
        _fail(f"agentd did not answer {cmd!r} within {timeout:g}s; is it stuck? "
              "(see its log: journalctl --user -u agentd)")
    except OSError as exc:
        _fail(f"lost the connection to agentd during {cmd!r}: {exc}")


def _names(_ctx: click.Context, _param: click.Parameter, value: Iterable[str]) -> list[str]:
    from agentd.daemon.protocol import check_unit_name

    try:
        return [check_unit_name(v) for v in value]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else _names(ctx, param, [value])[0]


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


# --- formatting ------------------------------------------------------------------------


def _parse_time(value: str | None) -> float | None:
    try:
        return datetime.fromisoformat(str(value)).timestamp() if value else None
    except ValueError:
        return None


def span(seconds: float | None) -> str:
    """``42s``, ``5m03s``, ``2h05m``, ``3d04h``."""
    if seconds is None:
        return "-"
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
                     for r in rows).rstrip()


def status_rows(statuses: list[dict[str, Any]], now: float) -> str:
    rows = [["UNIT", "STATE", "PID", "SESSION", "UPTIME", "RESTARTS", "LAST"]]
    for s in statuses:
        last = s.get("last_reason") or "-"
        at = _parse_time(s.get("last_at"))
        if at is not None and s.get("last_reason"):
            last += f" ({span(now - at)} ago)"
        until = _parse_time(s.get("paused_until"))
        if until is not None:
            last += f"; paused until {time.strftime('%H:%M', time.localtime(until))}"
        running = s.get("pid") is not None
        rows.append([s["unit"], s["state"], str(s["pid"]) if running else "-",
                     str(s.get("session", 0)), span(s.get("uptime_s")) if running else "-",
                     str(s.get("restarts", 0)), last])
    return _table(rows)


def format_event(e: dict[str, Any]) -> str:
    head = ("timestamp", "level", "event", "unit", "session")
    where = str(e.get("unit", "-")) + (f"#{e['session']}" if e.get("session") else "")
    rest = " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                    for k, v in e.items() if k not in head)
    stamp = str(e.get("timestamp", ""))[:19].replace("T", " ")
    return f"{stamp}  {e.get('event', '?'):<22} {where:<14} {rest}".rstrip()


def clean(text: str) -> str:
    """What a person reads: escape sequences removed, redraws as line breaks."""
    from agentd.terminal.ansi import strip_ansi

    return "".join(f"{line}\n" for line in strip_ansi(text))


# --- verbs -------------------------------------------------------------------------------


@click.command()
@click.argument("units", nargs=-1, callback=_names)
@json_option
def status(units: list[str], as_json: bool) -> None:
    """Show units: UNIT STATE PID SESSION UPTIME RESTARTS LAST.

    Exit 0 if every named unit is running, 3 if one is not, 4 if one is
    unknown, 1 if agentd cannot be reached.
    """
    result = call("status", unknown_code=4, units=units)
    if as_json:
        _print_json(result)
    elif result:
        click.echo(status_rows(result, time.time()))
    else:
        click.echo(f"no units loaded (put unit files in {Paths.resolve().units})")
    if units and any(s["state"] != "running" for s in result):
        sys.exit(3)


def _units_verb(name: str, doc: str, **extra: Any) -> click.Command:
    def verb(units: list[str], all_units: bool, as_json: bool, **opts: Any) -> None:
        if bool(units) == all_units:
            raise click.UsageError("name one or more units, or give --all")
        result = call(name, timeout=None if name == "stop" else 180.0, units=units,
                      all=all_units, **opts)
        if as_json:
            _print_json(result)
        for s in [] if as_json else result:
            pid = f", pid {s['pid']}" if s.get("pid") else ""
            why = f" ({s['last_reason']})" if s["state"] in TROUBLE and s.get("last_reason") else ""
            click.echo(f"{s['unit']}: {s['state']}{why} (session {s['session']}{pid})")
        bad = [s["unit"] for s in result if name != "stop" and s["state"] in TROUBLE]
        if bad:
            _fail(f"{', '.join(bad)} did not start cleanly; see: agentctl logs {bad[0]}")

    verb.__doc__ = doc
    cmd = click.command(name)(verb)
    for option in extra.values():
        cmd = option(cmd)
    cmd = json_option(cmd)
    cmd = click.option("--all", "all_units", is_flag=True, help="Every loaded unit.")(cmd)
    return click.argument("units", nargs=-1, callback=_names)(cmd)


start = _units_verb("start", "Start units now (also from done, failed, backoff or paused).")
stop = _units_verb("stop", "Stop units; waits until their processes are gone.")
restart = _units_verb(
    "restart", "End the running sessions and start fresh ones with a new bootstrap.",
    reason=click.option("--reason", default="manual", show_default=True,
                        help="Why (the next bootstrap says manual:REASON)."))


@click.command()
@json_option
def reload(as_json: bool) -> None:
    """Read the units dir again: load new units, stop deleted ones, apply changes.

    Changed units apply from their next session. Exit 1 if a file is invalid
    (that unit keeps its previous definition).
    """
    result = call("reload", timeout=180.0)
    if as_json:
        _print_json(result)
    else:
        for key in ("loaded", "changed", "removed"):
            if result[key]:
                click.echo(f"{key}: {', '.join(result[key])}")
        for bad in result["invalid"]:
            click.echo(f"invalid: {bad['file']}:{bad['line'] or '?'}: {bad['error']}", err=True)
        if not any(result[k] for k in ("loaded", "changed", "removed", "invalid")):
            click.echo("no changes")
    if result["invalid"]:
        sys.exit(1)


@click.command()
@click.argument("unit", callback=_name)
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
@click.argument("unit", required=False, callback=_name)
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
                    _fail(f"the event stream ended: {item.get('end')}")
                click.echo(show(item["event"]))
    except KeyboardInterrupt:
        sys.exit(130)


@click.command()
@click.argument("unit", callback=_name)
@click.option("-n", "--lines", default=20, show_default=True, type=click.IntRange(0, 100_000),
              help="The last N sessions.")
@json_option
def history(unit: str, lines: int, as_json: bool) -> None:
    """List UNIT's sessions: start, duration, outcome, reason, bootstrap file."""
    result = call("history", unit=unit, lines=lines)
    if as_json:
        _print_json(result)
        return
    rows = [["SESSION", "STARTED", "DURATION", "OUTCOME", "REASON", "BOOTSTRAP"]]
    for s in result:
        ended = s.get("reason") is not None
        rows.append([str(s["session"]), str(s.get("started_at") or "-"),
                     span(s.get("duration_s")) if s.get("duration_s") is not None else "-",
                     s.get("outcome") or ("-" if ended else "running"),
                     s.get("reason") or "-", s.get("bootstrap") or "-"])
    click.echo(_table(rows) if len(rows) > 1 else f"{unit}: no sessions yet")


@click.command()
@click.argument("unit", callback=_name)
@json_option
def bootstrap(unit: str, as_json: bool) -> None:
    """Print the bootstrap UNIT's next session would be given, rendered now."""
    result = call("bootstrap", unit=unit)
    if as_json:
        _print_json(result)
    else:
        click.echo(result["text"], nl=False)


@click.command("install-service")
@click.option("--kind", type=click.Choice(["systemd", "launchd"]), default=None,
              help="Default: launchd on macOS, systemd elsewhere.")
@click.option("--print", "to_stdout", is_flag=True, help="Print the file instead of writing it.")
@click.option("--force", is_flag=True, help="Replace an existing, different file.")
def install_service(kind: str | None, to_stdout: bool, force: bool) -> None:
    """Write the systemd user service (or launchd agent) that runs this agentd.

    It names the real paths of this python/agentd and carries PATH (and
    AGENTD_HOME, AGENTD_SOCKET if set) into the service.
    """
    from agentd.daemon import notify

    kind = kind or ("launchd" if sys.platform == "darwin" else "systemd")
    env, argv = os.environ, notify.daemon_argv()
    target = notify.service_path(kind, env)
    if kind == "systemd":
        data = notify.systemd_unit(argv, env).encode()
        then = "systemctl --user daemon-reload && systemctl --user enable --now agentd"
    else:
        data = notify.launchd_plist(argv, env, Paths.resolve().logs / "agentd.err.log")
        then = f"launchctl load -w {target}"
    if to_stdout:
        sys.stdout.buffer.write(data)
        return
    if target.exists() and target.read_bytes() != data and not force:
        _fail(f"{target} exists and differs; compare with `agentctl install-service --print`, "
              "then give --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    click.echo(f"wrote {target}\nnext: {then}")


DETACH = b"\x1d"  # Ctrl-]


@click.command()
@click.argument("unit", callback=_name)
def attach(unit: str) -> None:
    """Watch UNIT's live terminal and type into it; Ctrl-] detaches.

    Output of every session of the unit is shown as it comes (it follows the
    unit across restarts); what you type goes to the running session.
    """
    import base64
    import threading

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
    import base64
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


VERBS: tuple[click.Command, ...] = (status, start, stop, restart, reload, logs, events, history,
                                    bootstrap, attach, install_service)


def register(group: click.Group) -> None:
    """Add the daemon verbs to ``group`` (agentctl)."""
    for verb in VERBS:
        group.add_command(verb)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """agentctl's daemon verbs alone (``python -m agentd.cli.ctlverbs``)."""


register(main)

if __name__ == "__main__":  # pragma: no cover
    main()
