"""Hook settings for agent CLIs that announce compaction (SPEC 7).

Screen text is a guess; a hook is the CLI saying so. ``agentctl hooks
claude-code|codex`` merges two hooks into the project's settings
(``.claude/settings.json`` / ``.codex/hooks.json``):

- ``PreCompact`` runs ``agentctl hook pre-compact``: it tells agentd to end
  the session and start a fresh one from the state files (reason
  ``sentinel:precompact``), and asks the CLI not to compact lossily meanwhile.
  It writes one line to the session's terminal (``/dev/tty``), which agentd
  reads like any output — so it works under ``agentd run`` and ``agentd serve``
  alike, without the control socket.
- ``SessionStart`` (after a compaction, ``/clear`` or a resume) runs
  ``agentctl hook session-start``, which prints the bootstrap: the CLI adds a
  SessionStart hook's output to the new context.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from agentd.terminal.hookline import PRECOMPACT_LINE

SETTINGS = {"claude-code": Path(".claude") / "settings.json",
            "codex": Path(".codex") / "hooks.json"}
_OURS = re.compile(r"-m agentd(\.cli\.agentctl|\.ctl) hook |agentctl hook ")


def hook_command(verb: str) -> str:
    """The command a CLI runs for a hook: this Python, so PATH does not matter."""
    return f"{shlex.quote(sys.executable)} -m agentd.cli.agentctl hook {verb}"


def agentd_hooks() -> dict[str, list[dict[str, Any]]]:
    return {
        "PreCompact": [{"matcher": "manual|auto", "hooks": [
            {"type": "command", "command": hook_command("pre-compact"), "timeout": 10}]}],
        "SessionStart": [{"matcher": "compact|clear|resume", "hooks": [
            {"type": "command", "command": hook_command("session-start"), "timeout": 10}]}],
    }


def merged(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with agentd's hooks in place: earlier agentd entries replaced,
    everyone else's kept."""
    out = dict(settings)
    hooks = dict(out.get("hooks") or {})
    for event, entries in agentd_hooks().items():
        kept = [e for e in hooks.get(event) or [] if not _is_ours(e)]
        hooks[event] = kept + entries
    out["hooks"] = hooks
    return out


def _is_ours(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    return any(isinstance(h, dict) and _OURS.search(str(h.get("command", "")))
               for h in entry.get("hooks") or [])


def write_settings(cli: str, project: Path) -> Path:
    """Merge agentd's hooks into ``project``'s settings file for ``cli``; its path."""
    path = project / SETTINGS[cli]
    current: dict[str, Any] = {}
    if path.exists():
        try:
            current = json.loads(path.read_text(encoding="utf-8") or "{}")
        except ValueError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc}); fix or move it first") from None
        if not isinstance(current, dict):
            raise ValueError(f"{path} does not hold a JSON object; fix or move it first")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(merged(current), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def pre_compact() -> str | None:
    """Tell agentd (through the session's terminal) to restart instead; the reply
    for the CLI, or None when not under agentd."""
    if not os.environ.get("AGENTD_UNIT"):
        return None
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        return None
    try:
        os.write(fd, f"\r\n{PRECOMPACT_LINE} {os.environ.get('AGENTD_SESSION', '')}\r\n".encode())
    finally:
        os.close(fd)
    return json.dumps({"decision": "block",
                       "reason": "agentd starts a fresh session from the state files instead"})


def session_start() -> str:
    """The bootstrap to add to a new or compacted context ('' outside agentd)."""
    path = os.environ.get("AGENTD_BOOTSTRAP_FILE")
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""
