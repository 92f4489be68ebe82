"""``agentd``: the daemon, and running and checking units (docs/commands.md).

``agentd serve`` (also bare ``agentd``) is the daemon (``agentd.daemon.serve``);
``agentd run`` supervises one unit in the foreground on the same supervisor
the daemon uses; ``agentd check`` validates unit files like ``nginx -t``;
``agentd demo`` shows the whole loop on a bundled demo agent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from agentd import __version__
from agentd.cli.agentctl.params import complete_units
from agentd.cli.agentd.run import run_unit
from agentd.cli.common import OneLineErrors, color_option
from agentd.config.unitfile import load_unit, resolve_unit_arg
from agentd.console import Console
from agentd.errors import AgentdError, UnitError
from agentd.paths import Paths


@click.group(
    "agentd",
    cls=OneLineErrors,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
)
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="AGENTD_HOME",
    help="Keep units, logs and run files under DIR.",
)
@click.version_option(__version__, prog_name="agentd")
@click.pass_context
def main(ctx: click.Context, home: Path | None) -> None:
    """agentd keeps AI coding-agent CLIs working for hours, unattended.

    Without a command: run the daemon (agentd serve).
    """
    ctx.obj = Paths.resolve(home)
    if ctx.invoked_subcommand is None:
        ctx.invoke(serve)


@main.command()
@click.option("-q", "--quiet", is_flag=True, help="Print only the daemon's own lines.")
@click.option(
    "--http",
    metavar="HOST:PORT",
    envvar="AGENTD_HTTP",
    default=None,
    help="Also serve the web dashboard there (loopback only, e.g. 127.0.0.1:8765).",
)
@click.option(
    "--http-allow-remote",
    is_flag=True,
    envvar="AGENTD_HTTP_ALLOW_REMOTE",
    help="Let --http bind other addresses than loopback (still with the token).",
)
@click.pass_obj
def serve(paths: Paths, quiet: bool, http: str | None, http_allow_remote: bool) -> None:
    """Run the daemon in the foreground (for systemd Type=notify and launchd).

    Loads every unit in the units dir, starts the enabled ones (agentctl
    enable, else autostart) unless a person stopped them or they ended done,
    failed or stalled, and serves agentctl on the control socket. SIGHUP
    reloads the units and reopens the logs; SIGTERM or SIGINT stops every
    session, then exits 0.

    With --http (or AGENTD_HTTP) it also serves a web dashboard; every request
    needs the token in run/http-token: `agentctl dashboard` prints the link.
    """
    from agentd.daemon.serve import serve as serve_daemon

    try:
        bind = None
        if http:
            from agentd.daemon.dashboard.access import Bind

            bind = Bind.parse(http, allow_remote=http_allow_remote)
        code = serve_daemon(paths, console=Console(quiet=quiet), http=bind)
    except AgentdError as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)


@main.command()
@click.argument("unit", shell_complete=complete_units)
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option(
    "-i",
    "--attach",
    is_flag=True,
    help="Show the agent's terminal in yours and pass your keys to it.",
)
@click.pass_obj
def run(paths: Paths, unit: str, quiet: bool, attach: bool) -> None:
    """Supervise one unit (a name in the units dir, or a FILE) in the foreground.

    Ends when the unit is done (exit 0), failed, stalled or stopped (exit 1);
    if not done, names the transcript and shows its last lines. Ctrl-C stops
    the session gracefully; a second Ctrl-C kills it at once. agentctl reaches
    the run from another terminal (status, logs, screen, attach...).

    With -i/--attach the agent runs in your terminal (its size, followed when
    you resize it), every key goes to it (Ctrl-C too) and agentd says only when
    a session starts or ends; Ctrl-] detaches the view, then Ctrl-C stops the run.
    """
    try:
        path = resolve_unit_arg(unit, paths.units)
        loaded = load_unit(path)
        code = run_unit(loaded, paths, console=Console(quiet=quiet), attach=attach)
    except (UnitError, AgentdError) as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)


@main.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list: one object per file.")
@color_option
@click.pass_obj
def check(paths: Paths, files: tuple[Path, ...], as_json: bool, color: str) -> None:
    """Validate unit FILEs and DIRs of them (default: the units dir); exit 1 on errors.

    Every problem of each file, not just the first: what the daemon refuses
    (with file:line: key), and what a session would meet: a command (or a
    completion check) that is not found or not executable (an error, also
    behind a missing workdir), a worktree repository that is not one (an
    error), a bootstrap on the command line that `ps` shows or that may
    outgrow the argument limit (warnings), two units that share a state dir
    or a worktree (an error; units may share a repository, each in its own
    worktree).
    Each file that loads is said ok with its effective command, quoted as a
    shell would. --json: [{file, unit, ok, command, problems: [{level, line,
    key, message}]}].
    """
    import json

    from agentd.cli.agentd import check as checking
    from agentd.cli.colour import Painter, wanted
    from agentd.config.lint import ArgLimits

    found = checking.targets(files, paths.units)
    if not found:
        raise click.ClickException(f"no unit files to check in {paths.units}")
    reports = checking.check_files(found, paths.units, os.environ, ArgLimits.of_this_system())
    if as_json:
        click.echo(json.dumps(checking.as_json(reports), indent=2, ensure_ascii=False))
    else:
        out, err = checking.said(reports, Painter(wanted(color, sys.stderr)))
        for line in err:
            click.echo(line, err=True, color=True)
        for line in out:
            click.echo(line, color=True)
    if not all(r.ok for r in reports):
        sys.exit(1)


@main.command()
@click.option("--keep", is_flag=True, help="Keep the demo's temporary directory.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary table.")
def demo(keep: bool, quiet: bool) -> None:
    """Run the whole loop on a bundled demo agent in a temporary workdir."""
    from agentd.cli.agentd.demo import run_demo

    try:
        sys.exit(run_demo(keep=keep, quiet=quiet))
    except AgentdError as exc:
        raise click.ClickException(str(exc)) from None


if __name__ == "__main__":  # pragma: no cover
    main()
