"""The click parameters the ``agentctl`` daemon verbs share: unit names (checked as
the daemon checks them, completed from the units dir), ``--json`` and ``--color``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import click

from agentd.cli.common import color_option

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

__all__ = ["color_option", "complete_units", "json_option", "unit_name", "unit_names"]


def unit_names(_ctx: click.Context, _param: click.Parameter, value: Iterable[str]) -> list[str]:
    """click callback: every value a valid unit name, else a usage error."""
    from agentd.daemon.control.protocol import check_unit_name

    try:
        return [check_unit_name(v) for v in value]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def unit_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """click callback: an optional unit name, checked as ``unit_names`` does."""
    return None if value is None else unit_names(ctx, param, [value])[0]


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def complete_units(
    _ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Shell completion of unit names: the unit files in the units dir, and the units
    of the ``agentd run``s (their sockets); no daemon is asked (a tab must not hang)."""
    from click.shell_completion import CompletionItem

    from agentd.paths import Paths

    if "/" in incomplete:  # a unit file's path (agentd run ./x.yaml): the shell's own
        return [CompletionItem(incomplete, type="file")]
    paths = Paths.resolve()
    names = {
        p.stem
        for pattern in ("*.yaml", "*.yml")
        for p in paths.units.glob(pattern)
        if not p.name.startswith(".")
    }
    names |= {p.stem for p in (paths.run / "units").glob("*.sock")}
    return [CompletionItem(name) for name in sorted(names) if name.startswith(incomplete)]
