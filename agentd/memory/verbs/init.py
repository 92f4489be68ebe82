"""``agentctl state init [--layout L]``: create a state dir's files.

Copies the layout's templates (``agentd/memory/layouts/templates/L/``) for the files
that do not exist yet - an existing file is never overwritten, not even by
two inits racing (each file is linked into place, which fails if it exists) -
records the layout name in ``.layout`` and the hashes of the readonly files in
``.readonly.json`` (``agentd.memory.formats.readonly``). Running it again is safe: it
creates what is missing and records the readonly files as they are now.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from importlib.abc import Traversable
from pathlib import Path

from agentd import fileio
from agentd.memory import statedir
from agentd.memory.formats import readonly
from agentd.memory.layout import Layout, LayoutError, load_layout, templates
from agentd.memory.verbs.ops import LAYOUT_RECORD, StateError, layout_name


def init(path: Path, name: str | None) -> list[str]:
    """Initialise the state dir ``path``; returns a report, one line a file."""
    recorded_name, source = layout_name(path)
    recorded = source == "recorded"
    if recorded and name and name != recorded_name:
        raise StateError(
            f"{path} is already initialised with layout {recorded_name!r} "
            f"({path / LAYOUT_RECORD}); to switch to {name!r}, move the state dir away "
            "and init again"
        )
    chosen = name or recorded_name
    try:
        layout = load_layout(chosen)
    except LayoutError as e:
        raise StateError(str(e)) from None
    path.mkdir(parents=True, exist_ok=True)
    report: list[str] = []
    with fileio.locked(path):
        created = set()
        for rel, template in _template_files(templates(layout.name)):
            if _create(path / rel, template.read_bytes()):
                created.add(rel)
                report.append(f"created {path / rel}")
            else:
                report.append(f"kept    {path / rel} (exists)")
        for entry in layout.files:
            if entry.kind == "latest":
                (path / entry.path).mkdir(parents=True, exist_ok=True)
        if not recorded:
            fileio.write_atomic(path / LAYOUT_RECORD, layout.name + "\n")
        _record_readonly(path, layout)
    report.append(f"layout {layout.name}: {layout.description}")
    return report


def _template_files(root: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    for item in sorted(root.iterdir(), key=lambda t: t.name):
        if item.is_dir():
            yield from _template_files(item, f"{prefix}{item.name}/")
        elif item.is_file():
            yield prefix + item.name, item


def _create(path: Path, data: bytes) -> bool:
    """Write ``path`` unless it exists (atomically: no half-written file)."""
    if path.exists() or path.is_symlink():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.link(tmp, path)  # fails if it exists: never overwrite
        return True
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def template_text(layout: Layout, rel: str) -> bytes | None:
    t = templates(layout.name) / rel
    return t.read_bytes() if t.is_file() else None


def _record_readonly(path: Path, layout: Layout) -> None:
    """Hash each readonly file; one still holding its template is recorded as None."""
    record: dict[str, str | None] = {}
    for entry in layout.files:
        file = path / entry.path
        if not entry.readonly or not file.is_file():
            continue
        same = template_text(layout, entry.path) == file.read_bytes()
        record[entry.path] = None if same else statedir.sha256_file(file)
    if record or (path / readonly.RECORD).exists():
        readonly.save_record(path, record)
