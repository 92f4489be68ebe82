"""Readonly state files: record their hashes, warn when they change.

A layout file marked ``readonly`` (a contract, the constraints) is the
person's, not the agent's. ``agentctl state init`` records the sha256 of each
one in ``STATE_DIR/.readonly.json``; a file still holding the template init
wrote is recorded as ``null`` (the person has yet to fill it in, and that is
not a change to warn about). Running ``init`` again records them as they are
now. The daemon also passes the hashes it saw at its first session; a
recorded hash wins over those.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from agentd.memory import statedir
from agentd.memory.layout import LayoutFile

RECORD = ".readonly.json"


def load_record(state_dir: Path) -> dict[str, str | None]:
    """The recorded hashes (path -> sha256 or None); {} when none or unreadable."""
    try:
        data = json.loads((state_dir / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str | None)}


def save_record(state_dir: Path, record: Mapping[str, str | None]) -> None:
    statedir.write_atomic(state_dir / RECORD, json.dumps(dict(record), indent=2) + "\n")


def effective(state_dir: Path, passed: Mapping[str, str]) -> dict[str, str]:
    """What to compare with: the recorded hashes, else those passed by the daemon."""
    recorded = {k: v for k, v in load_record(state_dir).items() if v}
    return {**passed, **recorded}


def check(
    state_dir: Path, layout: Iterable[LayoutFile], recorded: Mapping[str, str],
    shown: Callable[[Path], str],
) -> tuple[dict[str, str], list[str]]:  # fmt: skip
    """(sha256 of each readonly file now, warnings about changed or removed ones)."""
    hashes: dict[str, str] = {}
    warnings: list[str] = []
    for entry in layout:
        if not entry.readonly or entry.path in hashes:
            continue
        path = state_dir / entry.path
        try:
            hashes[entry.path] = statedir.sha256_file(path)
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
