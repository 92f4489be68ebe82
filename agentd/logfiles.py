"""Log files that rotate by size and notice being deleted or moved away.

``rotate`` shifts ``NAME`` -> ``NAME.1`` -> ... -> ``NAME.N`` (the oldest is
dropped; with no backups the file starts empty again). ``replaced`` tells a
writer that the file it holds open is no longer at its path (someone deleted
it, or logrotate moved it): the writer opens the path again, as it does on
SIGHUP, so its lines do not vanish into an unlinked file.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def rotate(path: Path, backups: int) -> None:
    """``path`` -> ``path.1`` -> ... -> ``path.backups``; truncated when ``backups`` is 0."""
    with contextlib.suppress(FileNotFoundError):  # deleted meanwhile: nothing to keep
        if backups <= 0:
            os.truncate(path, 0)
            return
        name = str(path)
        for i in range(backups - 1, 0, -1):
            if os.path.exists(f"{name}.{i}"):
                os.replace(f"{name}.{i}", f"{name}.{i + 1}")
        os.replace(name, f"{name}.1")


def replaced(path: Path, fd: int) -> bool:
    """Is the file open at ``fd`` no longer the one at ``path`` (deleted or moved)?"""
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return True
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) != (held.st_dev, held.st_ino)
