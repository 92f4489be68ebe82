"""``agentctl install-service``: the systemd user service (or launchd agent)
that runs this agentd, written from ``agentd.daemon.notify``'s templates."""

from __future__ import annotations

import os
import sys

import click

from agentd.cli.agentctl.client import fail
from agentd.paths import Paths


@click.command("install-service")
@click.option(
    "--kind",
    type=click.Choice(["systemd", "launchd"]),
    default=None,
    help="Default: launchd on macOS, systemd elsewhere.",
)
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
        fail(
            f"{target} exists and differs; compare with `agentctl install-service --print`, "
            "then give --force to replace it"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    click.echo(f"wrote {target}\nnext: {then}")
    if kind == "systemd" and notify.user_bus(env) is None:
        click.echo(
            "warning: this session has no systemd user bus (neither DBUS_SESSION_BUS_ADDRESS "
            "nor $XDG_RUNTIME_DIR/bus), so `systemctl --user` cannot reach your service "
            "manager from here. Log in directly (not through su or sudo), or let your user "
            f"manager run without a login: `loginctl enable-linger {_user()}`, then log in "
            "again. Without systemd, run `agentd serve` under whatever supervises your "
            "services.",
            err=True,
        )


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "$USER"
