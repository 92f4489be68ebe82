"""``agentctl state [--dir DIR] VERB``: the agent's memory, without the daemon.

The state dir is ``--dir`` (before or after the verb), else
``$AGENTD_STATE_DIR`` (set for every agent session), else ``./.agent``. Exit
codes: 0 ok, 1 failure (the message on stderr says what was wrong and what to
do), 2 usage error.

Agents run the write verbs after every step, so this module imports only what
they need; ``init``, ``show``, ``check`` and ``archive`` import their own
machinery (templates, the bootstrap renderer, the checker) when they run.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from agentd.cli.agentctl.statefast import decision, record_decision, record_text
from agentd.errors import AgentdError
from agentd.memory.layout import preset_names
from agentd.memory.verbs import record as stateverbs
from agentd.memory.verbs.ops import StateDir, open_dir

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_BUDGET = 3000
ALL_BUDGET = 10**9  # `show --all`: no budget to speak of


def _failures(fn: F) -> F:
    """AgentdError -> exit 1 with its message; ValueError -> usage error (exit 2)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AgentdError as e:
            raise click.ClickException(str(e)) from None
        except ValueError as e:
            raise click.UsageError(str(e)) from None

    return wrapper  # type: ignore[return-value]


def _text(value: str, what: str = "TEXT") -> str:
    text = value.strip()
    if not text:
        raise click.BadParameter("must not be empty", param_hint=what)
    return text


class _DirAfterVerb(click.Group):
    """Every verb also takes ``--dir`` after its name (``state next TEXT --dir D``)."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.params.append(
            click.Option(
                ["--dir", "state_dir"],
                type=click.Path(file_okay=False, path_type=Path),
                expose_value=False,
                callback=_set_dir,
                help="The state dir (as before the verb).",
            )
        )
        super().add_command(cmd, name)


def _set_dir(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.obj = value


@click.group("state", cls=_DirAfterVerb)
@click.option(
    "--dir",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="AGENTD_STATE_DIR",
    default=Path(".agent"),
    show_default=True,
    help="The state dir (default: $AGENTD_STATE_DIR, else ./.agent).",
)
@click.pass_context
def state(ctx: click.Context, state_dir: Path) -> None:
    """Read and record an agent's state files (works without the daemon)."""
    ctx.obj = state_dir


def _open(ctx: click.Context) -> StateDir:
    return open_dir(ctx.obj)


@state.command()
@click.option(
    "--layout",
    "layout",
    type=click.Choice(preset_names()),
    default=None,
    help="The layout (default: the one recorded, else $AGENTD_LAYOUT, else the "
    "one whose files are there, else agentd).",
)
@click.pass_context
@_failures
def init(ctx: click.Context, layout: str | None) -> None:
    """Create the layout's state files; never overwrites an existing file."""
    from agentd.memory.verbs import init as stateinit

    for line in stateinit.init(ctx.obj, layout):
        click.echo(line)


@state.command()
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Token budget of the bootstrap.",
)
@click.option("--unit", default=None, help="Unit name for the header (default: $AGENTD_UNIT).")
@click.option(
    "--explain",
    is_flag=True,
    help="Instead of the text: per file, tokens shown of its total, what was cut and why.",
)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Everything, without the budget, and the handoffs already shown.",
)
@click.pass_context
@_failures
def show(ctx: click.Context, budget: int, unit: str | None, explain: bool, show_all: bool) -> None:
    """Print the bootstrap a fresh session would get from this state dir."""
    from agentd.memory.bootstrap import render as bootstrap
    from agentd.memory.verbs import handoffs

    sd = _open(ctx)
    workdir = sd.workdir.resolve()
    context = bootstrap.BootstrapContext(
        unit=unit or os.environ.get("AGENTD_UNIT") or workdir.name or "agent",
        session=_session(),
        last_reason=None,
        state_dir=sd.path.resolve(),
        workdir=workdir,
        layout=sd.layout.files,
        budget_tokens=ALL_BUDGET if show_all else budget,
        now=time.time(),
    )
    boot = bootstrap.render(context)
    if explain:
        click.echo(explained(boot))
        return
    click.echo(boot.text, nl=False)
    if show_all and (past := handoffs.history(sd.path).strip()):
        click.echo(f"\n# Handoffs already shown ({sd.path / handoffs.HISTORY})\n\n{past}")


