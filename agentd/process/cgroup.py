"""A cgroup of its own for each session (Linux, cgroup v2): nothing escapes it.

The environment marker and the session id find what a session started unless
a process clears its environment (``env -i``), leaves the session
(``setsid``) and double-forks: then nothing but its cgroup still ties it to
the session, because every process is born into its parent's cgroup and
only a process allowed to write ``cgroup.procs`` elsewhere can leave it.

So when agentd may create cgroups below its own (``delegated_base``), each
session gets ``<base>/agentd-<marker>``; the child joins it before exec
(``agentd.session.child``), its pids are part of the session
(``agentd.process.tree``), and a reclaim after ``kill -9`` ends them with
``cgroup.kill`` (Linux 5.14+; else a SIGKILL to each member until it is
empty). Where agentd may not (macOS, cgroup v1, a cgroup it does not own),
``delegated_base`` is None and the marker scan is all there is.

agentd's own cgroup counts as delegated when it is writable and either
agentd runs as a user (systemd gives a user's service its cgroup only with
``Delegate=yes``), or the cgroup is marked delegated (the ``trusted.delegate``
or ``user.delegate`` xattr systemd sets), or it is the root of the hierarchy
(a container's own). ``AGENTD_CGROUP=off`` turns cgroups off;
``AGENTD_CGROUP=/sys/fs/cgroup/...`` names the delegated cgroup to use.
A session record (``run/sessions``) is obeyed only for the cgroup agentd
would make for its marker there (``recorded``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
from pathlib import Path

CGROUP_ENV = "AGENTD_CGROUP"
PREFIX = "agentd-"
_DELEGATE_XATTRS = ("trusted.delegate", "user.delegate")


@functools.cache
def delegated_base() -> Path | None:
    """The cgroup (v2) under which sessions get cgroups of their own; None if none may."""
    if not sys.platform.startswith("linux"):
        return None
    chosen = os.environ.get(CGROUP_ENV, "")
    if chosen == "off":
        return None
    base = Path(chosen) if chosen else own_cgroup()
    if base is None or not (base / "cgroup.procs").is_file():
        return None
    if not chosen and not _delegated(base):
        return None
    if not os.access(base, os.W_OK | os.X_OK):
        return None
    return base


def own_cgroup() -> Path | None:
    """This process's cgroup v2 directory (from /proc/self/cgroup and the mounts)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    relative = next((line[3:] for line in lines if line.startswith("0::")), None)
    if relative is None:
        return None
    for mount in mounts:
        fields = mount.split()
        dash = fields.index("-") if "-" in fields else -1
        if dash < 0 or fields[dash + 1] != "cgroup2":
            continue
        root, point = fields[3], fields[4]
        inside = os.path.relpath(relative, root) if root != "/" else relative.lstrip("/")
        if inside.startswith(".."):
            continue  # our cgroup is not visible under this mount
        return Path(point) / inside if inside != "." else Path(point)
    return None


def _delegated(base: Path) -> bool:
    if os.geteuid() != 0:
        return True  # systemd hands a user only a delegated cgroup
    if not (base / "cgroup.type").exists():
        return True  # the hierarchy's root: nobody manages it but us
    for name in _DELEGATE_XATTRS:
        with contextlib.suppress(OSError):
            if os.getxattr(base, name) == b"1":
                return True
    return False


def cgroup_name(marker: str) -> str:
    """The name of the cgroup of the session with ``marker`` (under the delegated base)."""
    return PREFIX + marker.replace("/", "_").replace(":", ".")


def session_cgroup(marker: str) -> Path | None:
    """Create the cgroup of the session with ``marker``; None when agentd may not."""
    base = delegated_base()
    if base is None:
        return None
    path = base / cgroup_name(marker)
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return None
    return path


def recorded(path: str | None, marker: str) -> Path | None:
    """The cgroup a session record names, if it is the one ``session_cgroup`` makes for
    ``marker`` under the delegated base now; None otherwise. A record is a file: what
    it names is killed whole (``kill``), so any other cgroup is not obeyed (its
    session's processes are still found by their marker)."""
    base = delegated_base()
    if not path or base is None:
        return None
    expected = base / cgroup_name(marker)
    return expected if Path(path) == expected else None


def members(cgroup: Path | None) -> list[int]:
    """The pids in ``cgroup`` now (none when it is gone)."""
    if cgroup is None:
        return []
    try:
        text = (cgroup / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(pid) for pid in text.split()]


def kill(cgroup: Path) -> list[int]:
    """SIGKILL everything in ``cgroup`` at once; the pids that were in it."""
    pids = members(cgroup)
    if not pids:
        return []
    try:
        (cgroup / "cgroup.kill").write_text("1")
    except OSError:  # before Linux 5.14: one by one (a fork in between is caught next time)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return pids


def remove(cgroup: Path | None) -> bool:
    """Remove the (empty) cgroup; whether it is gone. A cgroup still in use stays."""
    if cgroup is None:
        return True
    try:
        cgroup.rmdir()
    except FileNotFoundError:
        return True
    except OSError:  # EBUSY: a process is still in it (the next reclaim ends it)
        return False
    return True
