"""A loop error that repeats (EMFILE in accept, retried for as long as the fds are
gone) is one event, then one per window with a count (issue 27): it was ~2,500
`daemon.error` events a second, the whole event history rotated away in minutes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentd.supervisor import children
from agentd.supervisor.children import Repeats


def test_a_repeating_loop_error_is_said_once_then_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(children, "REPEAT_WINDOW", 0.05)
    said: list[dict[str, Any]] = []

    def emit(event: str, **fields: Any) -> None:
        said.append({"event": event, **fields})

    async def storm() -> None:
        loop = asyncio.get_running_loop()
        errors = Repeats(emit)
        for fd in range(2500):  # a second of it, as the probe saw
            errors.report(f"socket.accept() out of system resource: [Errno 24] fd {fd}", loop)
        errors.report("another error", loop)
        assert len(said) == 2
        await asyncio.sleep(0.08)  # the window is over: the count is said
        assert said[2]["repeated"] == 2499
        await asyncio.sleep(0.08)  # nothing came since: the spell is over, nothing more
        assert len(said) == 3
        errors.report("socket.accept() out of system resource: [Errno 24] fd 7", loop)
        assert len(said) == 4 and "repeated" not in said[3]  # a new spell says it at once

    asyncio.run(storm())
    assert {e["event"] for e in said} == {"daemon.error"}
