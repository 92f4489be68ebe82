"""``agentctl``: control a running agentd over its socket, and
``agentctl state``, which works on a state dir without the daemon.

Agents run ``agentctl state next|done|decide`` after every step, so start-up
time counts: each verb group is a module of its own (``VERBS``), imported only
when one of its verbs runs (or ``--help`` lists them all). ``agentctl state``
never loads the daemon's protocol; ``agentctl status`` never loads the
supervisor. The console script (``ctlmain``) does the plain text writes of
``agentctl state`` without click at all (``statefast``). ``scripts/bench.py
--only agentctl`` measures it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

import click

from agentd import __version__
from agentd.cli.common import OneLineErrors

# verb -> "module:command"; the module is imported when the verb runs.
VERBS: Mapping[str, str] = {
    "state": "agentd.cli.agentctl.state:state",
    "status": "agentd.cli.agentctl.units:status",
    "cat": "agentd.cli.agentctl.define:cat",
    "show": "agentd.cli.agentctl.define:show",
    "start": "agentd.cli.agentctl.units:start",
    "stop": "agentd.cli.agentctl.units:stop",
    "restart": "agentd.cli.agentctl.units:restart",
    "enable": "agentd.cli.agentctl.units:enable",
    "disable": "agentd.cli.agentctl.units:disable",
    "reload": "agentd.cli.agentctl.units:reload",
    "logs": "agentd.cli.agentctl.logs:logs",
    "events": "agentd.cli.agentctl.logs:events",
    "history": "agentd.cli.agentctl.logs:history",
    "bootstrap": "agentd.cli.agentctl.logs:bootstrap",
    "attach": "agentd.cli.agentctl.attach:attach",
    "screen": "agentd.cli.agentctl.watch:screen",
    "top": "agentd.cli.agentctl.watch:top",
    "dashboard": "agentd.cli.agentctl.dashboard:dashboard",
    "install-service": "agentd.cli.agentctl.service:install_service",
    "hooks": "agentd.cli.agentctl.hooks:hooks_cmd",
    "hook": "agentd.cli.agentctl.hooks:hook",
    "verify": "agentd.cli.agentctl.gate:verify",
    "worktree": "agentd.cli.agentctl.gate:worktree",
}


class LazyGroup(OneLineErrors):
    """A click group whose commands are imported by name on first use (click's
    documented "lazily loading subcommands" pattern); failures are one line."""

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        module, _, name = self.lazy[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), name)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
        return command


@click.group(
    "agentctl", cls=LazyGroup, lazy=VERBS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help="agentd's home (as agentd --home / AGENTD_HOME): socket, logs, units.",
)
@click.version_option(__version__, prog_name="agentctl")
def main(home: str | None) -> None:
    """Control agentd units: status, start, stop, restart, logs, state."""
    if home:  # every verb resolves its places from the environment
        os.environ["AGENTD_HOME"] = os.path.abspath(os.path.expanduser(home))


if __name__ == "__main__":  # pragma: no cover
    main()
