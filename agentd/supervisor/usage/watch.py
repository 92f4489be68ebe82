"""A running session's usage, read as it goes and once more at its end.

The session's output says when there may be something new: each burst of
output arms one read ``POLL`` seconds later (no timer while the session is
quiet, none at all without a source). A read runs on a worker thread
(``agentd.supervisor.offloop``), bounded by ``READ_TIMEOUT``; one that does
not answer is given up (its thread ends when it may) and no second one starts
while it runs. ``on_update`` hears every new figure; ``final`` reads once the
session's processes are gone (the CLIs write their totals on exit) and gives
the session's ``usage`` record: the CLI's figures, or the screen estimate
marked ``source: estimate`` with a note saying why there are none. A session
whose CLI exited by itself has its last read begun at once (``read_final``),
while the rest of its tree is ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from agentd import events as ev
from agentd.config.usage import UsageSpec
from agentd.supervisor.offloop import off_loop
from agentd.supervisor.usage.sources import Aider, Source
from agentd.supervisor.usage.tally import Spent, estimate_record

POLL = 2.0  # s after output before its usage is read (at most one read per POLL)
READ_TIMEOUT = 10.0  # s: a read of the CLI's records while the session runs
FINAL_TIMEOUT = 20.0  # s: the last read, after the session (up to MAX_BYTES per file)


class UsageWatch:
    def __init__(
        self,
        spec: UsageSpec,
        source: Source | None,
        *,
        emit: Callable[..., None],
        on_update: Callable[[Spent], None] | None = None,
    ) -> None:
        self.spec = spec
        self.source = source
        self._emit = emit
        self._on_update = on_update
        self.latest: Spent | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False  # output came while a read ran: read once more after it
        self._closed = False
        self._said: set[str] = set()
        self._last: asyncio.Task[None] | None = None  # the last read, begun early

    def poke(self) -> None:
        """The session drew output: read its records ``POLL`` s from now (once)."""
        if self.source is None or self._closed or self._timer is not None:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._timer = asyncio.get_running_loop().call_later(POLL, self._start)

    def _start(self) -> None:
        self._timer = None
        if not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._read(final=False))

    async def _read(self, *, final: bool) -> None:
        source = self.source
        if source is None:
            return
        timeout = FINAL_TIMEOUT if final else READ_TIMEOUT
        try:
            spent = await off_loop(lambda: source.read(final=final), timeout)
        except TimeoutError:
            self._problem(f"its records did not answer within {timeout:g}s")
            return
        except Exception as exc:  # the session must not pay for a reader's bug
            self._problem(f"{type(exc).__name__}: {exc}")
            return
        finally:
            self._report()
        if spent is not None and spent != self.latest:
            self.latest = spent
            if self._on_update is not None and not self._closed:
                self._on_update(spent)
        if self._again and not final:
            self._again = False
            self.poke()

    def _report(self) -> None:
        """Say each problem of the source once (a FIFO, a link leading out...)."""
        source = self.source
        while source is not None and source.problems:
            self._problem(source.problems.pop(0))

    def _problem(self, what: str) -> None:
        if what in self._said:
            return
        self._said.add(what)
        self._emit(ev.UNIT_ERROR, level="warning", error=f"usage not read: {what}")

    @property
    def context_percent(self) -> float | None:
        return self.latest.context_percent(self.spec) if self.latest is not None else None

    def read_final(self) -> None:
        """Begin the last read now: the CLI has exited, so its totals are written
        (``final`` waits for it); the rest of the session's tree may still be ending."""
        if self._last is None and self.source is not None:
            self._close()
            self._last = asyncio.get_running_loop().create_task(self._last_read())

    async def final(self, estimate: int) -> dict[str, Any]:
        """The session's ``usage`` record, read after its processes are gone."""
        self._close()
        if self.source is None:
            return estimate_record(estimate)
        await (self._last if self._last is not None else self._last_read())
        self._cleanup()
        record = self._record(estimate)
        self._emit(ev.SESSION_USAGE, **record)
        return record

    def _close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _last_read(self) -> None:
        if self._task is not None and not self._task.done():  # a read under way ends first
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._task), READ_TIMEOUT)
        await self._read(final=True)

    def _record(self, estimate: int) -> dict[str, Any]:
        assert self.source is not None
        spent = self.latest
        if spent is None:
            said = sorted(self._said) + self.source.shortfalls()
            if not said:
                looked = self.source.looked
                why = f"no usage records of {self.source.name} found"
                said = [f"{why} ({looked})" if looked else why]
            return estimate_record(estimate, "; ".join(said))
        return spent.record(self.spec)

    def _cleanup(self) -> None:
        """aider's log that agentd set for this session is done with (its figures are
        in the history now)."""
        source = self.source
        if isinstance(source, Aider) and source.files.log is not None and source.files.own_log:
            with contextlib.suppress(OSError):
                source.files.log.unlink()
