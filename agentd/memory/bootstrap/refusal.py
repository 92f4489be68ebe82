"""The bootstrap's first must-keep section after a refused completion.

When a session marked the mission complete (or exited with a success code)
and the unit's check (``complete.verify``) failed, the next session is told
so first: which check, how it ended, which refusal this is of how many, and
the end of the check's output. A ``Block`` of must-keep parts, so the budget
keeps it before any record or free text, and a cut keeps the end of the
output (where a test runner says what failed). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentd.memory.bootstrap.escapes import escape_lines
from agentd.memory.bootstrap.parts import Block, Part

TITLE = "The claimed completion failed verification"


@dataclass(frozen=True)
class Refusal:
    """A completion the check refused: what the next session must know of it."""

    session: int  # the session that claimed completion
    command: str  # the check, as the unit file gave it
    said: str  # how it ended: "exited with code 1", "ran past its timeout (10m)..."
    tail: str  # the end of its output, secrets hidden
    attempt: int  # this is the attempt-th refusal since the unit was started...
    attempts: int  # ...of ``complete.attempts``: at that many the unit ends failed


def refusal_block(refusal: Refusal) -> Block:
    """The section that says the completion failed verification, and why."""
    left = refusal.attempts - refusal.attempt
    after = (
        f"{left} more refused completion{'s' if left != 1 else ''} and the unit ends `failed`"
        if left > 0
        else "the next refusal ends the unit `failed`"
    )
    said = [
        f"Session {refusal.session} marked the mission complete, but the check "
        f"`{refusal.command}` {refusal.said}, so the completion was refused and the "
        f"mark cleared (refusal {refusal.attempt} of {refusal.attempts}: {after}). The "
        "work is not done: fix what the check reports, run the check yourself until it "
        'passes, then mark the mission complete again (`agentctl state complete "RESULT"`).',
        "",
        "The end of its output:" if refusal.tail.strip() else "It printed nothing.",
    ]
    escape_lines(said)
    parts = [Part("must", lines=said)]
    if refusal.tail.strip():
        tail = refusal.tail.split("\n")
        escape_lines(tail)
        parts.append(Part("must", lines=tail, fence="text", keep_end=True, gap=True))
    return Block(TITLE, f"the output of `{refusal.command}`", parts)
