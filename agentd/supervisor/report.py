"""What ``agentctl status`` says of a unit: from its service, or, for a unit whose
file does not load, from its records on disk."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentd.paths import Paths
from agentd.supervisor.budget import usage_today
from agentd.supervisor.records import lifecycle
from agentd.supervisor.records.history import History, last_end
from agentd.supervisor.states import ACTIVE, State
from agentd.times import iso

if TYPE_CHECKING:
    from agentd.supervisor.service import Service


def status_of(service: Service) -> dict[str, Any]:
    """A unit's status (the JSON of ``agentctl status``), from its running service."""
    session = service.session
    out: dict[str, Any] = {
        "unit": service.unit.name,
        "state": str(service.state),
        "pid": session.pid if session and service.state == State.RUNNING else None,
        "session": service.session_no,
        "uptime_s": round(session.uptime, 3) if session else 0.0,
        "output_bytes": session.bytes_out if session else 0,
        "restarts": service.restarts,
        "last_reason": service.last_reason,
        "last_at": iso(service.last_at) if service.last_at is not None else None,
        "since": iso(service.since),
        "enabled": service.enabled,
    }
    usage = service.session_usage()
    if usage is not None:  # the running session's so far, else the last one's
        out["usage"] = usage
    if service.state == State.PAUSED and service.paused_until is not None:
        out["paused_until"] = iso(service.paused_until)
    if session is not None and service.state == State.RUNNING and session.stopped_by_signal:
        out["process"] = "stopped"  # SIGSTOP: running as far as agentd goes, yet idle
    if service.detail:  # e.g. the OS error of a command that cannot be executed
        out["detail"] = service.detail
    if service.conflict and service.state not in ACTIVE:  # waits for its state dir
        out["state"] = str(State.CONFLICT)
        out["detail"] = service.conflict
    unit = service.unit
    checks = service.checks
    if unit.complete is not None or checks.last is not None:
        out["verify"] = checks.last  # the last completion check: ok, said, at...
    if checks.running is not None:
        command, since = checks.running
        out["verifying"] = {"command": command, "since": iso(since)}
    if unit.worktree is not None:
        out["worktree"] = {"path": str(unit.worktree.path), "branch": unit.worktree.branch}
    return out


def status_on_disk(paths: Paths, name: str, problem: dict[str, Any]) -> dict[str, Any]:
    """What is known of a unit whose file does not load: its record on disk."""
    records = History(paths.unit_logs(name) / "history.jsonl").recent()
    reason, at = last_end(records)
    kept = lifecycle.read(paths.unit_lifecycle(name))
    return {
        "unit": name,
        "state": str(State.INVALID),
        "pid": None,
        "session": max((int(r.get("session", 0)) for r in records), default=0),
        "uptime_s": 0.0,
        "output_bytes": 0,  # the same keys as status_of's: scripts read any unit alike
        "restarts": kept.restarts,
        "last_reason": reason,
        "last_at": iso(at) if at is not None else None,
        "since": iso(problem["since"]),
        "enabled": kept.enabled,
    }


def details_of(service: Service, now: float) -> dict[str, Any]:
    """What ``agentctl status UNIT`` shows (``status_of`` and the unit's file, command,
    places, today's use of its budget); the caller adds the process count and the
    transcript's last lines, which take I/O."""
    unit, used = service.definition, service.unit  # the newest, and the running session's
    records = History(service.paths.unit_logs(unit.name) / "history.jsonl").recent()
    today = usage_today(records, now)
    run = service.current
    return {
        **status_of(service),
        "unit_file": str(unit.source) if unit.source else None,
        "description": unit.description,
        "preset": unit.preset,
        "command": list(used.command),
        "workdir": str(used.workdir),
        "state_dir": str(used.state_dir),
        "transcript": str(service.transcript.path),
        "session_reason": run.reason if run is not None else None,
        "today": {
            "sessions": today.sessions,
            "runtime_s": round(today.runtime_s, 1),
            "output_tokens": today.tokens,
            "tokens": today.all_tokens,
            "cost_usd": today.cost_usd,
            "estimated_sessions": today.estimated,  # counted from the screen estimate
        },
        "budget": unit.budget.model_dump(mode="json"),
    }


def details_on_disk(paths: Paths, name: str, problem: dict[str, Any]) -> dict[str, Any]:
    """``details_of`` for a unit whose file does not load: what its records say."""
    return {
        **status_on_disk(paths, name, problem),
        "unit_file": problem.get("file"),
        "description": "",
        "preset": None,
        "command": None,
        "workdir": None,
        "state_dir": None,
        "transcript": str(paths.unit_logs(name) / "transcript.log"),
        "session_reason": None,
    }
