"""The termination message: one line of JSON saying how ``agentd run`` ended.

::

    {"unit": "cart", "state": "interrupted", "reason": "interrupted:SIGTERM",
     "sessions": 4, "restarts": 3, "exit_code": 75}

For the engine that ran it: Kubernetes shows a container's
``/dev/termination-log`` (its ``terminationMessagePath``) in the pod's status
(``kubectl get pod -o jsonpath='{..terminated.message}'``); anything else can
name a file in ``AGENTD_TERMINATION_LOG``. Written on every exit of ``agentd
run`` that knows its unit, to ``$AGENTD_TERMINATION_LOG``, else to
``/dev/termination-log`` where that exists and is writable, else nowhere.
``sessions`` is the last session's number (numbers carry on across runs),
``restarts`` the unit's restart count; ``message`` (when there is one) says
why the run was refused or the unit did not load. Kubernetes keeps 4096
bytes of it: the message is cut to fit.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT = Path("/dev/termination-log")
ENV = "AGENTD_TERMINATION_LOG"
LIMIT = 4096  # bytes Kubernetes keeps of a termination message
MESSAGE_MAX = 1024  # characters of ``message``: the line stays far below LIMIT


@dataclass(frozen=True)
class Ending:
    """How one ``agentd run`` ended: the exit status and what the message says."""

    unit: str
    state: str
    reason: str
    sessions: int
    restarts: int
    exit_code: int
    message: str = ""

    def line(self) -> str:
        data = asdict(self)
        if not self.message:
            del data["message"]
        elif len(self.message) > MESSAGE_MAX:
            data["message"] = self.message[: MESSAGE_MAX - 1] + "…"
        return json.dumps(data, ensure_ascii=False) + "\n"


def target(env: Mapping[str, str] | None = None) -> Path | None:
    """Where the message goes: ``$AGENTD_TERMINATION_LOG``, else ``/dev/termination-log``
    if it exists and is writable, else nowhere (None)."""
    given = (os.environ if env is None else env).get(ENV)
    if given:
        return Path(given)
    return DEFAULT if os.access(DEFAULT, os.W_OK) else None


def write(ending: Ending, env: Mapping[str, str] | None = None) -> str | None:
    """Write ``ending``'s line (replacing what was there); why not, if it could not be."""
    path = target(env)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, ending.line().encode("utf-8"))
            with contextlib.suppress(OSError):  # a pipe or a tty cannot be fsync'd: written
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"cannot write the termination message to {path}: {exc.strerror or exc}"
    return None
