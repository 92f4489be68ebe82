"""What every ``agentctl`` daemon verb shares: one request to the daemon, unit
name arguments, ``--json`` output, and failures as a message and an exit code.

Exit codes, the same for every verb: 0 ok, 1 failure (the daemon
unreachable, a command that failed), 2 usage error (also an invalid unit
name), 4 an unknown unit (``status`` adds LSB's 3: a named unit not running).

The protocol (``agentd.daemon.protocol``) is imported when a request is
made, not with this module.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import click

from agentd.paths import Paths

if TYPE_CHECKING:
    from agentd.daemon.client import Client


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"agentctl: {message}", err=True)
    sys.exit(code)


def call(cmd: str, *, timeout: float | None = 30.0, **args: Any) -> Any:
    """One request to the daemon; its result, or exit with a message."""
    with connected(cmd, timeout=timeout) as client:
        return client.call(cmd, **args)


@contextlib.contextmanager
def connected(cmd: str, *, timeout: float | None = 30.0) -> Iterator[Client]:
    """A client for the daemon; any failure becomes a message and an exit code."""
    from agentd.daemon.client import Client, RemoteError, Unreachable
    from agentd.errors import PathError

    try:
        paths = Paths.resolve()
        paths.check_socket()
        with Client(paths.socket, timeout=timeout) as client:
            yield client
    except (Unreachable, PathError) as exc:
        fail(str(exc))
    except RemoteError as exc:
        fail(str(exc), exc.code)  # the reply's code is the exit code: 4 an unknown unit
    except TimeoutError:
        fail(f"agentd did not answer {cmd!r} within {timeout:g}s; is it stuck? "
             "(see its log: journalctl --user -u agentd)")
    except OSError as exc:
        fail(f"lost the connection to agentd during {cmd!r}: {exc}")


def unit_names(_ctx: click.Context, _param: click.Parameter, value: Iterable[str]) -> list[str]:
    """click callback: every value a valid unit name, else a usage error."""
    from agentd.daemon.client import check_unit_name

    try:
        return [check_unit_name(v) for v in value]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def unit_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """click callback: an optional unit name, checked as ``unit_names`` does."""
    return None if value is None else unit_names(ctx, param, [value])[0]


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))
