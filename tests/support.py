"""Helpers shared by the test modules (fixtures are in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml


def write_unit(home: Path, name: str, unit: dict[str, Any]) -> Path:
    """Write ``units/NAME.yaml`` (mode 0600) under ``home``; the workdir defaults to home/work."""
    unit = dict(unit)
    if "workdir" not in unit:
        work = home / "work"
        work.mkdir(exist_ok=True)
        unit["workdir"] = str(work)
    path = home / "units" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(unit, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return path


def agentd(
    home: Path,
    *args: str,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI (``python -m agentd.cli``) with AGENTD_HOME=home."""
    full_env = dict(os.environ, AGENTD_HOME=str(home), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "agentd.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


def events(home: Path, name: str | None = None) -> list[dict[str, Any]]:
    path = home / "logs" / "agentd.jsonl"
    if not path.exists():
        return []
    out = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [e for e in out if name is None or e["event"] == name]


def records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def agentd_popen(
    home: Path,
    *args: str,
    stderr: int = subprocess.PIPE,
) -> subprocess.Popen[str]:
    """The real CLI in the background (AGENTD_HOME=home); the caller ends and reaps it."""
    return subprocess.Popen(
        [sys.executable, "-m", "agentd.cli", *args],
        env=dict(os.environ, AGENTD_HOME=str(home)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )


def noted_pid(path: Path) -> int | None:
    """The first pid the fake agent noted in ``$FAKE_PIDS`` (None while there is none)."""
    try:
        first = path.read_text().split()
    except FileNotFoundError:
        return None
    return int(first[0]) if first else None
