"""A unit's bootstraps: rendering, remembering between sessions, writing.

Between sessions agentd remembers two things for the next bootstrap: the
hashes of the layout's readonly files as the first session saw them (to warn
when one changed) and the git HEAD (for "changes since the last session").
Each rendered bootstrap is kept as ``logs/UNIT/bootstrap-N.md`` (the last
``logs.keep_bootstraps`` of them; 0 keeps all) with the secrets the state
shows hidden (``agentd.session.redact``; the unit's redactor learns them, so
its transcript and events hide them too); the session is given that copy, or,
when it hides something, the whole text in the private ``given`` file
(``run/units/UNIT.bootstrap.md``, 0600); in file mode the whole text is also
written where the agent reads it. Event ``session.bootstrap`` carries its
account (tokens shown of each file, what was cut and why).

Around the rendering of a session's bootstrap, the state dir's lifecycle: a
unit's missing state dir is created and initialised first (``agentctl state
init``, never overwriting; event ``state.init``), and the handoff the
bootstrap showed moves to the state dir's history afterwards, so no later
session is shown it again (``agentd.memory.verbs.handoffs``).

All of it reads or writes the agent's state dir, so it runs off the event
loop and bounded in time (``agentd.supervisor.offloop``): ``prepare`` renders,
retires, writes and takes the state dir's fingerprint on a thread; a state
dir that does not answer within ``STATE_TIMEOUT`` gives a bootstrap that says
so (``agentd.memory.bootstrap.render.unavailable``). Events and write failures are
collected on the thread and reported on the loop. A kept copy that cannot be
written (a full disk) is counted (``agentd.events``) and the session goes on;
the file the agent must read that cannot be written is a spawn error that
is tried again (a read-only state dir in file mode), never a wedged unit.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentd import events as ev
from agentd.config.placeholders import placeholders_in
from agentd.config.unit import Unit
from agentd.errors import AgentdError, SpawnError
from agentd.events import WriteHealth
from agentd.fileio import write_atomic
from agentd.memory.bootstrap.render import Bootstrap, BootstrapContext, render, unavailable
from agentd.memory.formats import complete
from agentd.memory.layout import resolve
from agentd.memory.statedir import fingerprint
from agentd.memory.verbs import handoffs
from agentd.memory.verbs.init import init
from agentd.reasons import VERIFY_FAILED
from agentd.session.redact import Redactor
from agentd.supervisor.offloop import off_loop
from agentd.supervisor.policy import SessionEnd

_KEPT = re.compile(r"bootstrap-(\d+)\.md")
STATE_TIMEOUT = 30.0  # s: a state dir that takes longer is reported, the session goes on


@dataclass
class Prepared:
    """A session's bootstrap, ready: the text, the file to give, the state before it."""

    boot: Bootstrap
    file: Path
    fingerprint: str | None  # None: the state dir did not answer
    said: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # events to emit
    failed: list[tuple[str, Path, OSError]] = field(default_factory=list)  # failed writes


def kept_bootstrap(logs_dir: Path, number: int) -> Path:
    """Where the bootstrap of session ``number`` is kept, in the unit's logs dir."""
    return logs_dir / f"bootstrap-{number}.md"


