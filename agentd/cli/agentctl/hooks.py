"""Hook settings for agent CLIs that announce compaction.

Screen text is a guess; a hook is the CLI saying so. A unit on the
claude-code or codex preset gets two hooks for each session on the command
line (``agentd.config.clihooks``, unit key ``hooks``); ``agentctl hooks
claude-code|codex`` merges the same two into the project's settings
(``.claude/settings.json`` / ``.codex/hooks.json``) instead, for units that
turn that off or run the CLI behind a wrapper:

- ``PreCompact`` runs ``agentctl hook pre-compact``: before an automatic
  compaction it tells agentd, through the session's ``AGENTD_SOCKET`` (the
  daemon's socket, or the private one of ``agentd run``), that this session is
  about to compact, then waits while agentd ends the session and starts a
  fresh one from the state files (reason ``sentinel:precompact``): the CLI is
  still waiting for its hook when it is ended, so it never sends its summary
  request. A hook has no terminal (a real Claude Code runs it with stdin on a
  socket and no controlling tty), so the socket is the only way to agentd.
  Outside agentd, for a compaction a person asked for (``/compact``), or if
  agentd does not answer, it exits at once and lets the CLI compact.

  The hook must outlive the CLI. Claude Code 2.1.197 takes 50-100 ms from
  SIGTERM to exit, its event loop running on; a hook that ends in that time,
  even killed by a signal, is a failed hook, not a blocking one, so the
  compaction goes on and its summary request goes out. agentd signals every
  process of the session (the hook too: it runs in a session of its own, found
  by agentd's scan), so once agentd has said it ends the session the hook
  ignores the usual stop signals and exits only when its parent, the CLI, has
  exited: the session then ends as soon as the CLI is gone. The command is
  ``exec``'d: the CLI runs it with ``/bin/sh -c``, and dash would otherwise stay
  in between as the hook's parent and die of the signal, which ends the hook
  as far as the CLI can tell.
- ``SessionStart`` (after a compaction, ``/clear`` or a resume) runs
  ``agentctl hook session-start``, which prints the bootstrap: the CLI adds a
  SessionStart hook's output to the new context.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click

from agentd.config.clihooks import agentd_hooks

SETTINGS = {
    "claude-code": Path(".claude") / "settings.json",
    "codex": Path(".codex") / "hooks.json",
}
PRECOMPACT_WAIT = 100.0
# What agentd may end a session with (the unit's stop.signal): the hook that was
# told "ending" must not die of it before the CLI has exited.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
PARENT_POLL = 0.01  # s between looks at getppid() where there is no pidfd
_OURS = re.compile(r"-m agentd(\.cli\.agentctl|\.ctl) hook |agentctl hook ")


def merged(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with agentd's hooks in place: earlier agentd entries replaced,
    everyone else's kept."""
    out = dict(settings)
    hooks = dict(out.get("hooks") or {})
    for event, entries in agentd_hooks().items():
        kept = [e for e in hooks.get(event) or [] if not _is_ours(e)]
        hooks[event] = kept + entries
    out["hooks"] = hooks
    return out


