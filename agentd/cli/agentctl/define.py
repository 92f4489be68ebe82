"""``agentctl cat|show``: a unit's definition, as ``systemctl cat`` and ``systemctl
show`` (or ``pm2 describe``) give it.

``cat`` prints the unit file as written, then the preset file it names, each
under a ``# PATH`` line. ``show`` prints the effective unit: the preset merged
in, every default filled in and ``$VARS`` expanded, as YAML (``--json``: the
same as JSON); durations are seconds. Both ask whoever supervises the unit
(its ``agentd run``, else the daemon: the definition it really uses); when no
agentd answers they read the units dir, saying so.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from agentd.cli.agentctl.client import call, fail, print_json
from agentd.cli.agentctl.params import complete_units, json_option, unit_name


@click.command()
@click.argument("unit", callback=unit_name, shell_complete=complete_units)
def cat(unit: str) -> None:
    """Print UNIT's file as written, and the preset file it names."""
    found = _definition(unit)
    for i, (label, path) in enumerate(
        [("", found["file"]), (f"preset {found['preset']}: ", found["preset_file"])]
    ):
        if path is None:
            continue
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            fail(f"cannot read {path}: {exc.strerror or exc}")
        click.echo(("\n" if i else "") + f"# {label}{path}")
        click.echo(text, nl=not text.endswith("\n"))


@click.command()
@click.argument("unit", callback=unit_name, shell_complete=complete_units)
@json_option
def show(unit: str, as_json: bool) -> None:
    """Print UNIT as agentd runs it: after its preset and defaults, as YAML.

    Every key with its value in effect (durations in seconds, the stop signal
    by name), `$VARS` and `~` expanded. --json: the same as JSON.
    """
    found = _definition(unit)
    if found.get("effective") is None:
        fail(str(found.get("invalid") or f"{unit}: no definition"))
    if as_json:
        print_json(found["effective"])
        return
    import yaml

    origin = found["file"] or "no file"
    if found.get("preset"):
        origin += f" over preset {found['preset']}"
    click.echo(f"# {unit}: the effective unit ({origin}, with the defaults)")
    click.echo(
        yaml.safe_dump(found["effective"], sort_keys=False, allow_unicode=True, width=100),
        nl=False,
    )


def _definition(unit: str) -> dict[str, Any]:
    """The ``unit`` command's answer, or the same read from the units dir when no agentd
    answers."""
    result: dict[str, Any] = call("unit", unit=unit, offline=lambda why: _offline(why, unit))
    return result


def _offline(why: str, unit: str) -> dict[str, Any]:
    from agentd.config.shown import effective
    from agentd.config.unitfile import load_unit, resolve_unit_arg
    from agentd.errors import UnitError
    from agentd.paths import Paths

    try:
        path = resolve_unit_arg(unit, Paths.resolve().units)
        print(f"agentctl: no agentd answers; read {path}", file=sys.stderr)
        return effective(load_unit(path))
    except UnitError as exc:
        fail(f"{why}; and {exc}")
