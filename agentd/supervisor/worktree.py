"""A unit's git worktree (``worktree: {repo, branch}``): made on first use, reused after.

``ensure`` makes the worktree ``REPO.worktrees/BRANCH`` (``WorktreeSpec.path``)
with ``git worktree add``: on the existing branch, or on a new one from the
repository's HEAD. It is reused as it is from then on (its files, its
commits, the agent's state dir inside it), also after a daemon restart, and
agentd never deletes it. What the repository's HEAD was when it was made is
its *base*, kept in the worktree's own git dir (``agentd-base``), from which
``describe`` says how many commits the branch is ahead (``agentctl worktree``).

Whatever git refuses is one ``WorktreeError`` line saying what to do: the
repository is not one, has no commit, has uncommitted changes a new branch
would start without, the branch is checked out in another worktree, or
something else is in the way. The service ends the unit ``failed`` with it
(reason ``worktree-error``), without retrying: git would say the same again.

Git runs through ``agentd.process.oneshot`` (its own session, a timeout, its
pid owned: the subreaper never takes its exit status), so the loop never waits.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import MutableSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentd.config.worktree import WorktreeSpec
from agentd.errors import AgentdError
from agentd.process import oneshot

BASE_FILE = "agentd-base"  # in the worktree's git dir: the base's name and commit
GIT_TIMEOUT = 60.0
ADD_TIMEOUT = 600.0  # checking out a large repository takes a while
NOISE = ("warning: ", "hint: ")


class WorktreeError(AgentdError):
    """The worktree cannot be made or used; one line saying why and what to do."""


@dataclass(frozen=True)
class Made:
    path: Path
    branch: str
    base: str | None  # the base's name (a branch) or commit
    created: bool  # made now; False: it was there


@dataclass
class Git:
    """``git -C DIR ARGS`` beside the loop; ``owned``: the pids the subreaper leaves alone."""

    owned: MutableSet[int] | None = None

    async def __call__(
        self, where: Path, *args: str, timeout: float = GIT_TIMEOUT
    ) -> tuple[bool, list[str]]:
        """Whether it succeeded, and its output lines (stdout and stderr, git's
        warnings and hints left out)."""
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        try:
            done = await oneshot.run(
                ["git", "-C", str(where), "--no-pager", *args],
                cwd=Path("/"),
                env=env,
                timeout=timeout,
                grace=2.0,
                owned=self.owned,
            )
        except OSError as exc:
            raise WorktreeError(f"cannot run git: {exc.strerror or exc}") from None
        text = done.output.decode("utf-8", "replace")
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(NOISE)]
        if done.timed_out:
            lines.append(f"fatal: git {args[0]} did not finish within {timeout:g}s")
        return done.ok, lines


def _said(lines: list[str]) -> str:
    """git's own words for a failure: its fatal or error line."""
    for line in lines:
        if line.startswith(("fatal: ", "error: ")):
            return line.split(": ", 1)[1]
    return lines[-1] if lines else "no output"


async def _common_dir(git: Git, where: Path) -> Path | None:
    ok, out = await git(where, "rev-parse", "--git-common-dir")
    if not ok or not out:
        return None
    found = Path(out[-1])
    return Path(os.path.realpath(found if found.is_absolute() else where / found))


def _checked_out(listing: list[str]) -> dict[str, str]:
    """``git worktree list --porcelain``: branch name -> the worktree that has it."""
    found: dict[str, str] = {}
    where = ""
    for line in listing:
        if line.startswith("worktree "):
            where = line.removeprefix("worktree ")
        elif line.startswith("branch refs/heads/"):
            found[line.removeprefix("branch refs/heads/")] = where
    return found


