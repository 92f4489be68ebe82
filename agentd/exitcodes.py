"""``agentd run``'s exit status: what a job engine (Kubernetes, Slurm, systemd)
reads to decide whether to start the unit again.

========  ===================  ================================================
code      name                 meaning
========  ===================  ================================================
0         ``DONE``             the unit is ``done`` (or was already: not run again)
1         ``FAILED``           ``failed``, ``stalled`` or ``stopped``: agentd gave
                               up, or a person or a ``stop`` sentinel stopped it;
                               also a run refused because another agentd holds
                               the unit or its state dir
75        ``INTERRUPTED``      ``EX_TEMPFAIL``: SIGTERM, SIGINT or SIGHUP stopped
                               it gracefully, its state is saved (lifecycle
                               ``interrupted``): start it again to carry on
78        ``CONFIG``           ``EX_CONFIG``: the unit file does not load, or its
                               command cannot be executed; starting it again
                               changes nothing until the file is fixed
========  ===================  ================================================

2 stays click's usage error. 75 and 78 are the BSD ``sysexits.h`` codes
(``EX_TEMPFAIL``, ``EX_CONFIG``) that systemd and the LSB init scripts' readers
also know. Pure: strings in, a number out; no imports of agentd.
"""

from __future__ import annotations

DONE = 0
FAILED = 1
INTERRUPTED = 75  # EX_TEMPFAIL
CONFIG = 78  # EX_CONFIG

SPAWN_ERROR = "spawn-error"  # the reason a unit fails with when its command cannot run


def for_end(state: str, reason: str) -> int:
    """The exit status for a unit that settled in ``state`` for ``reason``."""
    if state == "done":
        return DONE
    if state == "interrupted":
        return INTERRUPTED
    if state == "failed" and reason == SPAWN_ERROR:
        return CONFIG
    return FAILED
