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
session is shown it again (``agentd.memory.handoffs``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from agentd import events as ev
from agentd.config.unit import Unit
from agentd.errors import AgentdError
from agentd.memory import handoffs
from agentd.memory.bootstrap import Bootstrap, BootstrapContext, render
from agentd.memory.init import init
from agentd.memory.layout import resolve
from agentd.memory.statedir import write_atomic
from agentd.session.redact import Redactor, secrets_in
from agentd.supervisor.policy import SessionEnd

_KEPT = re.compile(r"bootstrap-(\d+)\.md")


class Briefing:
    def __init__(self, logs_dir: Path, emit: Callable[..., None], *, given: Path) -> None:
        self.logs_dir = logs_dir
        self._given = given
        self._emit = emit
        self.readonly_hashes: dict[str, str] = {}
        self.head: str | None = None

    def context(self, unit: Unit, number: int, reason: str, ends: Sequence[SessionEnd],
                now: float) -> BootstrapContext:
        unchanged = 0
        for end in reversed(ends):
            if end.state_changed:
                break
            unchanged += 1
        return BootstrapContext(
            unit=unit.name, session=number,
            last_reason=None if reason == "start" and not ends else reason,
            state_dir=unit.state_dir, workdir=unit.workdir,
            layout=resolve(unit.state.layout), budget_tokens=unit.state.budget_tokens,
            now=now, readonly_hashes=self.readonly_hashes,
            since_commit=self.head, unchanged_sessions=unchanged,
        )

    def render(self, unit: Unit, number: int, reason: str, ends: Sequence[SessionEnd],
               now: float) -> Bootstrap:
        """The bootstrap of session ``number``; remembers what the next one needs.
        Creates a missing state dir first, and retires the handoff it shows."""
        self._ensure_state_dir(unit, number)
        boot = render(self.context(unit, number, reason, ends, now))
        if not self.readonly_hashes:
            self.readonly_hashes = dict(boot.readonly_hashes)
        self.head = boot.head
        try:
            handoffs.retire(unit.state_dir, unit.state.layout, number, now)
        except (OSError, AgentdError) as exc:  # the session starts anyway, with a warning
            self._emit(ev.STATE_ERROR, level="warning", unit=unit.name, session=number,
                       error=f"the handoff could not be moved to history: {exc}")
        return boot

    def _ensure_state_dir(self, unit: Unit, number: int) -> None:
        """Create and initialise a unit's state dir that does not exist yet."""
        path = unit.state_dir
        if path.exists():
            return
        layout = unit.state.layout
        try:
            if isinstance(layout, str):
                created = [line.split(None, 1)[1] for line in init(path, layout)
                           if line.startswith("created ")]  # fmt: skip
            else:  # an inline layout has no templates: the dir is all agentd can make
                path.mkdir(parents=True, exist_ok=True)
                created = []
        except (OSError, AgentdError) as exc:
            self._emit(ev.STATE_ERROR, level="warning", unit=unit.name, session=number,
                       error=f"the state dir {path} could not be created: {exc}")
            return
        self._emit(ev.STATE_INIT, unit=unit.name, session=number, dir=str(path),
                   layout=layout if isinstance(layout, str) else "inline", created=created)

    def forget_readonly(self) -> None:
        """Other state files (a changed unit): record their hashes afresh."""
        self.readonly_hashes = {}

    def write(self, unit: Unit, number: int, boot: Bootstrap, redactor: Redactor) -> Path:
        """Keep ``boot`` in the logs, its secrets hidden (and whole at ``inject.path`` in
        file mode); the file to give."""
        redactor.learn(secrets_in(boot.text, unit.secret_patterns))
        kept = redactor.redact_text(boot.text)
        self.logs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        log_copy = self.logs_dir / f"bootstrap-{number}.md"
        write_atomic(log_copy, kept, mode=0o600)
        target = log_copy
        if kept != boot.text:
            target = self._given
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(target, boot.text, mode=0o600)
        if unit.inject.mode == "file":
            target = unit.inject_path
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, boot.text, mode=0o600)
        self._emit(ev.SESSION_BOOTSTRAP, unit=unit.name, session=number, file=str(log_copy),
                   tokens=boot.tokens, budget=boot.budget, warnings=boot.warnings or None,
                   cut=boot.cut or None, explain=boot.explain())
        self._prune(number, unit.logs.keep_bootstraps)
        return target

    def _prune(self, number: int, keep: int) -> None:
        """Delete the kept bootstraps older than the last ``keep`` (0: keep all)."""
        if not keep:
            return
        for path in self.logs_dir.iterdir():
            found = _KEPT.fullmatch(path.name)
            if found and int(found.group(1)) <= number - keep:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
