"""Where agentd keeps things (README, "Places"): one ``Paths`` value, resolved once.

With ``AGENTD_HOME`` (or ``--home``) everything lives under it; otherwise the
XDG base directories are used. ``AGENTD_SOCKET`` overrides the socket path.

``lifecycle/`` (beside ``logs/``) holds what a unit's life keeps across daemon
restarts and reboots: whether it is enabled, the state a person or its end
left it in, its restart count (``agentd.supervisor.records.lifecycle``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentd.errors import PathError

# sun_path is 108 bytes on Linux and 104 on macOS, including the final NUL.
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107


@dataclass(frozen=True)
class Paths:
    units: Path
    logs: Path
    run: Path
    socket: Path
    lifecycle: Path

    @classmethod
    def resolve(cls, home: str | Path | None = None, env: Mapping[str, str] | None = None) -> Paths:
        env = os.environ if env is None else env
        home = home or env.get("AGENTD_HOME")
        if home:
            root = Path(home).expanduser().absolute()
            paths = cls(
                root / "units",
                root / "logs",
                root / "run",
                root / "run" / "agentd.sock",
                root / "lifecycle",
            )
        else:
            user = Path.home()
            config = Path(env.get("XDG_CONFIG_HOME") or user / ".config") / "agentd"
            state = Path(env.get("XDG_STATE_HOME") or user / ".local" / "state") / "agentd"
            runtime = env.get("XDG_RUNTIME_DIR")
            run = Path(runtime) / "agentd" if runtime else state / "run"
            paths = cls(
                config / "units",
                state / "logs",
                state / "run",
                run / "agentd.sock",
                state / "lifecycle",
            )
        if env.get("AGENTD_SOCKET"):
            paths = dataclasses.replace(paths, socket=Path(env["AGENTD_SOCKET"]).absolute())
        return paths

    def unit_logs(self, unit: str) -> Path:
        return self.logs / unit

    def unit_lifecycle(self, unit: str) -> Path:
        return self.lifecycle / f"{unit}.json"

    @property
    def run_sessions(self) -> Path:
        """``run/sessions``: the live sessions, for the next agentd after a ``kill -9``."""
        return self.run / "sessions"

    def run_socket(self, unit: str) -> Path:
        """The private socket of ``agentd run UNIT``: it answers for that unit alone."""
        return self.run / "units" / f"{unit}.sock"

    @property
    def events_file(self) -> Path:
        return self.logs / "agentd.jsonl"

    def check_socket(self) -> None:
        """A socket path the OS cannot bind is an error that names it."""
        if len(os.fsencode(self.socket)) > MAX_SOCKET_PATH:
            raise PathError(
                f"socket path is too long for this OS ({len(os.fsencode(self.socket))} bytes, "
                f"max {MAX_SOCKET_PATH}): {self.socket}; set AGENTD_SOCKET to a shorter path"
            )


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 if missing; PathError if it cannot be."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:  # a read-only home, one under a regular file, /proc...
        raise PathError.cannot("create", path, exc) from None
    return path