def _is_ours(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    return any(
        isinstance(h, dict) and _OURS.search(str(h.get("command", "")))
        for h in entry.get("hooks") or []
    )


def write_settings(cli: str, project: Path) -> Path:
    """Merge agentd's hooks into ``project``'s settings file for ``cli``; its path."""
    path = project / SETTINGS[cli]
    current: dict[str, Any] = {}
    if path.exists():
        try:
            current = json.loads(path.read_text(encoding="utf-8") or "{}")
        except ValueError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc}); fix or move it first") from None
        if not isinstance(current, dict):
            raise ValueError(f"{path} does not hold a JSON object; fix or move it first")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(merged(current), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def pre_compact(event: dict[str, Any]) -> None:
    """The CLI is about to compact (``event`` is the hook's JSON): have agentd end
    this session first, and return only once the CLI has exited (see the module
    docstring). Returns at once outside agentd, for a manual compaction, or when
    agentd will not end the session."""
    unit, session = os.environ.get("AGENTD_UNIT"), os.environ.get("AGENTD_SESSION", "")
    socket = os.environ.get("AGENTD_SOCKET")
    if not unit or not socket or not session.isdigit() or event.get("trigger") == "manual":
        return
    from agentd.daemon.control.client import Client, RemoteError, Unreachable

    cli = os.getppid()  # now: once the CLI has gone, the parent is whoever adopted the hook
    # Deaf before asking: agentd's signal may arrive before its reply does.
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        with Client(Path(socket), timeout=10) as client:
            reply = client.call("precompact", unit=unit, session=int(session))
    except (Unreachable, RemoteError, OSError, ValueError):
        reply = None
    if isinstance(reply, dict) and reply.get("ending"):
        wait_for_exit_of_parent(cli, PRECOMPACT_WAIT)
        return
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def wait_for_exit_of_parent(parent: int, timeout: float) -> bool:
    """Wait until ``parent``, this process's parent when it started, has exited
    (True), or ``timeout`` s have passed (False). A pidfd where there is one (Linux
    5.3+), else a look at getppid() every PARENT_POLL s: it changes the moment the
    parent exits (this process is adopted), before the parent is reaped."""
    try:
        pidfd: int | None = os.pidfd_open(parent)
    except (AttributeError, OSError):  # not Linux, an old kernel, seccomp, or gone already
        pidfd = None
    if pidfd is not None:
        try:
            if os.getppid() != parent:  # exited before the open: the pid may be another's
                return True
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)  # readable once the process has exited
            return bool(poller.poll(timeout * 1000))
        finally:
            os.close(pidfd)
    deadline = time.monotonic() + timeout
    while os.getppid() == parent:
        if time.monotonic() >= deadline:
            return False
        time.sleep(PARENT_POLL)
    return True


def session_start(event: dict[str, Any] | None = None) -> str:
    """The bootstrap to add to a compacted, cleared or resumed context ('' outside
    agentd, and at a session's start: the session's prompt names it already)."""
    path = os.environ.get("AGENTD_BOOTSTRAP_FILE")
    if not path or (event or {}).get("source") == "startup":
        return ""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


# -- the commands: ``agentctl hooks CLI`` writes a CLI's hook settings; the hidden
# ``agentctl hook EVENT`` is what those hooks run ---------------------------------


@click.command("hooks")
@click.argument("cli", type=click.Choice(sorted(SETTINGS)))
@click.option(
    "--dir",
    "project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The project (the unit's workdir); it must exist.",
)
@click.option("--print", "to_stdout", is_flag=True, help="Print the settings, write nothing.")
def hooks_cmd(cli: str, project: Path, to_stdout: bool) -> None:
    """Write CLI's hook settings: PreCompact restarts the session with fresh state,
    SessionStart re-injects the bootstrap (merged into .claude/settings.json or
    .codex/hooks.json; other settings are kept). Units on the claude-code and codex
    presets get these hooks per session without it (unit key hooks); this is for a
    unit with `hooks: none` or a wrapper in front of the CLI."""
    if to_stdout:
        click.echo(json.dumps(merged({}), indent=2))
        return
    try:
        path = write_settings(cli, project)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote agentd's PreCompact and SessionStart hooks to {path}")


@click.command(hidden=True)
@click.argument("event", type=click.Choice(["pre-compact", "session-start"]))
def hook(event: str) -> None:
    """Run by the CLI's hooks (see `agentctl hooks`); reads the hook's JSON on stdin."""
    data: dict[str, Any] = {}
    if not sys.stdin.isatty():  # the CLI writes the event; read it so it never blocks
        with contextlib.suppress(ValueError):
            parsed = json.loads(sys.stdin.read() or "{}")
            data = parsed if isinstance(parsed, dict) else {}
    if event == "pre-compact":
        pre_compact(data)
    elif reply := session_start(data):
        click.echo(reply)
