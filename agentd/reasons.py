"""Why a session ended, and what its end came to: the vocabulary as values.

A reason is written ``KIND`` or ``KIND:ARG`` wherever it is shown or kept (the
history, events, ``agentctl status``, ``AGENTD_RESTART_REASON``):

============================  =====================================================
``exit:N``, ``signal:NAME``   the agent ended by itself (or was killed by NAME)
``sentinel:NAME``             its output matched the sentinel NAME
``timeout``, ``idle``         a time limit of the unit (``limits:``)
``context``                   context pressure: a handoff, or ``limits.context_tokens``
``budget:NAME``               a daily budget (``budget.NAME``) was reached
``manual``, ``manual:TEXT``   a person restarted or stopped it (``--reason TEXT``)
``spawn-error``               the command could not be executed
``complete``                  the state said the mission is complete
``verify-failed``             the completion's check (``complete.verify``) failed
``worktree-error``            the unit's git worktree could not be made or used
``start``                     the first session of a start (no previous end)
``internal-error``, ``lost``  agentd's own bug; a session a killed agentd left
============================  =====================================================

``Reason.parse`` reads that text once; code asks ``reason.kind`` instead of
matching prefixes. ``Outcome`` names what an end came to (``agentctl
history``). Pure: no imports of agentd.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True)
class Reason:
    kind: str
    arg: str = ""

    @classmethod
    def parse(cls, text: str) -> Reason:
        """``"sentinel:compaction"`` -> ``Reason("sentinel", "compaction")``."""
        kind, _, arg = text.partition(":")
        return cls(kind, arg)

    @classmethod
    def sentinel(cls, name: str) -> Reason:
        return cls("sentinel", name)

    @classmethod
    def manual(cls, text: str = "") -> Reason:
        """A person's restart or stop; ``text`` is what they gave with ``--reason``."""
        return cls("manual", text)

    @classmethod
    def budget(cls, name: str) -> Reason:
        return cls("budget", name)

    @property
    def is_sentinel(self) -> bool:
        return self.kind == "sentinel"

    @property
    def is_manual(self) -> bool:
        return self.kind == "manual"

    def __str__(self) -> str:
        return f"{self.kind}:{self.arg}" if self.arg else self.kind


TIMEOUT = Reason("timeout")
IDLE = Reason("idle")
CONTEXT = Reason("context")
MANUAL = Reason("manual")
INTERNAL_ERROR = Reason("internal-error")
VERIFY_FAILED = Reason("verify-failed")
WORKTREE_ERROR = Reason("worktree-error")
# The ends agentd itself triggers that hand over to a fresh session (besides sentinels).
HANDOFF_KINDS = frozenset({"timeout", "idle", "context"})


class Outcome(StrEnum):
    """What a session's end came to, as ``agentctl history`` shows it."""

    DONE = "done"
    # the agent handed over: its exit code (``restart.exit_codes``) or a sentinel asked
    # for a fresh session (after recording its state)
    HANDOFF = "handoff"
    MANUAL = "manual"  # a person restarted it (``agentctl restart``, the dashboard)
    CONTEXT = "context"  # compaction or a full context
    USAGE_LIMITED = "usage-limited"
    TIMEOUT = "timeout"
    IDLE = "idle"
    CRASHED = "crashed"
    STALLED = "stalled"
    STOPPED = "stopped"
    VERIFY_FAILED = "verify-failed"  # it claimed completion; the check refused it
