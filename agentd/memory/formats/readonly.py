"""Readonly state files: record their hashes, warn when they change.

A layout file marked ``readonly`` (a contract, the constraints) is the
person's, not the agent's. ``agentctl state init`` records the sha256 of each
one in ``STATE_DIR/.readonly.json``; a file still holding the template init
wrote is recorded as ``null`` (the person has yet to fill it in, and that is
not a change to warn about). Running ``init`` again records them as they are
now. The daemon also passes the hashes it saw at its first session; a
recorded hash wins over those.

Hashing is bounded: a file whose size and mtime did not change since it was
last hashed (in this process) is not read again, and a hash reads at most
``statedir.HASH_MAX_BYTES`` of a file (``statedir.sha256_file``). A readonly
file that is not a regular file inside the state dir is not hashed: the
warning says why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from agentd import fileio
from agentd.memory import statedir
from agentd.memory.layout import LayoutFile

RECORD = ".readonly.json"
_CACHE_SIZE = 256
# (path, device, inode, size, mtime) -> hash: an unchanged file is not read again
_hashed: dict[tuple[str, int, int, int, int], str] = {}


def load_record(state_dir: Path) -> dict[str, str | None]:
    """The recorded hashes (path -> sha256 or None); {} when none or unreadable."""
    try:
        data = json.loads(statedir.read_text(state_dir / RECORD, 1 << 20))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str | None)}


def save_record(state_dir: Path, record: Mapping[str, str | None]) -> None:
    fileio.write_atomic(state_dir / RECORD, json.dumps(dict(record), indent=2) + "\n")


def effective(state_dir: Path, passed: Mapping[str, str]) -> dict[str, str]:
    """What to compare with: the recorded hashes, else those passed by the daemon."""
    recorded = {k: v for k, v in load_record(state_dir).items() if v}
    return {**passed, **recorded}


def check(
    state_dir: Path,
    layout: Iterable[LayoutFile],
    recorded: Mapping[str, str],
    shown: Callable[[Path], str],
) -> tuple[dict[str, str], list[str]]:
    """(sha256 of each readonly file now, warnings about changed or removed ones)."""
    hashes: dict[str, str] = {}
    warnings: list[str] = []
    for entry in layout:
        if not entry.readonly or entry.path in hashes:
            continue
        path = state_dir / entry.path
        try:
            statedir.check_inside(state_dir, path)
            hashes[entry.path] = _hash(path)
        except statedir.NotReadable as exc:
            warnings.append(f"readonly file {shown(path)} cannot be checked: {exc}")
            continue
        except OSError:
            if entry.path in recorded:
                warnings.append(f"readonly file {shown(path)} was removed")
            continue
        old = recorded.get(entry.path)
        if old is not None and old != hashes[entry.path]:
            warnings.append(
                f"readonly file {shown(path)} changed since it was recorded "
                f"(sha256 {old[:12]} -> {hashes[entry.path][:12]}): it must not be edited; "
                "restore it, or leave it to the person who owns it"
            )
    return hashes, warnings


def _hash(path: Path) -> str:
    """``statedir.sha256_file`` of ``path``, read again only when its size or mtime changed."""
    st = os.stat(path)
    key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    found = _hashed.get(key)
    if found is None:
        found = statedir.sha256_file(path)
        if len(_hashed) >= _CACHE_SIZE:
            _hashed.clear()
        _hashed[key] = found
    return found
