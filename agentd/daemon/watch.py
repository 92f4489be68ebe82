"""Notice changes in the units dir (watchdog) and tell the daemon's loop.

watchdog reads inotify/FSEvents/kqueue on its own threads; the handler here
only filters the event and calls ``loop.call_soon_threadsafe`` (STYLE: one
thread acts). On the loop, a burst of events (an editor's write, rename and
chmod) is coalesced: ``on_change`` runs once, ``DEBOUNCE`` seconds after the
first. Nothing wakes up while nothing changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

DEBOUNCE = 0.2
UNIT_SUFFIXES = (".yaml", ".yml")
# Reads (ours included: a reload opens every unit file) change nothing.
_IGNORED = frozenset({"opened", "closed_no_write"})


class UnitsWatcher:
    def __init__(
        self, directory: Path, on_change: Callable[[], None], *, debounce: float = DEBOUNCE
    ) -> None:
        self.directory = directory
        self._on_change = on_change
        self._debounce = debounce
        self._loop = asyncio.get_running_loop()
        self._pending: asyncio.TimerHandle | None = None
        self._observer: Observer | None = None  # type: ignore[valid-type]

    def start(self) -> None:
        """Watch the directory (which must exist); OSError if the OS refuses a watch."""
        observer = Observer()
        observer.schedule(_Handler(self), str(self.directory), recursive=False)
        observer.daemon = True  # never keep a dying process alive
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    def relevant(self, event: FileSystemEvent) -> bool:
        if event.event_type in _IGNORED:
            return False
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        return any(self._is_unit_file(str(p)) for p in paths if p) or (
            event.is_directory and Path(str(event.src_path)) == self.directory
        )

    def _is_unit_file(self, path: str) -> bool:
        p = Path(path)
        return (
            p.parent == self.directory and p.suffix in UNIT_SUFFIXES and not p.name.startswith(".")
        )

    def poke(self) -> None:
        """From any thread: something changed."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: we are shutting down
            self._loop.call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        if self._pending is None:
            self._pending = self._loop.call_later(self._debounce, self._fire)

    def _fire(self) -> None:
        self._pending = None
        self._on_change()


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: UnitsWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if self.watcher.relevant(event):
            self.watcher.poke()
