"""Render the bootstrap: the text a fresh session is given (SPEC section 4).

``render(ctx)`` takes values and returns a value; its only I/O is reading the
state files (bounded: tails are read backwards from the end of a file) and a
few short ``git`` calls in the workdir. It never raises for a missing or
malformed state file: the bootstrap says what is wrong instead.

The text, in this order::

    # agentd bootstrap: UNIT, session N      header: why the last session ended,
                                             the state files win over memory
    ## <title of each layout file>           in layout order, within the budget
    ## Warnings                              only when there are any
    ## Changes since the last session        only in a git repo, when HEAD moved
    ## Rules                                 restate, record, hand over

Budget: the header, warnings, changes and rules are always included and are
reserved first; the layout files share what is left, earlier files first
(``agentd.memory.fit``). ``Bootstrap.tokens`` counts everything; it exceeds
``budget_tokens`` only when the always-included parts alone do.

How each kind of file is shown: ``agentd.memory.filekinds``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

from agentd.memory import gitinfo, readonly, statedir
from agentd.memory.context import BootstrapContext
from agentd.memory.decisions import DECISION_LINE
from agentd.memory.filekinds import file_block, shown
from agentd.memory.fit import fit
from agentd.memory.statedir import read_tail_lines
from agentd.tokens import estimate_tokens

__all__ = ["DECISION_LINE", "Bootstrap", "BootstrapContext", "read_tail_lines", "render"]

@dataclass(frozen=True)
class Bootstrap:
    text: str
    tokens: int
    warnings: list[str]
    cut: list[str]  # display paths cut or left out for the budget
    readonly_hashes: dict[str, str]  # layout path -> sha256 of each readonly file now
    head: str | None  # git HEAD now; the caller's next since_commit


def render(ctx: BootstrapContext) -> Bootstrap:
    """The bootstrap for the session ``ctx`` describes (see the module docstring)."""
    warnings: list[str] = []
    blocks = [file_block(ctx, entry, warnings) for entry in ctx.layout]
    recorded = readonly.effective(ctx.state_dir, ctx.readonly_hashes)
    show = partial(shown, ctx.workdir)
    hashes, changed = readonly.check(ctx.state_dir, ctx.layout, recorded, show)
    warnings += changed
    head = statedir.git_head(ctx.workdir)
    if stale := gitinfo.stale(ctx.workdir, ctx.state_dir, head, _dir_shown(ctx)):
        warnings.append(stale)
    if ctx.unchanged_sessions >= 2:
        warnings.append(
            f"no state change across the last {ctx.unchanged_sessions} sessions: "
            f"record progress or a blocker in {_dir_shown(ctx)} before anything else"
        )
    warnings = list(dict.fromkeys(warnings))  # two layout entries may share a file
    fixed_before = [_header(ctx)]
    changes = gitinfo.changes(ctx.workdir, ctx.since_commit, head)
    fixed_after = [s for s in (_warnings_section(warnings), changes) if s]
    fixed_after.append(_rules(ctx))
    reserved = sum(estimate_tokens(s) + 1 for s in fixed_before + fixed_after)
    files_budget = ctx.budget_tokens - reserved
    # Block costs are summed from estimates of the pieces, which can only
    # overestimate; the loop corrects the rare overshoot (the left-out line).
    for _ in range(5):
        sections, cut = fit(blocks, files_budget)
        text = "\n\n".join(fixed_before + sections + fixed_after) + "\n"
        over = estimate_tokens(text) - ctx.budget_tokens
        if over <= 0 or files_budget <= 0:
            break
        files_budget -= over
    return Bootstrap(text, estimate_tokens(text), warnings, cut, hashes, head)


# --- the fixed parts ----------------------------------------------------------


def _header(ctx: BootstrapContext) -> str:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ctx.now))
    if ctx.last_reason is None:
        why = (
            "This is the first session: no session ran before it."
            if ctx.session <= 1
            else "Why the previous session ended is not known."
        )
    else:
        why = f"The previous session ended: `{ctx.last_reason}` ({_explain(ctx.last_reason)})."
    return (
        f"# agentd bootstrap: {ctx.unit}, session {ctx.session}\n\n"
        f"Started {started}. {why} You remember nothing of earlier sessions; "
        f"the state files in `{_dir_shown(ctx)}` are your memory. Where they disagree "
        "with anything you remember from a conversation, the files win."
    )


def _explain(reason: str) -> str:
    kind, _, arg = reason.partition(":")
    fixed = {
        "exit:42": "the agent asked for a fresh session",
        "context": "its context was nearly full",
        "timeout": "it ran past its time limit",
        "idle": "it printed nothing for too long",
        "manual": "it was restarted by hand",
        "sentinel:compaction": "its context was being compacted",
    }
    if reason in fixed:
        return fixed[reason]
    by_kind = {
        "exit": f"it exited with code {arg}",
        "signal": f"it was ended by signal {arg}",
        "sentinel": f"its output matched the sentinel {arg!r}",
    }
    return by_kind.get(kind, "as recorded by agentd")


def _rules(ctx: BootstrapContext) -> str:
    return (
        "## Rules\n\n"
        "1. Before acting, restate the mission and the next action in under 50 words.\n"
        "2. The next session knows only what is on disk. After each step record it: "
        '`agentctl state done "TEXT" --verified "HOW"`, `agentctl state next "TEXT"`, '
        '`agentctl state decide "TEXT" --why "TEXT" --files PATH`, '
        f'`agentctl state block "TEXT"` - or edit the files in `{_dir_shown(ctx)}`.\n'
        '3. To hand over to a fresh session: `agentctl state handoff "TEXT"`, then exit '
        'with code 42 (or run `agentctl restart "$AGENTD_UNIT"`).'
    )


def _warnings_section(warnings: list[str]) -> str:
    if not warnings:
        return ""
    return "## Warnings\n\n" + "\n".join(f"- {w}" for w in warnings)


# --- paths ---------------------------------------------------------------------------


def _dir_shown(ctx: BootstrapContext) -> str:
    return shown(ctx.workdir, ctx.state_dir).rstrip("/") + "/"
