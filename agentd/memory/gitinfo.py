"""What git says about the workdir, for the bootstrap (SPEC 4, steps 3-4).

``stale``: the newest state file is older than the last commit, so the agent
committed work and forgot to update its state. ``changes``: a short
"changes since the last session" (commits and changed files). Both are
optional information: any git failure means saying nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

from agentd.memory import statedir

STALE_GRACE_S = 60  # the agent updates the state, then commits: not stale
SHOWN = 10  # commits and files listed before "and N more"


def stale(workdir: Path, state_dir: Path, head: str | None, dir_shown: str) -> str | None:
    """A warning when the state is older than the last commit, else None."""
    if head is None:
        return None
    committed = statedir.run_git(workdir, "log", "-1", "--format=%ct", head)
    newest = statedir.newest_mtime(state_dir) if state_dir.is_dir() else None
    if not committed or not committed.strip().isdigit() or newest is None:
        return None
    if newest + STALE_GRACE_S >= int(committed):
        return None
    if _head_touches(workdir, state_dir, head):  # the state was committed with that work
        return None
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(int(committed)))
    return (
        f"the state in {dir_shown} is older than the last commit ({head[:10]}, {when}): "
        "the agent forgot to update it; bring it up to date first"
    )


def _head_touches(workdir: Path, state_dir: Path, head: str) -> bool:
    try:
        rel = state_dir.resolve().relative_to(workdir.resolve())
    except ValueError:
        return False
    out = statedir.run_git(
        workdir, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", head,
        "--", str(rel) or ".",
    )  # fmt: skip
    return bool(out and out.strip())


def changes(workdir: Path, since: str | None, head: str | None) -> str:
    """The "Changes since the last session" section, or "" when there is nothing to say."""
    if head is None or not since or since == head:
        return ""
    count = statedir.run_git(workdir, "rev-list", "--count", f"{since}..{head}")
    log = statedir.run_git(
        workdir, "log", "--oneline", "--no-decorate", "-n", str(SHOWN), f"{since}..{head}"
    )
    stat = statedir.run_git(workdir, "diff", "--shortstat", since, head)
    names = statedir.run_git(workdir, "diff", "--name-only", "-z", since, head)
    if count is None or log is None or stat is None or names is None:
        return ""  # since was garbage-collected, or git is unhappy: say nothing
    total = int(count.strip() or 0)
    lines = ["## Changes since the last session", "", f"Commits: {total}"]
    lines += [f"- {c[:100]}" for c in log.splitlines()]
    if total > SHOWN:
        lines.append(f"- ... and {total - SHOWN} earlier")
    files = [n for n in names.split("\0") if n]
    if files:
        more = f" and {len(files) - SHOWN} more" if len(files) > SHOWN else ""
        lines.append(f"Files: {stat.strip()}: {', '.join(files[:SHOWN])}{more}")
    return "\n".join(lines)
