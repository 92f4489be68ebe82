"""A unit's definition: the one its sessions use now, the one for the next.

A reload may change a unit while a session runs: ``redefine`` keeps the new
definition for later and ``apply`` switches to it between sessions. What
follows from a definition changes with it: the transcript (its size limits)
and the secrets it hides (from the unit's environment). An attached terminal's
size (``resize``) overrides the file's ``pty`` until the file changes it: a
reload of an unchanged file keeps it.
"""

from __future__ import annotations

from pathlib import Path

from agentd.config.unit import Unit
from agentd.events import WriteHealth
from agentd.session.redact import Redactor, secrets_from_env
from agentd.session.transcript import Transcript
from agentd.supervisor.briefing import Briefing


class Definition:
    def __init__(
        self,
        unit: Unit,
        *,
        base_env: dict[str, str],
        logs_dir: Path,
        briefing: Briefing,
        health: WriteHealth | None = None,
    ) -> None:
        self.unit = unit
        self._health = health
        self._next: Unit | None = None  # a changed definition, for the next session
        self._loaded = unit  # the newest, as its file says it
        self._size: tuple[int, int] | None = None  # an attached terminal's, over the file's
        self._base_env = base_env
        self._logs_dir = logs_dir
        self._briefing = briefing
        self.transcript = self._open_transcript()

    @property
    def newest(self) -> Unit:
        """What the next session will use."""
        return self._next or self.unit

    @property
    def loaded(self) -> Unit:
        """The newest as its file says it, without an attached terminal's size: what a
        reload compares the file with."""
        return self._loaded

    def redefine(self, unit: Unit) -> None:
        """Use ``unit`` from the next ``apply`` on, at the size an attached terminal gave
        (unless ``unit`` changes the file's ``pty``: then at that)."""
        if unit.name != self.unit.name:
            raise ValueError(f"cannot redefine {self.unit.name} as {unit.name}")
        if unit.pty != self._loaded.pty:
            self._size = None
        self._loaded = unit
        self._next = unit if self._size is None else unit.with_pty(*self._size)

    def resize(self, cols: int, rows: int) -> None:
        """Sessions from now on get a ``cols`` x ``rows`` pty (an attached terminal's size)."""
        self._size = cols, rows
        self.unit = self.unit.with_pty(cols, rows)
        if self._next is not None:
            self._next = self._next.with_pty(cols, rows)

    def apply(self) -> None:
        """Switch to the definition ``redefine`` left for the next session."""
        unit, self._next = self._next, None
        if unit is None or unit == self.unit:
            return
        if (unit.state_dir, unit.state.layout) != (self.unit.state_dir, self.unit.state.layout):
            self._briefing.forget_readonly()
        self.unit = unit
        self.transcript.close()
        self.transcript = self._open_transcript()

    def close(self) -> None:
        self.transcript.close()

    def _open_transcript(self) -> Transcript:
        env = dict(self._base_env)
        env.update(self.unit.env)
        self.redactor = Redactor(secrets_from_env(env), self.unit.secret_patterns)
        return Transcript(
            self._logs_dir / "transcript.log",
            max_bytes=self.unit.logs.max_bytes,
            backups=self.unit.logs.backups,
            redactor=self.redactor,
            health=self._health,
            what=f"transcript:{self.unit.name}",
        )
