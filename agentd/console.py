"""Human-readable lines for events, for ``agentd run`` and ``agentd demo``."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any, TextIO

from agentd import events as ev


def _clock(event: dict[str, Any]) -> str:
    try:
        ts = datetime.fromisoformat(str(event.get("timestamp", "")).replace("Z", "+00:00"))
        return ts.astimezone().strftime("%H:%M:%S")
    except ValueError:
        return "--:--:--"


def describe(event: dict[str, Any]) -> str | None:
    """One line for the events a person watching a run cares about (None: skip)."""
    name = event.get("event")
    s = event.get("session")
    if name == ev.UNIT_ERROR:
        # one severity per problem: the event's level, as `agentd check` says it
        label = "warning" if event.get("level") == "warning" else "error"
        return f"{label}: {event.get('error')}"
    if name == ev.DAEMON_ERROR:
        return f"internal error: {event.get('error')}"
    if name == ev.DAEMON_DEGRADED:
        return (
            f"degraded: {event.get('what')} writes fail ({event.get('path')}: "
            f"{event.get('error')}); going on without them"
        )
    if name == ev.DAEMON_RECOVERED:
        return f"recovered: {event.get('what')} writes work again ({event.get('failed')} lost)"
    if name == ev.UNIT_STATE:
        to, why = event.get("to"), event.get("reason") or ""
        if to in ("backoff", "paused", "done", "failed", "stalled", "stopped"):
            return f"{to}" + (f" ({why})" if why else "")
        return None
    if name == ev.UNIT_VERIFY:
        how = "passed" if event.get("ok") else "FAILED"
        by = " (by hand)" if event.get("manual") else ""
        return (
            f"session {s} check {how}{by}: `{event.get('command')}` {event.get('said')} "
            f"after {event.get('duration_s')}s"
        )
    if name == ev.UNIT_WORKTREE:
        return f"worktree {event.get('path')} made (branch {event.get('branch')})"
    if name == ev.STATE_INIT:
        created = event.get("created") or []
        return (
            f"state dir {event.get('dir')} created and initialised (layout "
            f"{event.get('layout')}, {len(created)} files)"
        )
    if name == ev.STATE_ERROR:
        return f"state dir: {event.get('error')}"
    if name == ev.SESSION_START:
        return f"session {s} started, pid {event.get('pid')}"
    if name == ev.SESSION_BOOTSTRAP:
        warn = [str(w) for w in event.get("warnings") or []]
        extra = f", {len(warn)} warning(s):" if warn else ""
        # each warning whole, on a line of its own (a cut one would hide the file it names)
        return f"session {s} bootstrap: {event.get('tokens')} tokens{extra}" + "".join(
            f"\n    warning: {w}" for w in warn
        )
    if name == ev.SESSION_INJECT:
        return f"session {s} injected by {event.get('mode')} ({event.get('bytes')} bytes)"
    if name == ev.SESSION_SENTINEL:
        if event.get("error"):
            return f"sentinel {event.get('name')}: {event['error']}"
        return (
            f"session {s} sentinel {event.get('name')} -> {event.get('action')}: "
            f"{str(event.get('line', ''))[:80]!r}"
        )
    if name in (ev.SESSION_KILL, ev.SESSION_ORPHAN_KILLED):
        what = "left-over processes" if name == ev.SESSION_ORPHAN_KILLED else "processes"
        return f"session {s} {what}: SIG{event.get('signal')} to {event.get('pids')}"
    if name == ev.SESSION_EXIT:
        how = event.get("error") or (
            f"exit {event['code']}"
            if event.get("code") is not None
            else f"signal {event.get('signal')}"
        )
        return (
            f"session {s} ended after {event.get('duration_s')}s: {how} "
            f"(reason {event.get('reason')})"
        )
    return None


class Console:
    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet

    def __call__(self, event: dict[str, Any]) -> None:
        if self.quiet:
            return
        line = describe(event)
        if line:
            self.say(f"{_clock(event)} {event.get('unit', '')}: {line}")

    def say(self, text: str, *, always: bool = False) -> None:
        """Print a line; a closed stream (``| head``) silences the console, nothing else."""
        if self.quiet and not always:
            return
        try:
            print(text, file=self.stream, flush=True)
        except (BrokenPipeError, ValueError, OSError):
            self.quiet = True
