"""The unit file as a pod runs it, and the secrets it must not carry.

Inside an exported pod everything lives on the unit's volume, mounted at
``ROOT``: ``AGENTD_HOME`` is ``HOME_DIR``, the workdir ``WORKDIR`` (a clone of
the repo the host's workdir came from, when it has one). So the unit file the
ConfigMap carries is the one written, with ``workdir`` set to ``WORKDIR``, an
absolute ``state.dir`` moved to ``STATE_DIR``, host paths under the workdir
(in ``command``, ``env``) pointed at the pod's, and every variable whose name
says it is a secret (KEY, TOKEN, SECRET, PASSWORD: as agentd hides them)
taken out: the pod gets those from a Kubernetes Secret by ``secretKeyRef``,
never from the ConfigMap. A preset's CLI reads its API key from the
environment, so the keys it needs (``PRESET_KEYS``) come from the Secret too,
when there is one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agentd.config.unit import Unit
from agentd.session.redact import SECRET_MARKERS

ROOT = "/agentd"  # the unit's volume
HOME_DIR = f"{ROOT}/home"  # AGENTD_HOME: units/, logs/, lifecycle/
RUN_DIR = f"{HOME_DIR}/run"  # sockets and locks of this pod: an emptyDir
WORKDIR = f"{ROOT}/work"
STATE_DIR = f"{ROOT}/state"  # where an absolute state.dir goes

# The API keys each agent CLI reads from its environment (its documentation's names), by
# preset and by program name (a unit may run `claude` without the preset).
PRESET_KEYS: Mapping[str, tuple[str, ...]] = {
    "claude-code": ("ANTHROPIC_API_KEY",),
    "codex": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY",),
    "aider": ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"),
}
PROGRAM_PRESETS: Mapping[str, str] = {
    "claude": "claude-code",
    "codex": "codex",
    "gemini": "gemini",
    "aider": "aider",
}


def is_secret(name: str) -> bool:
    return any(marker in name.upper() for marker in SECRET_MARKERS)


@dataclass(frozen=True)
class PodUnit:
    text: str  # the unit file for the pod
    secrets: tuple[str, ...]  # variables the unit sets that come from the Secret instead
    wanted: tuple[str, ...]  # variables its preset's CLI reads, if the Secret has them
    host_paths: tuple[str, ...]  # absolute paths in `command` the image must have


def rewrite(unit: Unit, raw: Mapping[str, Any]) -> PodUnit:
    """``raw`` (the unit file's mapping, as written) for a pod of ``unit``."""
    data = dict(raw)
    host_work = str(unit.workdir).rstrip("/")
    data["workdir"] = WORKDIR
    state = dict(data.get("state") or {})
    if isinstance(state.get("dir"), str) and Path(state["dir"]).is_absolute():
        state["dir"] = STATE_DIR
        data["state"] = state
    env = {str(k): v for k, v in (data.get("env") or {}).items()}
    secrets = tuple(sorted(k for k in env if is_secret(k)))
    kept = {k: _moved(v, host_work) for k, v in env.items() if k not in secrets}
    if kept:
        data["env"] = kept
    else:
        data.pop("env", None)
    if "command" in data:
        data["command"] = _moved(data["command"], host_work)
    program = unit.command[0] if unit.command else ""
    preset = unit.preset or PROGRAM_PRESETS.get(Path(program).name, "")
    wanted = tuple(k for k in PRESET_KEYS.get(preset, ()) if k not in secrets)
    host_paths = (program,) if program.startswith("/") and not program.startswith(host_work) else ()
    header = (
        f"# {unit.name}: the unit file for its pod (agentctl export kubernetes)\n"
        f"# from {unit.source or '?'}: workdir {WORKDIR}"
        + (f"; {', '.join(secrets)} from the Secret" if secrets else "")
        + "\n"
    )
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return PodUnit(header + body, secrets, wanted, host_paths)


def _moved(value: Any, host_work: str) -> Any:
    """``value`` with the host workdir at the start of a string replaced by the pod's."""
    if isinstance(value, str):
        if value == host_work or value.startswith(host_work + "/"):
            return WORKDIR + value[len(host_work) :]
        return value
    if isinstance(value, list):
        return [_moved(v, host_work) for v in value]
    return value
