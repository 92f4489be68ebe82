"""The click parameters the ``agentctl`` daemon verbs share: unit names (checked as
the daemon checks them) and ``--json``."""

from __future__ import annotations

from collections.abc import Iterable

import click


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
