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
reserved first; the layout files share what is left, earlier files first. A
file that does not fit whole is cut at a line boundary with the marker
``[... cut for the token budget: read PATH for the rest]`` (tails keep their
newest lines and lose their oldest); files that do not fit at all are named on
one ``[left out for the token budget: ...]`` line. ``Bootstrap.tokens`` counts
everything; it exceeds ``budget_tokens`` only when the always-included parts
alone do.

Decision-log grammar (one decision per line; blank lines are ignored)::

    [YYYY-MM-DD HH:MM] [TAG] decision: D | why: W | files: F | snapshot: S | alternatives: A

as the regex ``DECISION_LINE``: ``[TAG]`` may be ``[]`` or left out,
``| alternatives: ...`` may be empty or left out; decision, why, files and
snapshot must be non-empty (write ``-`` for none); spaces around ``|`` are
free; the timestamp must be a real date and time. A line that does not match
is shown as it is and warned about with its line number (counted from the
start of the file when that is cheap, else from the end, and then says so).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from agentd import statedir
from agentd.layout import LayoutFile
from agentd.statedir import read_tail_lines
from agentd.tokens import estimate_tokens

__all__ = ["DECISION_LINE", "Bootstrap", "BootstrapContext", "read_tail_lines", "render"]

DECISION_LINE = re.compile(
    r"""^\[(?P<at>\d{4}-\d{2}-\d{2}\ \d{2}:\d{2})\]
    (?:\s*\[(?P<tag>[^\]]*)\])?
    \s*decision:\s*(?P<decision>\S.*?)
    \s*\|\s*why:\s*(?P<why>\S.*?)
    \s*\|\s*files:\s*(?P<files>\S.*?)
    \s*\|\s*snapshot:\s*(?P<snapshot>\S.*?)
    (?:\s*\|\s*alternatives:\s*(?P<alternatives>.*?))?
    \s*$""",
    re.VERBOSE,
)
DECISION_FORM = (
    "[YYYY-MM-DD HH:MM] [tag] decision: ... | why: ... | files: ... | snapshot: ... "
    "| alternatives: ..."
)
DEFAULT_LOG_TAIL = 10
SHOWN_ITEMS = 10  # completed steps and key decisions: the newest ten
MAX_JSON_BYTES = 4 << 20  # a state.json bigger than this is not read whole
MAX_SECTION_BYTES = 4 << 20
COUNT_LINES_LIMIT = 4 << 20  # true line numbers only while counting them is cheap
MIN_BODY_TOKENS = 8  # less room than this: leave the file out rather than show a stub
STALE_GRACE_S = 60  # the agent updates the state, then commits: not stale
_LEFT_OUT = "[left out for the token budget: read {paths}]"
_CUT = "[... cut for the token budget: read {path} for the rest]"
_KNOWN_STATE_KEYS = frozenset(
    {"schema_version", "mission", "task", "phase", "next_action", "completed_steps"}
    | {"blockers", "constraints", "key_decisions", "handoff", "updated_at"}
)


_Warn: TypeAlias = Callable[[str], None]
_Item: TypeAlias = Callable[[object], "str | None"]


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


@dataclass(frozen=True)
class Bootstrap:
    text: str
    tokens: int
    warnings: list[str]
    cut: list[str]  # display paths cut or left out for the budget
    readonly_hashes: dict[str, str]  # layout path -> sha256 of each readonly file now
    head: str | None  # git HEAD now; the caller's next since_commit


@dataclass
class _Block:
    """One layout file, rendered but not yet fitted to the budget."""

    title: str
    shown: str  # the path as the agent should type it (relative to the workdir)
    body: list[str]  # the lines that may be cut
    lead: list[str] = field(default_factory=list)  # notes shown whenever the file is
    fence: str | None = None  # wrap body in a ``` fence (raw JSON, log lines)
    keep_end: bool = False  # tails: cut the oldest lines, keep the newest
    complete: bool = True  # False: the body is already partial (read cap), always mark
    max_tokens: int | None = None


