"""``agentctl``: control a running agentd over its socket (SPEC 8, 9), and
``agentctl state``, which works on a state dir without the daemon."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from agentd import __version__
from agentd.cli import hooks
from agentd.cli.ctlverbs import register
from agentd.cli.state import state


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False), default=None,
              help="agentd's home (as agentd --home / AGENTD_HOME): socket, logs, units.")
@click.version_option(__version__, prog_name="agentctl")
def main(home: str | None) -> None:
    """Control agentd units: status, start, stop, restart, logs, state."""
    if home:  # every verb resolves its places from the environment
        os.environ["AGENTD_HOME"] = os.path.abspath(os.path.expanduser(home))


main.add_command(state)
register(main)  # status, start, stop, restart, reload, logs, events, history, bootstrap, ...


@main.command("hooks")
@click.argument("cli", type=click.Choice(sorted(hooks.SETTINGS)))
@click.option("--dir", "project", type=click.Path(file_okay=False, path_type=Path),
              default=".", show_default=True, help="The project (the unit's workdir).")
@click.option("--print", "to_stdout", is_flag=True, help="Print the settings, write nothing.")
def hooks_cmd(cli: str, project: Path, to_stdout: bool) -> None:
    """Write CLI's hook settings: PreCompact restarts the session with fresh state,
    SessionStart re-injects the bootstrap (merged into .claude/settings.json or
    .codex/hooks.json; other settings are kept)."""
    if to_stdout:
        click.echo(json.dumps(hooks.merged({}), indent=2))
        return
    try:
        path = hooks.write_settings(cli, project)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote agentd's PreCompact and SessionStart hooks to {path}")


@main.command(hidden=True)
@click.argument("event", type=click.Choice(["pre-compact", "session-start"]))
def hook(event: str) -> None:
    """Run by the CLI's hooks (see `agentctl hooks`); reads the hook's JSON on stdin."""
    if not sys.stdin.isatty():
        sys.stdin.read()  # the CLI writes the event; drain it so it never blocks
    reply = hooks.pre_compact() if event == "pre-compact" else hooks.session_start()
    if reply:
        click.echo(reply)


if __name__ == "__main__":  # pragma: no cover
    main()
