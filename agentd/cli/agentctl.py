"""``agentctl``: control a running agentd over its socket (SPEC 8, 9), and
``agentctl state``, which works on a state dir without the daemon."""

from __future__ import annotations

import os

import click

from agentd import __version__
from agentd.cli.ctl_attach import attach
from agentd.cli.ctl_hooks import hook, hooks_cmd
from agentd.cli.ctl_logs import bootstrap, events, history, logs
from agentd.cli.ctl_service import install_service
from agentd.cli.ctl_units import reload, restart, start, status, stop
from agentd.cli.state import state


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False), default=None,
              help="agentd's home (as agentd --home / AGENTD_HOME): socket, logs, units.")
@click.version_option(__version__, prog_name="agentctl")
def main(home: str | None) -> None:
    """Control agentd units: status, start, stop, restart, logs, state."""
    if home:  # every verb resolves its places from the environment
        os.environ["AGENTD_HOME"] = os.path.abspath(os.path.expanduser(home))


for verb in (state, status, start, stop, restart, reload, logs, events, history, bootstrap,
             attach, install_service, hooks_cmd, hook):
    main.add_command(verb)


if __name__ == "__main__":  # pragma: no cover
    main()
