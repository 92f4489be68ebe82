"""The project's exceptions: each carries the context a user needs to act.

Errors are raised where the fact is known (file, line, key path, unit, pid)
and travel unchanged to the CLI, which prints ``str(error)``.
"""

from __future__ import annotations

from pathlib import Path


class AgentdError(Exception):
    """Base of every error agentd reports to a user."""


class KeyProblem(ValueError):
    """A value is wrong at ``path`` below the key being checked: ``(1, "tail")``.

    Raised by checks that know a finer key than the one they were given (an
    item of a list, a key of a mapping); the unit loader appends ``path`` to
    the key it reports (``state.layout`` + ``(1, "tail")`` -> ``state.layout[1].tail``).
    """

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        self.path = path
        self.message = message
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        super().__init__(f"{where}: {message}" if path else message)


class UnitError(AgentdError):
    """A unit file is invalid: ``units/a.yaml:4: restart.dealy: unknown key``."""

    def __init__(
        self,
        message: str,
        *,
        file: Path | str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.key = key
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        key = f"{self.key}: " if self.key else ""
        return f"{where}{key}{self.message}"


class SpawnError(AgentdError):
    """The agent command could not be started (missing binary, bad workdir...).

    ``permanent``: it cannot be executed as it is (not found, not executable,
    arguments too long), so trying again changes nothing until someone acts;
    otherwise (out of processes or memory) a later try may work.
    """

    def __init__(
        self,
        message: str,
        *,
        unit: str | None = None,
        argv: list[str] | None = None,
        permanent: bool = True,
        reason: str = "spawn-error",
    ):
        self.unit = unit
        self.argv = argv
        self.permanent = permanent
        self.reason = reason  # the end's reason: spawn-error, or worktree-error
        super().__init__(f"{unit}: {message}" if unit else message)


class PathError(AgentdError):
    """A place agentd needs (home, socket, logs) is unusable; names the path."""

    @classmethod
    def cannot(cls, doing: str, path: Path | str, exc: OSError) -> PathError:
        """``cannot create /proc/nope/run: No such file or directory (check AGENTD_HOME)``;
        the OS names the path that failed when it knows a closer one than ``path``."""
        failed = exc.filename if exc.filename is not None else path
        why = (
            "it exists and is not a directory"
            if isinstance(exc, FileExistsError)
            else exc.strerror or str(exc)
        )
        return cls(
            f"cannot {doing} {failed}: {why} (check AGENTD_HOME, --home and the XDG_* variables)"
        )


def describe(exc: BaseException) -> str:
    """One line for an unexpected failure."""
    if isinstance(exc, AgentdError):
        return str(exc)
    if isinstance(exc, OSError):
        where = ", ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        return f"{exc.strerror or exc}" + (f": {where}" if where else "")
    return (
        f"internal error: {type(exc).__name__}: {exc} (run again with AGENTD_DEBUG=1 to see where)"
    )
