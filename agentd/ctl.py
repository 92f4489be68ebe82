"""``agentctl``: control a running agentd over its socket (SPEC 8, 9), and
``agentctl state``, which works on a state dir without the daemon."""

from __future__ import annotations

import os

import click

from agentd import __version__
from agentd.ctlverbs import register
from agentd.statecli import state


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


if __name__ == "__main__":  # pragma: no cover
    main()
