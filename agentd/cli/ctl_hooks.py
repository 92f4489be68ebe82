"""``agentctl hooks CLI`` writes a CLI's hook settings; the hidden ``agentctl
hook EVENT`` is what those hooks run (see ``agentd.cli.hooks``)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from agentd.cli import hooks


@click.command("hooks")
@click.argument("cli", type=click.Choice(sorted(hooks.SETTINGS)))
@click.option("--dir", "project", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=".", show_default=True,
              help="The project (the unit's workdir); it must exist.")
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
    data: dict[str, Any] = {}
    if not sys.stdin.isatty():  # the CLI writes the event; read it so it never blocks
        with contextlib.suppress(ValueError):
            parsed = json.loads(sys.stdin.read() or "{}")
            data = parsed if isinstance(parsed, dict) else {}
    if event == "pre-compact":
        hooks.pre_compact(data)
    elif reply := hooks.session_start():
        click.echo(reply)
