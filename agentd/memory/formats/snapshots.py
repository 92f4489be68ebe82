"""Decision snapshots: ``snapshots/snapshot-NNN.json`` (the ``decision-log`` layout).

One per decision, taken by ``agentctl state decide``: the time, the
decision and why, the current task, git HEAD, and the git blob hash of each
file the decision names (``git hash-object``; the contents stay in git, so a
snapshot is a few hundred bytes and ``git cat-file -p HASH`` gets a file
back). A file that does not exist is recorded as ``null``.

``agentctl state archive`` keeps the newest snapshots in ``snapshots/`` and
moves older ones to ``snapshots/archive/``, so finding the latest stays cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from agentd import fileio
from agentd.memory import gitinfo

DIR = "snapshots"
ARCHIVE = "archive"
NAME = re.compile(r"^snapshot-(?P<n>\d+)\.json$")


def listing(directory: Path) -> list[tuple[int, str]]:
    """(number, name) of the ``snapshot-NNN.json`` files in ``directory``, in order."""
    try:
        with os.scandir(directory) as it:
            return sorted((int(m["n"]), e.name) for e in it if (m := NAME.match(e.name)))
    except OSError:
        return []


def numbers(directory: Path) -> list[int]:
    return [n for n, _ in listing(directory)]


def next_name(state_dir: Path) -> str:
    """The name of the next snapshot: one past the highest taken so far."""
    snap = state_dir / DIR
    taken = numbers(snap) or numbers(snap / ARCHIVE)
    return f"snapshot-{max(taken, default=0) + 1:03d}"


def blob_hashes(files: list[str], cwd: Path) -> dict[str, str | None]:
    """The git blob hash of each path in ``files`` (relative to ``cwd``),
    None for a path that is not a readable file."""
    result: dict[str, str | None] = {f: None for f in files}
    present = [f for f in files if (cwd / f).is_file()]
    if not present:
        return result
    out = gitinfo.run_git(cwd, "hash-object", "--", *present)
    hashes = out.split() if out else []
    if len(hashes) != len(present):  # no git: the same hash, computed here
        hashes = [_blob_hash(cwd / f) for f in present]
    result.update(zip(present, hashes, strict=True))
    return result


def _blob_hash(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def take(
    state_dir: Path,
    name: str,
    record: dict[str, object],
    files: list[str],
    cwd: Path,
    git_dir: Path,
) -> Path:
    """Write snapshot ``name`` (``record`` plus HEAD and the files' blob hashes)."""
    snap = state_dir / DIR
    snap.mkdir(exist_ok=True)
    full = {
        "snapshot": name,
        **record,
        "git_head": gitinfo.git_head(git_dir),
        "files": blob_hashes(files, cwd),
    }
    path = snap / f"{name}.json"
    fileio.write_atomic(path, json.dumps(full, indent=2, ensure_ascii=False) + "\n")
    return path


def archive_old(state_dir: Path, keep: int) -> int:
    """Move all but the newest ``keep`` snapshots to ``snapshots/archive/``."""
    snap = state_dir / DIR
    found = listing(snap)
    old = found[: max(len(found) - keep, 0)]
    if not old:
        return 0
    (snap / ARCHIVE).mkdir(exist_ok=True)
    for _, name in old:
        os.replace(snap / name, snap / ARCHIVE / name)
    return len(old)