def explained(boot: Any) -> str:
    """``boot.account`` as a table: one row per part, then the total."""
    rows = [("PART", "KEEP", "SHOWN", "TOTAL", "WHAT WAS CUT, AND WHY")]
    for row in boot.account:
        rows.append(
            (
                row.name,
                row.keep,
                str(row.tokens),
                str(round(row.total)),
                "; ".join(row.notes) or "-",
            )
        )
    shown = sum(row.tokens for row in boot.account)
    cut = f"not shown in full: {', '.join(boot.cut)}" if boot.cut else "-"
    rows.append(("total", "", str(shown), f"budget {boot.budget}", cut))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4]
        for r in rows
    )


def _session() -> int:
    value = os.environ.get("AGENTD_SESSION", "")
    return int(value) + 1 if value.isdigit() else 1


@state.command()
@click.pass_context
@_failures
def check(ctx: click.Context) -> None:
    """Validate the state files; exit 1 listing every problem with file and line.

    Warnings (where a record written by hand was read with a guess) and notes
    are printed too, but do not fail it."""
    from agentd.memory.verbs import check as statecheck

    sd = _open(ctx)
    problems, notes, warnings = statecheck.check(sd)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    for problem in problems:
        click.echo(str(problem))
    if problems:
        click.echo(
            f"{len(problems)} problem(s) in {sd.path} (layout {sd.layout.name}): fix "
            "the lines named above, then run `agentctl state check` again",
            err=True,
        )
        sys.exit(1)
    click.echo(f"ok: {sd.path} (layout {sd.layout.name})")


@state.command()
@click.argument("text")
@click.option("--why", required=True, help='The reason: "because ... so ...".')
@click.option(
    "--files",
    "files",
    multiple=True,
    metavar="PATH",
    help="A file the decision affects (repeat for more).",
)
@click.option("--alt", default="", help="Alternatives considered and why they lost.")
@click.option("--tag", default="", help="A tag: arch, naming, deps, gotcha ...")
@click.pass_context
@_failures
def decide(
    ctx: click.Context, text: str, why: str, files: tuple[str, ...], alt: str, tag: str
) -> None:
    """Record a decision (one decisions.log line) and a snapshot of the files it affects."""
    now = time.time()
    d = decision(_text(text), _text(why, "--why"), files, alt, tag, now)  # a usage error first
    click.echo(record_decision(_open(ctx), d, files, now))


def _verb(name: str, help_text: str) -> None:
    @state.command(name, help=help_text)
    @click.argument("text")
    @click.pass_context
    @_failures
    def command(ctx: click.Context, text: str) -> None:
        click.echo(record_text(_open(ctx), name, _text(text)))


_verb("mission", "Set the mission: what the whole run is for (clears a completion mark).")
_verb("task", "Set the current task.")
_verb("next", "Set the next action.")
_verb("block", "Record a blocker.")
_verb("handoff", "Leave a dated note for the next session (shown to it once).")


@state.command()
@click.argument("summary")
@click.pass_context
@_failures
def complete(ctx: click.Context, summary: str) -> None:
    """Mark the mission complete: when the session ends, the unit ends `done`."""
    click.echo(stateverbs.mark_complete(_open(ctx), _text(summary, "SUMMARY"), time.time()))


@state.command()
@click.argument("text")
@click.option(
    "--verified",
    default=None,
    metavar="HOW",
    help="How it was verified (a command and its result); without it the step is shown as pending.",
)
@click.pass_context
@_failures
def done(ctx: click.Context, text: str, verified: str | None) -> None:
    """Record a completed step."""
    click.echo(record_text(_open(ctx), "done", _text(text), verified))


@state.command("archive")
@click.pass_context
@_failures
def archive_cmd(ctx: click.Context) -> None:
    """Move old decisions (epochs of 50), snapshots and done steps out of the state."""
    from agentd.memory.verbs import archive as archive_mod

    for line in archive_mod.archive(_open(ctx), time.time()):
        click.echo(line)
