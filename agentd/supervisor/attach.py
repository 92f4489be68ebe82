"""A unit's terminal, for the people attached to it (``agentctl attach``).

What every session prints goes to each watcher, across sessions; what they
type goes to the live session only.
"""

from __future__ import annotations

from collections.abc import Callable

from agentd.session.session import Session


class Terminal:
    def __init__(self, live: Callable[[], Session | None]) -> None:
        self._live = live  # the session that may be typed into, if any
        self._watchers: list[Callable[[bytes], None]] = []

    def watch(self, listener: Callable[[bytes], None]) -> Callable[[], None]:
        """Have ``listener`` get the terminal output of every session; the undo."""
        self._watchers.append(listener)
        return lambda: self._watchers.remove(listener) if listener in self._watchers else None

    def output(self, data: bytes) -> None:
        for listener in list(self._watchers):
            listener(data)

    def type(self, data: bytes) -> bool:
        """Type ``data`` into the live session; False if none runs."""
        session = self._live()
        if session is None:
            return False
        session.type(data)
        return True
