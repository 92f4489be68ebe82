"""systemd and launchd: the notify protocol, and the service files.

The notify protocol (``Type=notify``), without libsystemd:

systemd passes ``$NOTIFY_SOCKET`` (a path, or ``@name`` for an abstract
socket) and, with ``WatchdogSec=``, ``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``).
The daemon sends ``READY=1`` once it listens, ``STATUS=...`` as things change,
``WATCHDOG=1`` at half the watchdog interval and ``STOPPING=1`` on its way out.
Each message is one datagram; a failure to send is never fatal.

The service files ``agentctl install-service`` writes are the templates in
``init/`` with the real paths of this agentd and the user's environment.
"""

from __future__ import annotations

import contextlib
import os
import plistlib
import socket
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any


class SystemdNotify:
    """Sends to ``$NOTIFY_SOCKET`` if set; a no-op otherwise.

    The variables are taken out of ``env`` (like ``sd_notify(unset_environment=1)``):
    what agentd starts (sessions, notify commands) must not talk to systemd as us.
    """

    def __init__(self, env: MutableMapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        addr = env.pop("NOTIFY_SOCKET", "")
        self.address = "\0" + addr[1:] if addr.startswith("@") else addr
        self.watchdog = watchdog_interval(env)
        for name in ("WATCHDOG_USEC", "WATCHDOG_PID"):
            env.pop(name, None)

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, *fields: str) -> bool:
        """Send ``READY=1``, ``STATUS=text``... in one datagram; False if it failed."""
        if not self.address:
            return False
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.connect(self.address)
            s.sendall("\n".join(fields).encode("utf-8", "replace"))
            return True
        return False


def watchdog_interval(env: Mapping[str, str]) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of ``WATCHDOG_USEC``), or None.

    ``WATCHDOG_PID``, when set, must be ours: the variables may have been
    inherited from a parent that systemd watches instead.
    """
    pid = env.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 2e6 if usec > 0 else None


# --- service files: what ``agentctl install-service`` writes ------------------------------

# The templates in a source checkout; an installed wheel has no init/, so the
# same text is kept here too (a test checks the two agree).
INIT_DIR = Path(__file__).resolve().parents[2] / "init"
SYSTEMD_FILE = "agentd.service"
LAUNCHD_FILE = "com.agentd.plist"
SYSTEMD_TEMPLATE = """\
# systemd user service for agentd.
#   install: agentctl install-service  (or copy to ~/.config/systemd/user/ and
#   fix ExecStart), then: systemctl --user daemon-reload && systemctl --user enable --now agentd
[Unit]
Description=agentd - supervisor for AI coding-agent CLIs
After=default.target

[Service]
Type=notify
ExecStart=%h/.local/bin/agentd serve
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=2
# mixed: SIGTERM goes to agentd alone, which ends each session's tree with
# its own stop signal and grace; SIGKILL to the whole control group after
# TimeoutStopSec is the backstop if agentd cannot.
KillMode=mixed
TimeoutStopSec=60
# agentd gives each session a cgroup of its own under this one, so that
# nothing a session starts escapes being ended with it (README: Process
# containment).
Delegate=yes
WatchdogSec=60

[Install]
WantedBy=default.target
"""
LAUNCHD_TEMPLATE: dict[str, Any] = {
    "Label": "com.agentd",
    "ProgramArguments": ["/usr/local/bin/agentd", "serve"],
    "KeepAlive": True,
    "RunAtLoad": True,
    "ProcessType": "Background",
    "StandardErrorPath": "/tmp/agentd.err.log",
}
# Carried into the service: agent CLIs live on the user's PATH (nvm, ~/.local/bin),
# which the service manager's minimal environment lacks.
CARRIED_ENV = ("PATH", "AGENTD_HOME", "AGENTD_SOCKET", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


def daemon_argv() -> list[str]:
    """How to start this agentd: the ``agentd`` script beside this python, else ``-m``."""
    script = Path(sys.executable).parent / "agentd"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), "serve"]
    return [sys.executable, "-m", "agentd.cli", "serve"]


def _sd_quote(arg: str) -> str:
    arg = arg.replace("%", "%%")
    if arg and not any(c in arg for c in " \t\"'\\;$"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_unit(argv: list[str], env: Mapping[str, str], template: str | None = None) -> str:
    """The systemd user unit: ExecStart with real paths, the environment carried over."""
    text = template if template is not None else _template(SYSTEMD_FILE, SYSTEMD_TEMPLATE)
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("ExecStart="):
            line = "ExecStart=" + " ".join(_sd_quote(a) for a in argv)
        out.append(line)
        if line.strip() == "[Service]":
            out += [f"Environment={_sd_quote(f'{k}={env[k]}')}" for k in CARRIED_ENV if env.get(k)]
    return "\n".join(out) + "\n"


def launchd_plist(
    argv: list[str], env: Mapping[str, str], log: Path, template: bytes | None = None
) -> bytes:
    """The launchd agent: ProgramArguments with real paths, the environment carried over."""
    if template is None and (INIT_DIR / LAUNCHD_FILE).is_file():
        template = (INIT_DIR / LAUNCHD_FILE).read_bytes()
    plist = plistlib.loads(template) if template else dict(LAUNCHD_TEMPLATE)
    plist["ProgramArguments"] = list(argv)
    plist["EnvironmentVariables"] = {k: env[k] for k in CARRIED_ENV if env.get(k)}
    plist["StandardErrorPath"] = str(log)
    return plistlib.dumps(plist)


def service_path(kind: str, env: Mapping[str, str]) -> Path:
    """Where the service manager looks for a per-user agentd service file."""
    home = Path(env.get("HOME") or Path.home())
    if kind == "launchd":
        return home / "Library" / "LaunchAgents" / LAUNCHD_FILE
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return config / "systemd" / "user" / SYSTEMD_FILE


def user_bus(env: Mapping[str, str]) -> str | None:
    """Where ``systemctl --user`` would reach this user's service manager (its D-Bus),
    or None: no user session (``su``, ``sudo``, ssh without lingering, a container)."""
    address = env.get("DBUS_SESSION_BUS_ADDRESS")
    if address:
        return address
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime, "bus").exists():
        return f"unix:path={Path(runtime, 'bus')}"
    return None


def _template(name: str, fallback: str) -> str:
    path = INIT_DIR / name
    return path.read_text(encoding="utf-8") if path.is_file() else fallback
