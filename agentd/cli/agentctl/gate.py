"""``agentctl verify|worktree UNIT``: a unit's completion check, run by hand, and its
git worktree.

Both ask whoever supervises the unit (its ``agentd run``, else the daemon), so
the check runs as the gate runs it (its environment, timeout, whole tree
ended, output with the unit's secrets hidden) and its result shows in
``status`` and the events (``unit.verify``, ``manual``). When no agentd
answers they work from the unit file in the units dir, here.

``verify`` prints the end of the check's output and one line saying how it
ended; exit 0 when it passed, 1 when it failed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from agentd.cli.agentctl.client import call, fail, print_json
from agentd.cli.agentctl.params import json_option, unit_name
from agentd.paths import Paths

if TYPE_CHECKING:
    from agentd.config.unit import Unit

SHOWN_LINES = 40  # of the check's output, printed by verify


@click.command()
@click.argument("unit", callback=unit_name)
@json_option
def verify(unit: str, as_json: bool) -> None:
    """Run UNIT's completion check (complete.verify) now, in its workdir.

    Prints the end of its output and how it ended; exit 0 when it passed, 1
    when it failed. It changes nothing: a completion is refused or accepted
    only when a session ends.
    """
    if not as_json:
        click.echo(f"agentctl: running the check of {unit}...", err=True)
    result = call("verify", timeout=None, unit=unit, offline=lambda why: _verify_here(why, unit))
    if as_json:
        print_json(result)
    else:
        output = result.get("output") or ""
        lines = output.rstrip("\n").split("\n")
        if output.strip():
            if len(lines) > SHOWN_LINES:
                click.echo(f"[... {len(lines) - SHOWN_LINES} earlier lines]")
            click.echo("\n".join(lines[-SHOWN_LINES:]))
        verdict = "passed" if result["ok"] else "FAILED"
        click.echo(
            f"{unit}: check {verdict}: `{result['command']}` {result['said']} "
            f"({result['duration_s']:g}s)"
        )
    if not result["ok"]:
        sys.exit(1)


@click.command()
@click.argument("unit", callback=unit_name)
@json_option
def worktree(unit: str, as_json: bool) -> None:
    """Show UNIT's git worktree: its path, branch, base and how far it is ahead."""
    result = call("worktree", unit=unit, offline=lambda why: _worktree_here(why, unit))
    if as_json:
        print_json(result)
        return
    ahead = "-" if result["ahead"] is None else str(result["ahead"])
    if result["ahead"] is not None and result.get("behind"):
        ahead += f" (behind {result['behind']})"
    rows = [
        ("path", result["path"] + ("" if result["exists"] else "  (not made yet)")),
        ("branch", result["branch"]),
        ("base", result["base"] or "-"),
        ("ahead", ahead),
    ]
    for key, value in rows:
        click.echo(f"{key:<7} {value}")


def _unit(unit: str, why: str) -> Unit:
    from agentd.config.unitfile import load_unit, resolve_unit_arg
    from agentd.errors import UnitError

    try:
        return load_unit(resolve_unit_arg(unit, Paths.resolve().units))
    except UnitError as exc:
        fail(f"{why}; and its unit file: {exc}")


def _verify_here(why: str, name: str) -> dict[str, Any]:
    """No agentd answers: run the check here, from the unit file."""
    from agentd.session.redact import Redactor, secrets_from_env
    from agentd.supervisor import verify as gate

    unit = _unit(name, why)
    if unit.complete is None:
        fail(f"{name} has no completion check: give it complete: {{verify: COMMAND}}")
    click.echo("agentctl: no agentd answers; running the check here", err=True)
    env = {**os.environ, **unit.env}
    redactor = Redactor(secrets_from_env(env), unit.secret_patterns)
    spec = unit.complete
    verdict = asyncio.run(gate.check(unit, spec, base_env=os.environ, redactor=redactor, session=0))
    return verdict.as_json()


def _worktree_here(why: str, name: str) -> dict[str, Any]:
    """No agentd answers: ask git here, from the unit file."""
    from agentd.supervisor.worktree import Git, describe

    unit = _unit(name, why)
    if unit.worktree is None:
        fail(f"{name} has no worktree: give it worktree: {{repo, branch}}")
    return asyncio.run(describe(unit.worktree, Git()))