async def ensure(spec: WorktreeSpec, git: Git) -> Made:
    """The unit's worktree, made if it is not there yet (see the module docstring)."""
    path, repo, branch = spec.path, spec.repo, spec.branch
    if (path / ".git").is_file():  # a worktree is there: ours, if it belongs to the repo
        here, there = await _common_dir(git, path), await _common_dir(git, repo)
        if here is None or here != there:
            raise WorktreeError(
                f"{path} is a worktree of another repository than {repo}: move it away, "
                "or give the unit another branch"
            )
        return Made(path, branch, None, created=False)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise WorktreeError(
            f"{path} is in the way of the worktree of {repo} on {branch} (it exists and is "
            "not a worktree): move it away"
        )
    common = await _common_dir(git, repo)
    if common is None:
        raise WorktreeError(f"{repo} is not a git repository: worktree.repo must be one")
    ok, out = await git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if not ok or not out:
        raise WorktreeError(f"{repo} has no commit yet: a worktree starts from one; commit first")
    head = out[-1]
    _ok, listing = await git(repo, "worktree", "list", "--porcelain")
    elsewhere = _checked_out(listing).get(branch)
    if elsewhere is not None and os.path.realpath(elsewhere) != os.path.realpath(path):
        raise WorktreeError(
            f"branch {branch} is checked out at {elsewhere}: a branch can be in one "
            "worktree only; give the unit a branch of its own"
        )
    ok, named = await git(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    base = named[-1] if ok and named else head
    exists, _ = await git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    if exists:
        args = ["worktree", "add", str(path), branch]
    else:
        clean, dirty = await git(repo, "status", "--porcelain", "--untracked-files=no")
        if clean and dirty:
            raise WorktreeError(
                f"{repo} has uncommitted changes: the new branch {branch} would start "
                f"from HEAD ({head[:10]}) without them; commit or stash them, or create the "
                f"branch yourself (git -C {repo} branch {branch})"
            )
        args = ["worktree", "add", "-b", branch, str(path), head]
    ok, out = await git(repo, *args, timeout=ADD_TIMEOUT)
    if not ok:
        raise WorktreeError(f"git worktree add {path} failed: {_said(out)}")
    ok, gitdir = await git(path, "rev-parse", "--absolute-git-dir")
    if ok and gitdir:
        record = f"{base}\n{head}\n"
        await asyncio.to_thread(Path(gitdir[-1], BASE_FILE).write_text, record, "utf-8")
    return Made(path, branch, base, created=True)


async def describe(spec: WorktreeSpec, git: Git) -> dict[str, Any]:
    """``agentctl worktree``: its path, the branch it has checked out, its base, and how
    many commits it is ahead of (and behind) the base; ``exists`` false before it is made."""
    path = spec.path
    out: dict[str, Any] = {
        "path": str(path),
        "repo": str(spec.repo),
        "branch": spec.branch,
        "base": None,
        "ahead": None,
        "behind": None,
        "exists": (path / ".git").is_file(),
    }
    if not out["exists"]:
        return out
    ok, named = await git(path, "symbolic-ref", "--quiet", "--short", "HEAD")
    if ok and named:
        out["branch"] = named[-1]
    else:
        _ok, sha = await git(path, "rev-parse", "--short", "HEAD")
        out["branch"] = f"(detached at {sha[-1]})" if sha else "(detached)"
    name, commit = await _base(git, spec)
    if name is None:
        return out
    out["base"] = name
    ok, counts = await git(path, "rev-list", "--left-right", "--count", f"{commit}...HEAD")
    if ok and counts and len(counts[-1].split()) == 2:
        behind, ahead = counts[-1].split()
        out["ahead"], out["behind"] = int(ahead), int(behind)
    return out


async def _base(git: Git, spec: WorktreeSpec) -> tuple[str | None, str]:
    """The base's name and the ref to count from: the branch it was made from while
    that branch exists, else the commit it was made from; without a record, the
    repository's HEAD."""
    ok, gitdir = await git(spec.path, "rev-parse", "--absolute-git-dir")
    record: list[str] = []
    if ok and gitdir:
        try:
            record = (
                await asyncio.to_thread(Path(gitdir[-1], BASE_FILE).read_text, "utf-8")
            ).split()
        except OSError:
            record = []
    if len(record) == 2:
        name, commit = record
        exists, _ = await git(spec.repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}")
        return name, (f"refs/heads/{name}" if exists else commit)
    ok, named = await git(spec.repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    if ok and named:
        return named[-1], f"refs/heads/{named[-1]}"
    return None, ""
