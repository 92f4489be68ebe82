"""What git says about the workdir, for the bootstrap's warnings and its changes since
the last session.

``run_git`` and ``git_head`` ask it, with a short timeout.

``stale``: the newest state file is older than the last commit, so the agent
committed work and forgot to update its state. ``changes``: a short
"changes since the last session" (commits and changed files). Both are
optional information: any git failure means saying nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentd.memory import statedir

STALE_GRACE_S = 60  # the agent updates the state, then commits: not stale
SHOWN = 10  # commits and files listed before "and N more"
GIT_TIMEOUT = 3.0


def stale(workdir: Path, state_dir: Path, head: str | None, dir_shown: str) -> str | None:
    """A warning when the state is older than the last commit, else None."""
    if head is None:
        return None
    committed = run_git(workdir, "log", "-1", "--format=%ct", head)
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
    out = run_git(
        workdir,
        "diff-tree",
        "--no-commit-id",
        "--name-only",
        "-r",
        "--root",
        head,
        "--",
        str(rel) or ".",
    )
    return bool(out and out.strip())


def changes(workdir: Path, since: str | None, head: str | None) -> str:
    """The "Changes since the last session" section, or "" when there is nothing to say."""
    if head is None or not since or since == head:
        return ""
    count = run_git(workdir, "rev-list", "--count", f"{since}..{head}")
    log = run_git(
        workdir, "log", "--oneline", "--no-decorate", "-n", str(SHOWN), f"{since}..{head}"
    )
    stat = run_git(workdir, "diff", "--shortstat", since, head)
    names = run_git(workdir, "diff", "--name-only", "-z", since, head)
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


def run_git(workdir: Path, *args: str, timeout: float = GIT_TIMEOUT) -> str | None:
    """stdout of ``git -C workdir ARGS``, or None on any failure (not a repo,
    no git, timeout): callers treat git as optional information."""
    if not might_be_a_repo(workdir):
        return None  # no git to start (~10 ms a call): the bootstrap, `state decide`
    import subprocess

    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",  # never take the index lock from under the agent
        "LC_ALL": "C",
    }
    try:
        done = subprocess.run(
            ["git", "-C", str(workdir), "--no-pager", *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace")


def might_be_a_repo(workdir: Path) -> bool:
    """False only when git could not find a repository from ``workdir``: no ``.git``
    in it or above it, and no ``GIT_DIR`` (or bare repository) to say otherwise."""
    if os.environ.get("GIT_DIR"):
        return True
    path = workdir.absolute()
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return True  # a bare repository
    return any(os.path.lexists(d / ".git") for d in (path, *path.parents))


def git_head(workdir: Path) -> str | None:
    """The commit id of HEAD in ``workdir``, None if not a repo or no commit yet."""
    out = run_git(workdir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    head = (out or "").strip()
    return head or None
