"""``agentctl hooks CLI`` writes a CLI's hook settings; the hidden ``agentctl
hook EVENT`` is what those hooks run (see ``agentd.cli.hooks``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from agentd.cli import hooks


@click.command("hooks")
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


@click.command(hidden=True)
@click.argument("event", type=click.Choice(["pre-compact", "session-start"]))
def hook(event: str) -> None:
    """Run by the CLI's hooks (see `agentctl hooks`); reads the hook's JSON on stdin."""
    if not sys.stdin.isatty():
        sys.stdin.read()  # the CLI writes the event; drain it so it never blocks
    reply = hooks.pre_compact() if event == "pre-compact" else hooks.session_start()
    if reply:
        click.echo(reply)