class Briefing:
    def __init__(
        self,
        logs_dir: Path,
        emit: Callable[..., None],
        health: WriteHealth | None = None,
        *,
        given: Path,
    ) -> None:
        self.logs_dir = logs_dir
        self._given = given
        self._emit = emit
        self._health = health
        self.readonly_hashes: dict[str, str] = {}
        self.head: str | None = None

    def context(
        self, unit: Unit, number: int, reason: str, ends: Sequence[SessionEnd], now: float
    ) -> BootstrapContext:
        unchanged = 0
        for end in reversed(ends):
            if end.state_changed:
                break
            unchanged += 1
        return BootstrapContext(
            unit=unit.name,
            session=number,
            last_reason=None if reason == "start" and not ends else reason,
            state_dir=unit.state_dir,
            workdir=unit.workdir,
            layout=resolve(unit.state.layout),
            budget_tokens=unit.state.budget_tokens,
            now=now,
            readonly_hashes=dict(self.readonly_hashes),
            since_commit=self.head,
            unchanged_sessions=unchanged,
            verify=unit.complete.command if unit.complete is not None else None,
            # the session before this one claimed completion and its check refused it
            refusal=ends[-1].refusal if ends and reason == str(VERIFY_FAILED) else None,
        )

    async def prepare(
        self,
        unit: Unit,
        number: int,
        reason: str,
        ends: Sequence[SessionEnd],
        now: float,
        redactor: Redactor,
    ) -> Prepared:
        """Session ``number``'s bootstrap rendered and written, off the loop, the kept copy
        with the secrets ``redactor`` knows or learns from it hidden. SpawnError (not
        permanent) when the file the agent must read cannot be written."""
        ctx = self.context(unit, number, reason, ends, now)
        try:
            done = await off_loop(lambda: self._prepare(unit, ctx, redactor), STATE_TIMEOUT)
        except TimeoutError:
            self._emit(
                ev.STATE_ERROR,
                level="warning",
                unit=unit.name,
                session=number,
                error=f"the state dir {unit.state_dir} did not answer within "
                f"{STATE_TIMEOUT:g}s; the session starts without its state",
            )
            boot = unavailable(ctx, f"the state dir did not answer within {STATE_TIMEOUT:g}s")
            try:
                done = await off_loop(
                    lambda: self._written(unit, ctx.session, boot, None, redactor), STATE_TIMEOUT
                )
            except TimeoutError:
                raise SpawnError(
                    f"cannot write the bootstrap of session {number}: the disk "
                    f"did not answer within {STATE_TIMEOUT:g}s",
                    permanent=False,
                ) from None
        for event, fields in done.said:
            self._emit(event, **fields)
        for what, path, exc in done.failed:
            if self._health is not None:
                self._health.failed(what, path, exc)
        if not done.failed and self._health is not None:
            self._health.ok(f"bootstrap:{unit.name}")
            self._health.ok(f"state:{unit.name}")
        if done.fingerprint is not None:  # rendered from the state dir, not without it
            if not self.readonly_hashes:
                self.readonly_hashes = dict(done.boot.readonly_hashes)
            self.head = done.boot.head
        if any(path == done.file for _, path, _ in done.failed) and _needs_file(unit):
            raise SpawnError(
                f"cannot write the bootstrap the agent reads ({done.file}): {_why(done.failed)}",
                permanent=False,
            )
        return done

    async def state_after(self, unit: Unit) -> tuple[str | None, complete.Completion | None]:
        """The state dir's fingerprint and completion mark after a session (None, None
        when it does not answer in time)."""
        try:
            return await off_loop(
                lambda: (fingerprint(unit.state_dir), complete.read(unit.state_dir)), STATE_TIMEOUT
            )
        except TimeoutError:
            return None, None

    async def clear_completion(self, unit: Unit) -> bool:
        """Remove the state's completion mark (its check refused it); False when the
        state dir did not answer in time or the mark could not be removed."""
        try:
            await off_loop(lambda: complete.clear(unit.state_dir), STATE_TIMEOUT)
        except (TimeoutError, OSError) as exc:
            self._emit(
                ev.STATE_ERROR,
                level="warning",
                unit=unit.name,
                error=f"the refused completion mark could not be removed: {exc or 'timeout'}",
            )
            return False
        return True

    # -- on the state dir's thread ----------------------------------------------------
    def _prepare(self, unit: Unit, ctx: BootstrapContext, redactor: Redactor) -> Prepared:
        said: list[tuple[str, dict[str, Any]]] = []
        failed: list[tuple[str, Path, OSError]] = []
        self._ensure_state_dir(unit, ctx.session, said, failed)
        boot = render(ctx)
        try:
            handoffs.retire(unit.state_dir, unit.state.layout, ctx.session, ctx.now)
        except (OSError, AgentdError) as exc:  # the session starts anyway, with a warning
            said.append(
                (
                    ev.STATE_ERROR,
                    {
                        "level": "warning",
                        "unit": unit.name,
                        "session": ctx.session,
                        "error": f"the handoff could not be moved to history: {exc}",
                    },
                )
            )
            if isinstance(exc, OSError):
                failed.append((f"state:{unit.name}", unit.state_dir, exc))
        done = self._written(unit, ctx.session, boot, fingerprint(unit.state_dir), redactor)
        done.said[:0] = said
        done.failed[:0] = failed
        return done

    def _written(
        self, unit: Unit, number: int, boot: Bootstrap, state: str | None, redactor: Redactor
    ) -> Prepared:
        """Keep ``boot`` in the logs, its secrets hidden; give the agent the whole text
        (``given`` when the kept copy hides something; ``inject.path`` in file mode); a
        write that fails is noted, not raised."""
        kept = redactor.hide_state(boot.text, unit.secret_patterns)
        done = Prepared(boot, kept_bootstrap(self.logs_dir, number), state)
        log_copy = done.file
        try:
            self.logs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(log_copy, kept, mode=0o600)
            self._prune(number, unit.logs.keep_bootstraps)
        except OSError as exc:
            done.failed.append((f"bootstrap:{unit.name}", log_copy, exc))
        if kept != boot.text:
            done.file = self._given
            try:
                done.file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                write_atomic(done.file, boot.text, mode=0o600)
            except OSError as exc:
                done.failed.append((f"bootstrap:{unit.name}", done.file, exc))
        else:  # an earlier session's secrets are not left lying there
            self.forget_given()
        if unit.inject.mode == "file":
            done.file = unit.inject_path
            try:
                done.file.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(done.file, boot.text, mode=0o600)
            except OSError as exc:
                done.failed.append((f"state:{unit.name}", done.file, exc))
                with contextlib.suppress(OSError):  # never give the agent a stale bootstrap
                    done.file.unlink()
        done.said.append(
            (
                ev.SESSION_BOOTSTRAP,
                {
                    "unit": unit.name,
                    "session": number,
                    "file": str(log_copy),
                    "tokens": boot.tokens,
                    "budget": boot.budget,
                    "warnings": boot.warnings or None,
                    "cut": boot.cut or None,
                    "explain": boot.explain(),
                },
            )
        )
        return done

    def _ensure_state_dir(
        self,
        unit: Unit,
        number: int,
        said: list[tuple[str, dict[str, Any]]],
        failed: list[tuple[str, Path, OSError]],
    ) -> None:
        """Create and initialise a unit's state dir that does not exist yet."""
        path = unit.state_dir
        if path.exists():
            return
        layout = unit.state.layout
        try:
            if isinstance(layout, str):
                created = [
                    line.split(None, 1)[1]
                    for line in init(path, layout)
                    if line.startswith("created ")
                ]
            else:  # an inline layout has no templates: the dir is all agentd can make
                path.mkdir(parents=True, exist_ok=True)
                created = []
        except (OSError, AgentdError) as exc:
            said.append(
                (
                    ev.STATE_ERROR,
                    {
                        "level": "warning",
                        "unit": unit.name,
                        "session": number,
                        "error": f"the state dir {path} could not be created: {exc}",
                    },
                )
            )
            if isinstance(exc, OSError):
                failed.append((f"state:{unit.name}", path, exc))
            return
        said.append(
            (
                ev.STATE_INIT,
                {
                    "unit": unit.name,
                    "session": number,
                    "dir": str(path),
                    "layout": layout if isinstance(layout, str) else "inline",
                    "created": created,
                },
            )
        )

    def forget_readonly(self) -> None:
        """Other state files (a changed unit): record their hashes afresh."""
        self.readonly_hashes = {}

    def forget_given(self) -> None:
        """Remove the whole text given to a session (its secrets): not needed now."""
        with contextlib.suppress(OSError):
            self._given.unlink()

    def _prune(self, number: int, keep: int) -> None:
        """Delete the kept bootstraps older than the last ``keep`` (0: keep all)."""
        if not keep:
            return
        for path in self.logs_dir.iterdir():
            found = _KEPT.fullmatch(path.name)
            if found and int(found.group(1)) <= number - keep:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


def _needs_file(unit: Unit) -> bool:
    """Does the agent read the bootstrap from a file (file mode, or ``{bootstrap_file}``)?"""
    if unit.inject.mode == "file":
        return True
    return any(
        "bootstrap_file" in placeholders_in(arg) for arg in [*unit.command, *unit.env.values()]
    )


def _why(failed: list[tuple[str, Path, OSError]]) -> str:
    return "; ".join(f"{exc.strerror or exc}" for _, _, exc in failed) or "it is not there"
