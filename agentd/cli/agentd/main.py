"""``agentd``: the daemon, and running and checking units (docs/commands.md).

``agentd serve`` (also bare ``agentd``) is the daemon (``agentd.daemon.serve``);
``agentd run`` supervises one unit in the foreground on the same supervisor
the daemon uses; ``agentd check`` validates unit files like ``nginx -t``;
``agentd demo`` shows the whole loop on a bundled demo agent.

Each command imports what it uses when it runs (``check`` the unit schema,
``run`` and ``serve`` the supervisor, ``--http`` aiohttp), so that a verb
loads only its own; ``agentd --version`` does not even load click
(``agentd.cli.agentd.script``, the console script).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from agentd import __version__, exitcodes
from agentd.cli.agentctl.params import complete_units
from agentd.cli.common import OneLineErrors, color_option
from agentd.errors import AgentdError, PathError, UnitError
from agentd.paths import Paths


def _daemon_imports() -> None:
    """Before the daemon's modules: asyncio without ssl, hashlib and hmac without
    OpenSSL. asyncio imports ssl (OpenSSL: about 5 MiB and 20 ms) only to offer TLS;
    the daemon speaks none (its control socket is a UNIX socket, its dashboard plain
    HTTP on loopback). hashlib and hmac (pydantic imports them, through secrets) load
    OpenSSL's libcrypto (3.4 MiB) for digests Python has built in: SHA-256 of a lock
    file's name, the dashboard's HMAC. Nothing changes where asyncio is loaded
    already; ssl can still be imported later."""
    if "asyncio" in sys.modules:
        return
    blocked = [name for name in ("ssl", "_hashlib") if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # "import ssl" fails: not there
    try:
        import asyncio  # noqa: F401
        import hashlib  # noqa: F401
        import hmac  # noqa: F401
    finally:
        for name in blocked:
            del sys.modules[name]


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
    _daemon_imports()
    from agentd.console import Console
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
@click.option("--again", is_flag=True, help="Run a unit that is done already again.")
@click.pass_obj
def run(paths: Paths, unit: str, quiet: bool, attach: bool, again: bool) -> None:
    """Supervise one unit (a name in the units dir, or a FILE) in the foreground.

    Runs until the unit settles; the exit status says how, for whoever runs
    it (a shell, systemd, a Kubernetes Job, a Slurm batch script): 0 done (a
    unit that is done already exits 0 at once, unless --again); 1 failed,
    stalled or stopped, or another agentd runs it or its state dir; 75
    interrupted: SIGTERM, SIGINT or SIGHUP stopped it gracefully, its state
    is saved and the next run carries on (EX_TEMPFAIL); 78 the unit file does
    not load, or its command cannot be executed (EX_CONFIG).

    If not done, it names the transcript and shows its last lines. A second
    signal kills the session at once. On exit it writes one line of JSON (unit,
    state, reason, sessions, restarts, exit_code) to $AGENTD_TERMINATION_LOG,
    else to /dev/termination-log where that is writable (Kubernetes shows it).
    agentctl reaches the run from another terminal (status, logs, screen,
    attach...).

    With -i/--attach the agent runs in your terminal (its size, followed when
    you resize it), every key goes to it (Ctrl-C too) and agentd says only when
    a session starts or ends; Ctrl-] detaches the view, then Ctrl-C stops the run.
    """
    _daemon_imports()
    from agentd.cli.agentd.run import run_unit
    from agentd.config.unitfile import load_unit, resolve_unit_arg
    from agentd.console import Console

    try:
        path = resolve_unit_arg(unit, paths.units)
        loaded = load_unit(path)
    except UnitError as exc:
        _refused(unit, "invalid", exc)
    try:
        code = run_unit(loaded, paths, console=Console(quiet=quiet), attach=attach, again=again)
    except PathError as exc:  # agentd's home cannot be used: a configuration to fix
        _refused(loaded.name, "stopped", exc)
    except AgentdError as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)


class _ConfigError(click.ClickException):
    """A one-line error that a change of configuration fixes: exit 78 (EX_CONFIG)."""

    exit_code = exitcodes.CONFIG


def _refused(arg: str, state: str, exc: AgentdError) -> NoReturn:
    """The unit does not load (``state`` invalid) or agentd's home cannot be used: say
    why, write the termination message and exit 78."""
    from agentd.cli.agentd import termination

    name = Path(arg).stem if arg.endswith((".yaml", ".yml")) else arg
    ending = termination.Ending(name, state, state, 0, 0, exitcodes.CONFIG, str(exc))
    problem = termination.write(ending)
    if problem:
        click.echo(f"agentd: {problem}", err=True)
    raise _ConfigError(str(exc))


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
    from agentd.cli.agentd import check as checking

    try:
        code = checking.run(files, paths.units, as_json, color, _echo)
    except checking.NothingToCheck as exc:
        raise click.ClickException(str(exc)) from None
    if code:
        sys.exit(code)


def _echo(line: str, err: bool) -> None:
    click.echo(line, err=err, color=True)


@main.command()
@click.option("--keep", is_flag=True, help="Keep the demo's temporary directory.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary table.")
def demo(keep: bool, quiet: bool) -> None:
    """Run the whole loop on a bundled demo agent in a temporary workdir."""
    _daemon_imports()
    from agentd.cli.agentd.demo import run_demo

    try:
        sys.exit(run_demo(keep=keep, quiet=quiet))
    except AgentdError as exc:
        raise click.ClickException(str(exc)) from None


if __name__ == "__main__":  # pragma: no cover
    main()
