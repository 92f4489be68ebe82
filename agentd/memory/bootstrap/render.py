"""Render the bootstrap: the text a fresh session is given.

``render(ctx)`` takes values and returns a value; its only I/O is reading the
state files (bounded: tails are read backwards from the end of a file) and a
few short ``git`` calls in the workdir. It never raises for a missing or
malformed state file: the bootstrap says what is wrong instead.

The text, in this order::

    # agentd bootstrap: UNIT, session N      header: why the last session ended,
                                             the state files win over memory
    ## The claimed completion failed ...     only after a refused completion: first
    ## <title of each layout file>           in layout order, within the budget
    ## Warnings                              only when there are any
    ## Changes since the last session        only in a git repo, when HEAD moved
    ## Rules                                 restate, record, hand over, complete

Budget: the header, warnings, changes and rules are always included and are
reserved first; the layout files share what is left by priority - must-keep
facts, then the newest records, then free text (``agentd.memory.bootstrap.fit``).
``Bootstrap.tokens`` counts everything; it exceeds ``budget_tokens`` only when
the always-included parts alone do. ``Bootstrap.account`` says where every
token went, one row per part, adding up to ``tokens`` exactly.

How each kind of file is shown: ``agentd.memory.bootstrap.kinds``.

What it is rendered from is one value, ``BootstrapContext``, built by the caller.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from agentd.memory import gitinfo
from agentd.memory.bootstrap.escapes import escape_controls, escape_lines
from agentd.memory.bootstrap.fit import FileAccount, Fitted, fit, must_cost
from agentd.memory.bootstrap.kinds import file_block, shown
from agentd.memory.bootstrap.parts import Block
from agentd.memory.bootstrap.refusal import Refusal, refusal_block
from agentd.memory.formats import complete, readonly
from agentd.memory.layout import LayoutFile
from agentd.reasons import Reason
from agentd.tokens import estimate_tokens


@dataclass(frozen=True)
class BootstrapContext:
    unit: str
    session: int  # the session about to start (1-based)
    last_reason: str | None  # why the previous session ended; None for the first
    state_dir: Path  # absolute
    workdir: Path
    layout: Sequence[LayoutFile]
    budget_tokens: int
    now: float  # epoch seconds
    readonly_hashes: Mapping[str, str] = field(default_factory=dict)  # layout path -> sha256
    since_commit: str | None = None  # git HEAD at the previous session's start
    unchanged_sessions: int = 0  # sessions in a row that left the state dir unchanged
    verify: str | None = None  # the unit's completion check (``complete.verify``), shown
    refusal: Refusal | None = None  # the previous session's completion, refused by it


@dataclass(frozen=True)
class Bootstrap:
    text: str
    tokens: int
    warnings: list[str]
    cut: list[str]  # display paths cut or left out for the budget
    readonly_hashes: dict[str, str]  # layout path -> sha256 of each readonly file now
    head: str | None  # git HEAD now; the caller's next since_commit
    account: list[FileAccount] = field(default_factory=list)  # where the tokens went
    budget: int = 0

    def explain(self) -> list[dict[str, object]]:
        """``account`` as JSON-able rows (``state show --explain``, ``session.bootstrap``)."""
        return [row.as_dict() for row in self.account]


def render(ctx: BootstrapContext) -> Bootstrap:
    """The bootstrap for the session ``ctx`` describes (see the module docstring)."""
    warnings: list[str] = []
    blocks = [b for entry in ctx.layout if (b := file_block(ctx, entry, warnings)) is not None]
    if ctx.refusal is not None:  # the first must-keep section
        blocks.insert(0, refusal_block(ctx.refusal))
    recorded = readonly.effective(ctx.state_dir, ctx.readonly_hashes)
    show = partial(shown, ctx.workdir)
    hashes, changed = readonly.check(ctx.state_dir, ctx.layout, recorded, show)
    warnings += changed
    head = gitinfo.git_head(ctx.workdir)
    if stale := gitinfo.stale(ctx.workdir, ctx.state_dir, head, _dir_shown(ctx)):
        warnings.append(stale)
    if ctx.unchanged_sessions >= 2:
        warnings.append(
            f"no state change across the last {ctx.unchanged_sessions} sessions: "
            f"record progress or a blocker in {_dir_shown(ctx)} before anything else"
        )
    warnings = list(dict.fromkeys(warnings))  # two layout entries may share a file
    header = _header(ctx, complete.read(ctx.state_dir))
    changes = gitinfo.changes(ctx.workdir, ctx.since_commit, head)
    # the files' blocks are escaped as read; the rest may quote a reason, a commit, a name
    escape_lines(warnings)
    fixed = _Fixed(escape_controls(header)[0], warnings, escape_controls(changes)[0], _rules(ctx))
    need = must_cost(blocks)
    if need > ctx.budget_tokens - fixed.reserved():
        warnings.append(
            f"the must-keep state needs about {round(need)} tokens, more than the "
            f"{max(ctx.budget_tokens - fixed.reserved(), 0)} the budget leaves for files: it "
            "is cut (marked) and nothing of lower priority is shown; shorten the must-keep "
            "files or raise state.budget_tokens"
        )
    text, parts, fitted = _within_budget(blocks, fixed, ctx.budget_tokens)
    return Bootstrap(
        text,
        estimate_tokens(text),
        warnings,
        fitted.cut,
        hashes,
        head,
        _counted(parts),
        ctx.budget_tokens,
    )


def unavailable(ctx: BootstrapContext, why: str) -> Bootstrap:
    """The bootstrap when the state dir cannot be read (in time): the header, a
    warning saying so, the rules. Reads nothing."""
    warnings = [f"{why}: read the state files in {_dir_shown(ctx)} yourself before anything else"]
    escape_lines(warnings)
    fixed = _Fixed(escape_controls(_header(ctx, None))[0], warnings, "", _rules(ctx))
    blocks = [refusal_block(ctx.refusal)] if ctx.refusal is not None else []
    text, parts, _ = _within_budget(blocks, fixed, ctx.budget_tokens)
    return Bootstrap(
        text, estimate_tokens(text), warnings, [], {}, None, _counted(parts), ctx.budget_tokens
    )


@dataclass(frozen=True)
class _Fixed:
    """The parts always shown, around the files."""

    header: str
    warnings: list[str]
    changes: str
    rules: str

    def reserved(self) -> int:
        fixed = [self.header, _warnings_section(self.warnings), self.changes, self.rules]
        return sum(estimate_tokens(s) + 1 for s in fixed if s)

    def around(
        self, sections: list[tuple[str | None, FileAccount]]
    ) -> list[tuple[str | None, FileAccount]]:
        parts: list[tuple[str | None, FileAccount]] = [(self.header, _fixed("header"))]
        parts += sections
        if section := _warnings_section(self.warnings):
            parts.append((section, _fixed("warnings")))
        if self.changes:
            parts.append((self.changes, _fixed("changes")))
        return [*parts, (self.rules, _fixed("rules"))]


def _fixed(name: str) -> FileAccount:
    return FileAccount(name, "fixed", 0)


def _within_budget(
    blocks: list[Block], fixed: _Fixed, budget: int
) -> tuple[str, list[tuple[str | None, FileAccount]], Fitted]:
    """The text of ``blocks`` fitted between the fixed parts, within ``budget``.

    Costs are fractional estimates per line, which can round below the
    estimate of the whole text, and the left-out line is not costed: the
    loop corrects the rare overshoot, in growing steps (an item is bigger)."""
    files_budget = budget - fixed.reserved()
    step = 0
    while True:
        fitted = fit(blocks, files_budget)
        parts = fixed.around(fitted.sections)
        text = "\n\n".join(p for p, _ in parts if p is not None) + "\n"
        over = estimate_tokens(text) - budget
        if over <= 0 or files_budget <= 0 or step > budget:
            return text, parts, fitted
        step = max(over, 2 * step)
        files_budget -= step


def _counted(parts: list[tuple[str | None, FileAccount]]) -> list[FileAccount]:
    """Each part's tokens in the joined text: the growth of the estimate of
    the text up to its end, so that the rows add up to the whole exactly
    (a part left out counts 0)."""
    shown = [p for p, _ in parts if p is not None]
    before, text, k = 0, "", 0
    for section, row in parts:
        if section is None:
            continue
        k += 1
        text += section + ("\n\n" if k < len(shown) else "\n")
        now = estimate_tokens(text)
        row.tokens, before = now - before, now
        if row.keep == "fixed":
            row.total = row.tokens
    return [row for _, row in parts]


# --- the fixed parts ----------------------------------------------------------


def _header(ctx: BootstrapContext, done: complete.Completion | None) -> str:
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
        + (
            f"\n\n**The mission is marked complete** ({done.at}): {done.summary} - if nothing "
            "is left to do, exit; a new mission (`agentctl state mission`) clears the mark."
            if done
            else ""
        )
    )


def _explain(reason: str) -> str:
    parsed = Reason.parse(reason)
    kind, arg = parsed.kind, parsed.arg
    fixed = {
        "exit:42": "the agent asked for a fresh session",
        "context": "its context was nearly full",
        "timeout": "it ran past its time limit",
        "idle": "it printed nothing for too long",
        "manual": "it was restarted by hand",
        "sentinel:compaction": "its context was being compacted",
        "complete": "the mission was marked complete",
        "verify-failed": "its claimed completion failed verification",
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
        'with code 42 (or run `agentctl restart "$AGENTD_UNIT"`).\n'
        '4. When the whole mission is done and verified: `agentctl state complete "RESULT"`, '
        "then exit: agentd ends the unit `done`, whatever your exit code"
        + (
            f" - once its check `{ctx.verify}` passes; if it fails, the next session is "
            "told why. Run it yourself before you claim completion."
            if ctx.verify
            else "."
        )
    )


def _warnings_section(warnings: list[str]) -> str:
    if not warnings:
        return ""
    return "## Warnings\n\n" + "\n".join(f"- {w}" for w in warnings)


# --- paths ---------------------------------------------------------------------------


def _dir_shown(ctx: BootstrapContext) -> str:
    return shown(ctx.workdir, ctx.state_dir).rstrip("/") + "/"
