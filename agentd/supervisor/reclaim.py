"""Ending what an agentd that died hard (``kill -9``) left running.

The history's last record is then a session ``start`` without an ``end``;
that session's processes still carry its marker in their environment, so
they are found and ended like any session's (the leader's pid is not used:
after the old daemon died it may belong to someone else by now).
"""

from __future__ import annotations

from collections.abc import Callable

from agentd import events as ev
from agentd.config.convert import signal_name
from agentd.config.unit import Unit
from agentd.process.ending import end_session_tree
from agentd.supervisor.history import History

LOST = "agentd-lost"


async def reclaim_lost_session(history: History, unit: Unit, *, emit: Callable[..., None],
                               at: str) -> int | None:
    """End the unit's last session if a previous agentd left it; its number, or None."""
    records = history.recent()
    last = records[-1] if records else None
    if not last or last.get("kind") != "start" or not last.get("marker"):
        return None
    number = int(last.get("session", 0))

    def on_signal(sig: int, pids: list[int]) -> None:
        emit(ev.SESSION_ORPHAN_KILLED, unit=unit.name, session=number, signal=signal_name(sig),
             pids=pids, why="left running by an agentd that did not stop cleanly")

    await end_session_tree(leader=None, marker=str(last["marker"]), sid=None,
                           sig=int(unit.stop.signal), grace=unit.stop.grace, on_signal=on_signal)
    history.append({"kind": "end", "session": number, "at": at, "reason": LOST})
    return number