def render(ctx: BootstrapContext) -> Bootstrap:
    """The bootstrap for the session ``ctx`` describes (see the module docstring)."""
    warnings: list[str] = []
    blocks = [_file_block(ctx, entry, warnings) for entry in ctx.layout]
    hashes = _check_readonly(ctx, warnings)
    head = statedir.git_head(ctx.workdir)
    _check_stale(ctx, head, warnings)
    if ctx.unchanged_sessions >= 2:
        warnings.append(
            f"no state change across the last {ctx.unchanged_sessions} sessions: "
            f"record progress or a blocker in {_dir_shown(ctx)} before anything else"
        )
    warnings = list(dict.fromkeys(warnings))  # two layout entries may share a file
    fixed_before = [_header(ctx)]
    fixed_after = [s for s in (_warnings_section(warnings), _changes(ctx, head)) if s]
    fixed_after.append(_rules(ctx))
    reserved = sum(estimate_tokens(s) + 1 for s in fixed_before + fixed_after)
    files_budget = ctx.budget_tokens - reserved
    # Block costs are summed from estimates of the pieces, which can only
    # overestimate; the loop corrects the rare overshoot (the left-out line).
    for _ in range(5):
        sections, cut = _fit(blocks, files_budget)
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


# --- fitting the files to the budget -------------------------------------------


def _fit(blocks: Sequence[_Block | None], budget: int) -> tuple[list[str], list[str]]:
    """The rendered sections of ``blocks`` within ``budget`` tokens, and the
    paths that were cut or left out. Earlier blocks take what they need first."""
    sections: list[str] = []
    cut: list[str] = []
    left_out: list[str] = []
    remaining = budget
    for block in blocks:
        if block is None:
            continue
        full = _assemble(block, block.body, marker=None)
        cost = estimate_tokens(full) + 1  # +1: the blank line before the next section
        limit = min(remaining, block.max_tokens or remaining)
        if block.complete and cost <= limit:
            sections.append(full)
            remaining -= cost
            continue
        partial = _cut_block(block, limit)
        cut.append(block.shown)
        if partial is None:
            left_out.append(block.shown)
        else:
            sections.append(partial)
        if cost > remaining:
            # The budget ran out here: later files are left out, not shown as
            # scraps of what the line-boundary cut happened to leave over.
            remaining = 0
        elif partial is not None:  # cut by its own max_tokens or a read cap
            remaining -= estimate_tokens(partial) + 1
    if left_out:
        sections.append(_LEFT_OUT.format(paths=", ".join(dict.fromkeys(left_out))))
    return sections, list(dict.fromkeys(cut))


def _assemble(block: _Block, body: list[str], marker: str | None) -> str:
    lines = [f"## {block.title}", "", *block.lead]
    if block.fence is not None:
        body = [f"```{block.fence}", *body, "```"]
    if marker and block.keep_end:
        lines.append(marker)
    lines.extend(body)
    if marker and not block.keep_end:
        lines.append(marker)
    return "\n".join(lines).rstrip("\n")


def _cut_block(block: _Block, limit: int) -> str | None:
    """``block`` with as many body lines as fit in ``limit`` tokens, or None
    when not even a useful part of it fits."""
    marker = _CUT.format(path=block.shown)
    room = limit - estimate_tokens(_assemble(block, [], marker)) - 1
    if room < MIN_BODY_TOKENS:
        return None
    order = list(reversed(block.body)) if block.keep_end else block.body
    kept: list[str] = []
    for line in order:
        cost = estimate_tokens(line) + 1  # +1: its newline, rounded up
        if cost > room:
            if not kept:  # one huge line: better part of it than nothing
                kept.append(_take_tokens(line, room, from_end=block.keep_end))
            break
        kept.append(line)
        room -= cost
    if block.keep_end:
        kept.reverse()
    return _assemble(block, kept, marker)


