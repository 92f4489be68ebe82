"""The ``worktree`` section of a unit: its sessions run in a git worktree of their own.

``worktree: {repo: ~/src/shop, branch: agent/cart}`` puts the unit in the
worktree ``~/src/shop.worktrees/agent/cart`` (``WorktreeSpec.path``: beside
the repository, named by the branch), created from the repository's HEAD on
first use (``agentd.supervisor.worktree``) and never deleted by agentd. The
unit's ``workdir`` is then that worktree (or a directory inside it) and its
state dir ``.agent`` inside it: two units may share a repository, each in
its own worktree. Pure: the path follows from the two keys.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import field_validator

from agentd.config.fields import StrictModel, expand

SUFFIX = ".worktrees"  # REPO.worktrees/BRANCH
# What git accepts as a branch name (git check-ref-format), told in one line.
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def check_branch(name: str) -> str:
    """``name`` if git would take it as a branch name; ValueError saying why not."""
    if not name:
        raise ValueError("must not be empty")
    why = None
    if _BAD_CHARS.search(name):
        why = "spaces, control characters and ~^:?*[\\ are not allowed"
    elif name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")):
        why = "it may not start with - or /, or end with /, . or .lock"
    elif ".." in name or "//" in name or "@{" in name or name == "@":
        why = "'..', '//', '@{' and a lone '@' are not allowed"
    elif any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        why = "no part between slashes may start with . or end with .lock"
    if why:
        raise ValueError(f"{name!r} is not a valid git branch name: {why}")
    return name


class WorktreeSpec(StrictModel):
    repo: Path
    """The git repository (its working tree); `~` and `$VARS` are expanded, a relative path is
    relative to the unit file. The worktree is `REPO.worktrees/BRANCH`, beside it.
    """
    branch: str
    """The branch the worktree has checked out: an existing one, or a new one created from the
    repository's HEAD on first use. A branch is in one worktree only: each unit needs its own.
    """

    @field_validator("repo", mode="before")
    @classmethod
    def _expand(cls, value: object) -> object:
        return Path(expand(str(value))) if isinstance(value, str | Path) else value

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        return check_branch(value)

    @property
    def path(self) -> Path:
        """Where the worktree is: ``REPO.worktrees/BRANCH``."""
        return self.repo.with_name(self.repo.name + SUFFIX) / self.branch
