"""Unit states and the arcs allowed between them (``TRANSITIONS``).

Pure data: the arcs are taken in ``agentd.supervisor.service``, whose docstring
draws them; every change goes through ``Service._set_state``, which checks this
table. Terminal states (DONE, FAILED, STALLED, STOPPED) leave only by ``start``.
INVALID is never a service's state: it is what ``agentctl status`` shows for a
unit file that does not load (there is no service to be in a state). Nor is
CONFLICT: it is shown for a unit that waits to start because another unit
holds its state dir (it starts once that one no longer runs).
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    BACKOFF = "backoff"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"
    STALLED = "stalled"
    INVALID = "invalid"
    CONFLICT = "conflict"


S = State

TRANSITIONS: dict[State, frozenset[State]] = {
    # STOPPED -> STARTING: start (autostart, agentctl start)
    S.STOPPED: frozenset({S.STARTING}),
    # STARTING -> RUNNING: spawned; -> STOPPING: spawn failed or stop requested
    # while the bootstrap was being prepared (the end is decided there);
    # -> PAUSED: a daily budget is used up before the session could start
    S.STARTING: frozenset({S.RUNNING, S.STOPPING, S.PAUSED}),
    # RUNNING -> STOPPING: the leader exited, or agentd ends the session
    S.RUNNING: frozenset({S.STOPPING}),
    # STOPPING -> next, by the restart decision once the tree is gone
    S.STOPPING: frozenset(
        {S.STARTING, S.BACKOFF, S.PAUSED, S.DONE, S.FAILED, S.STALLED, S.STOPPED}
    ),
    # BACKOFF/PAUSED -> STARTING at the deadline; -> STOPPED on stop
    S.BACKOFF: frozenset({S.STARTING, S.STOPPED}),
    S.PAUSED: frozenset({S.STARTING, S.STOPPED}),
    # terminal states leave by an explicit start
    S.DONE: frozenset({S.STARTING}),
    S.FAILED: frozenset({S.STARTING}),
    S.STALLED: frozenset({S.STARTING}),
    # a file that does not load has no service: nothing leaves or enters this state
    S.INVALID: frozenset(),
    S.CONFLICT: frozenset(),
}

TERMINAL = frozenset({S.STOPPED, S.DONE, S.FAILED, S.STALLED})
ACTIVE = frozenset({S.STARTING, S.RUNNING, S.STOPPING})


class TransitionError(RuntimeError):
    """A state change the table does not allow: a bug in agentd, not user error."""