def _take_tokens(line: str, room: int, *, from_end: bool) -> str:
    """The longest start (or end) of ``line`` costing at most ``room`` tokens."""
    chars = line[::-1] if from_end else line
    lo, hi = 0, min(len(chars), room * 4)
    while lo < hi:  # binary search: estimate_tokens is monotonic in the prefix
        mid = (lo + hi + 1) // 2
        if estimate_tokens(chars[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return chars[:lo][::-1] if from_end else chars[:lo]


# --- the layout files ------------------------------------------------------------


def _file_block(ctx: BootstrapContext, entry: LayoutFile, warnings: list[str]) -> _Block | None:
    path = ctx.state_dir / entry.path
    shown = _shown(ctx, path)
    block = _Block(title=entry.heading, shown=shown, body=[], max_tokens=entry.max_tokens)
    try:
        if not path.exists():
            if entry.optional:
                return None
            warnings.append(f"{shown} is missing: create it (the layout lists it as required)")
            block.body = [f"_(missing: `{shown}`)_"]
            return block
        return _render_kind(ctx, entry, path, block, warnings)
    except (OSError, UnicodeError) as e:
        warnings.append(f"{shown} could not be read: {e}")
        block.body = [f"_(unreadable: `{shown}`)_"]
        return block


def _render_kind(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: _Block, warnings: list[str]
) -> _Block | None:
    if entry.kind == "task-state":
        _task_state(path, block, warnings)
    elif entry.kind == "handoff":
        return _handoff(path, block, warnings)
    elif entry.kind == "decision-log":
        _decision_log(path, entry.tail or DEFAULT_LOG_TAIL, block, warnings)
    else:
        _text(ctx, entry, path, block, warnings)
    return block


def _text(
    ctx: BootstrapContext, entry: LayoutFile, path: Path, block: _Block, warnings: list[str]
) -> None:
    if path.is_dir():  # e.g. snapshots/: show its latest file
        latest, count = statedir.latest_file(path)
        if latest is None:
            block.body = [f"_(no files in `{block.shown}`)_"]
            return
        block.lead = [f"_(latest of {count} files: `{_shown(ctx, latest)}`)_", ""]
        block.shown, path = _shown(ctx, latest), latest
    if entry.tail and not entry.section:
        with path.open("rb") as f:
            lines, start = statedir.tail_lines(f, entry.tail)
        block.body, block.keep_end = lines, True
        if start > 0:
            block.lead += [f"_(its last {len(lines)} lines)_", ""]
        return
    cap = MAX_SECTION_BYTES if entry.section else max(64 << 10, ctx.budget_tokens * 16)
    text, truncated = statedir.read_head(path, cap)
    lines = text.splitlines()
    block.complete = not truncated
    if entry.section:
        found = _section(lines, entry.section)
        if found is None:
            warnings.append(f"{block.shown} has no `## {entry.section}` section")
            block.body, block.complete = [f"_(no `## {entry.section}` section)_"], True
            return
        lines, block.complete = found, True
        if entry.tail:
            lines, block.keep_end = lines[-entry.tail :], True
    block.body = lines or ["_(empty)_"]


def _section(lines: list[str], name: str) -> list[str] | None:
    """The lines under ``## name`` (case-insensitive) up to the next ``## ``."""
    want = re.compile(rf"^##\s+{re.escape(name.strip())}\s*#*\s*$", re.IGNORECASE)
    for i, line in enumerate(lines):
        if want.match(line):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("## ")), None)
            return _strip_blank(lines[i + 1 : end])
    return None


def _strip_blank(lines: list[str]) -> list[str]:
    """``lines`` without blank lines at either end."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return lines[filled[0] : filled[-1] + 1] if filled else []


def _decision_log(path: Path, tail: int, block: _Block, warnings: list[str]) -> None:
    with path.open("rb") as f:
        lines, start = statedir.tail_lines(f, tail)
    before = statedir.count_lines_before(path, start, COUNT_LINES_LIMIT)
    bad: list[str] = []
    for i, line in enumerate(lines):
        if line.strip() and not _is_decision(line):
            bad.append(str(before + i + 1) if before is not None else f"{len(lines) - i}")
    if bad:
        where = ("lines " if len(bad) > 1 else "line ") + ", ".join(bad)
        where += "" if before is not None else " (counted from the end)"
        warnings.append(
            f"{block.shown}: {where} {'are' if len(bad) > 1 else 'is'} not in the six-field form "
            f"`{DECISION_FORM}`"
        )
    block.body = [line for line in lines if line.strip()] or ["_(no decisions yet)_"]
    block.fence, block.keep_end = "text", True


def _is_decision(line: str) -> bool:
    m = DECISION_LINE.match(line)
    if m is None:
        return False
    try:
        time.strptime(m["at"], "%Y-%m-%d %H:%M")
    except ValueError:
        return False
    return True


def _load_json(path: Path, shown: str, warnings: list[str]) -> tuple[object, str]:
    """(parsed value or None when invalid, raw text). Warns about bad JSON."""
    raw, truncated = statedir.read_head(path, MAX_JSON_BYTES)
    if truncated:
        warnings.append(f"{shown} is larger than {MAX_JSON_BYTES >> 20} MiB: shrink it")
        return None, raw
    try:
        return json.loads(raw), raw
    except json.JSONDecodeError as e:
        warnings.append(f"{shown} is not valid JSON (line {e.lineno}, col {e.colno}: {e.msg})")
    except (ValueError, RecursionError) as e:  # a 5000-digit number, nesting 1000 deep
        warnings.append(f"{shown} is not valid JSON ({type(e).__name__}: {e})")
    return None, raw


def _task_state(path: Path, block: _Block, warnings: list[str]) -> None:
    data, raw = _load_json(path, block.shown, warnings)
    if not isinstance(data, dict):
        if data is not None:  # valid JSON, but not an object (invalid JSON is warned)
            warnings.append(f"{block.shown} should hold a JSON object")
        block.lead = ["_(shown raw: repair it so it parses as a JSON object)_", ""]
        block.body, block.fence = raw.splitlines() or ["(empty file)"], "json"
        return
    block.body = _state_markdown(data, block.shown, warnings)


def _handoff(path: Path, block: _Block, warnings: list[str]) -> _Block | None:
    data, _ = _load_json(path, block.shown, warnings)
    value = data.get("handoff") if isinstance(data, dict) else None
    if not value or (isinstance(value, str) and not value.strip()):
        return None  # no handoff: nothing to say, not even a heading
    if not isinstance(value, str):
        warnings.append(f"{block.shown}: field `handoff` should be a string")
        value = json.dumps(value, ensure_ascii=False)
    block.body = value.strip().splitlines()
    return block


# --- state.json as Markdown ----------------------------------------------------------


def _state_markdown(data: dict[str, object], shown: str, warnings: list[str]) -> list[str]:
    """state.json (schema 1) as Markdown, most important first: the agent
    must see the mission and the next action even if the rest is cut."""

    def warn(msg: str) -> None:
        warnings.append(f"{shown}: {msg}")

    version = data.get("schema_version", 1)
    if version != 1:
        warn(f"schema_version is {version!r}, not 1; showing the fields agentd knows")
    out: list[str] = []
    for key, label in (("mission", "Mission"), ("next_action", "Next action")):
        value = _scalar(data, key, warn)
        if value is None:
            warn(f"`{key}` is not set: write it so the next session knows where to go")
        out += [f"**{label}:** {value or '(not set)'}", ""]
    if out[2].startswith("**Next action"):
        out[2] = "> " + out[2]  # the one line a restarted agent must not miss
    task_phase = [
        f"**{label}:** {v}"
        for key, label in (("task", "Task"), ("phase", "Phase"))
        if (v := _scalar(data, key, warn))
    ]
    if task_phase:
        out += [" · ".join(task_phase), ""]
    out += _list_part(data, "completed_steps", "Completed steps", _step, warn)
    out += _list_part(data, "blockers", "Blockers", _plain_item, warn)
    out += _list_part(data, "constraints", "Constraints", _plain_item, warn)
    out += _list_part(data, "key_decisions", "Key decisions", _decision_item, warn)
    if updated := _scalar(data, "updated_at", warn):
        out += [f"_Updated: {updated}_", ""]
    out += _other_fields(data)
    return _strip_blank(out)


def _scalar(data: dict[str, object], key: str, warn: _Warn) -> str | None:
    value = data.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        warn(f"field `{key}` should be a string, not {_type(value)}")
        return _preview(value, 200)
    return str(value).strip()


def _list_part(
    data: dict[str, object], key: str, label: str, item: _Item, warn: _Warn
) -> list[str]:
    value = data.get(key)
    if value is None or value == []:
        return []
    if isinstance(value, str):  # one item written without the list around it
        value = [value]
    if not isinstance(value, list):
        warn(f"field `{key}` should be a list, not {_type(value)}")
        return [f"**{label}:** {_preview(value, 200)}", ""]
    # Lists grow at the end: the newest entries are the last ones.
    shown = value[-SHOWN_ITEMS:] if key in ("completed_steps", "key_decisions") else value
    first = len(value) - len(shown)
    earlier = f" the newest {len(shown)} of {len(value)}" if first else ""
    lines = [f"**{label}:**{earlier}"]
    for i, entry in enumerate(shown, start=first):
        text = item(entry)
        if text is None:
            warn(f"`{key}[{i}]` is not in the expected form")
            text = _preview(entry, 200)
        lines.append(f"- {text}")
    return [*lines, ""]


def _step(entry: object) -> str | None:
    if isinstance(entry, str):
        return f"{entry} (pending verification)"
    if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
        return None
    at = f" ({entry['at']})" if entry.get("at") else ""
    verified = entry.get("verified")
    if not verified:
        return f"{entry['text']}{at} (pending verification)"
    how = "" if verified is True else f": {_preview(verified, 120)}"
    return f"{entry['text']}{at} - verified{how}"


def _plain_item(entry: object) -> str | None:
    if isinstance(entry, str | int | float) and not isinstance(entry, bool):
        return str(entry)
    return None


def _decision_item(entry: object) -> str | None:
    if isinstance(entry, str):
        return entry
    if not isinstance(entry, dict) or not isinstance(entry.get("decision"), str):
        return None
    reason = entry.get("reason")
    return entry["decision"] + (f" - because {reason}" if reason else "")


def _other_fields(data: dict[str, object]) -> list[str]:
    extra = [k for k in data if k not in _KNOWN_STATE_KEYS]
    if not extra:
        return []
    # Briefly: the agent wrote them for a reason, but they are not the schema.
    return ["**Other fields:** " + "; ".join(f"`{k}`: {_preview(data[k], 60)}" for k in extra)]


def _preview(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type(value: object) -> str:
    names = {dict: "an object", list: "a list", bool: "a boolean", str: "a string"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else "null")


# --- checks across files ---------------------------------------------------------


def _check_readonly(ctx: BootstrapContext, warnings: list[str]) -> dict[str, str]:
    hashes: dict[str, str] = {}
    for entry in ctx.layout:
        if not entry.readonly or entry.path in hashes:
            continue
        path = ctx.state_dir / entry.path
        try:
            hashes[entry.path] = statedir.sha256_file(path)
        except OSError:
            if entry.path in ctx.readonly_hashes:
                warnings.append(f"readonly file {_shown(ctx, path)} was removed")
            continue
        old = ctx.readonly_hashes.get(entry.path)
        if old is not None and old != hashes[entry.path]:
            warnings.append(
                f"readonly file {_shown(ctx, path)} changed since it was recorded "
                f"(sha256 {old[:12]} -> {hashes[entry.path][:12]}): it must not be edited"
            )
    return hashes


def _check_stale(ctx: BootstrapContext, head: str | None, warnings: list[str]) -> None:
    """Warn when the newest state file is older than the last commit: the agent
    committed work and forgot to update the state."""
    if head is None:
        return
    committed = statedir.run_git(ctx.workdir, "log", "-1", "--format=%ct", head)
    newest = statedir.newest_mtime(ctx.state_dir) if ctx.state_dir.is_dir() else None
    if not committed or not committed.strip().isdigit() or newest is None:
        return
    if newest + STALE_GRACE_S >= int(committed):
        return
    if _head_touches(ctx, head):  # the state itself was committed with that work
        return
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(int(committed)))
    warnings.append(
        f"the state in {_dir_shown(ctx)} is older than the last commit ({head[:10]}, {when}): "
        "the agent forgot to update it; bring it up to date first"
    )


def _head_touches(ctx: BootstrapContext, head: str) -> bool:
    try:
        rel = ctx.state_dir.resolve().relative_to(ctx.workdir.resolve())
    except ValueError:
        return False
    out = statedir.run_git(
        ctx.workdir, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", head,
        "--", str(rel) or ".",
    )  # fmt: skip
    return bool(out and out.strip())


def _changes(ctx: BootstrapContext, head: str | None) -> str:
    since = ctx.since_commit
    if head is None or not since or since == head:
        return ""
    git = ctx.workdir
    count = statedir.run_git(git, "rev-list", "--count", f"{since}..{head}")
    log = statedir.run_git(git, "log", "--oneline", "--no-decorate", "-n", "10", f"{since}..{head}")
    stat = statedir.run_git(git, "diff", "--shortstat", since, head)
    names = statedir.run_git(git, "diff", "--name-only", "-z", since, head)
    if count is None or log is None or stat is None or names is None:
        return ""  # since was garbage-collected, or git is unhappy: say nothing
    total = int(count.strip() or 0)
    lines = ["## Changes since the last session", "", f"Commits: {total}"]
    lines += [f"- {c[:100]}" for c in log.splitlines()]
    if total > 10:
        lines.append(f"- ... and {total - 10} earlier")
    files = [n for n in names.split("\0") if n]
    if files:
        more = f" and {len(files) - 10} more" if len(files) > 10 else ""
        lines.append(f"Files: {stat.strip()}: {', '.join(files[:10])}{more}")
    return "\n".join(lines)


# --- paths ---------------------------------------------------------------------------


def _shown(ctx: BootstrapContext, path: Path) -> str:
    """``path`` as the agent should use it: relative to the workdir when inside."""
    normal = Path(os.path.normpath(path))
    try:
        return normal.relative_to(os.path.normpath(ctx.workdir)).as_posix()
    except ValueError:
        return str(normal)


def _dir_shown(ctx: BootstrapContext) -> str:
    return _shown(ctx, ctx.state_dir).rstrip("/") + "/"
