"""``agentctl`` loads only what the verb it runs needs (``python -X importtime``),
and still lists every verb."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from agentd.cli.agentctl.group import VERBS, main

# Never needed to record state or ask the daemon for a status.
RUNTIME = (
    "agentd.supervisor",
    "agentd.session",
    "agentd.process",
    "structlog",
    "psutil",
    "pexpect",
    "ptyprocess",
    "asyncio",
    "watchdog",
)
# The daemon's verbs and the state verbs do not load each other.
DAEMON_VERBS = (
    "agentd.daemon",
    "agentd.cli.agentctl.client",
    "agentd.cli.agentctl.output",
    *{spec.partition(":")[0] for spec in VERBS.values()} - {"agentd.cli.agentctl.state"},
)
STATE_VERBS = ("agentd.cli.agentctl.state", "agentd.memory.verbs.ops")
# What only init, show, check, archive or decide need.
STATE_EXTRAS = (
    "agentd.memory.verbs.init",
    "agentd.memory.bootstrap.render",
    "agentd.memory.bootstrap.kinds",
    "agentd.memory.verbs.check",
    "agentd.memory.verbs.archive",
    "agentd.memory.formats.decisions",
    "agentd.memory.formats.snapshots",
)


def imported(args: list[str], cwd: Path, **env: str) -> set[str]:
    """The modules ``python -m agentd.cli.agentctl ARGS`` imports (exit status ignored:
    ``status`` without a daemon still loads all it would use)."""
    proc = subprocess.run(
        [sys.executable, "-P", "-X", "importtime", "-m", "agentd.cli.agentctl", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("import time:")]
    assert lines, proc.stderr
    return {ln.rsplit("|", 1)[1].strip() for ln in lines[1:]}


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    """Those of ``modules`` that are one of ``packages`` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("lazy")
    done = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "agentd.cli.agentctl",
            "state",
            "--dir",
            str(work / ".agent"),
            "init",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return work / ".agent"


STATE_WRITES = [
    ["next", "write the tests"],
    ["done", "wrote the tests"],
    ["decide", "keep one lock", "--why", "because two writers must take turns"],
]


@pytest.mark.parametrize("verb", STATE_WRITES, ids=lambda v: v[0])
def test_state_writes_load_no_daemon_runtime_or_pydantic(state_dir: Path, verb: list[str]) -> None:
    modules = imported(["state", "--dir", str(state_dir), *verb], state_dir.parent)
    assert "agentd.memory.verbs.record" in modules
    assert loaded(modules, (*RUNTIME, *DAEMON_VERBS, "pydantic")) == []
    decide = {"agentd.memory.formats.decisions", "agentd.memory.formats.snapshots"}
    assert set(loaded(modules, STATE_EXTRAS)) == (decide if verb[0] == "decide" else set())


def test_status_loads_the_client_side_only(tmp_path: Path) -> None:
    modules = imported(["status"], tmp_path, AGENTD_HOME=str(tmp_path))
    assert "agentd.daemon.control.client" in modules
    assert loaded(modules, (*RUNTIME, *STATE_VERBS, "pydantic")) == []
    client_side = {
        "agentd.daemon.control",
        "agentd.daemon.control.client",
        "agentd.daemon.control.protocol",
    }
    assert {m for m in modules if m.startswith("agentd.daemon.")} == client_side


def test_top_alone_loads_its_tui_library(tmp_path: Path) -> None:
    assert (
        loaded(imported(["screen", "x"], tmp_path, AGENTD_HOME=str(tmp_path)), ("textual", "pyte"))
        == []
    )
    assert loaded(imported(["--help"], tmp_path), ("textual", "rich")) == []


def test_dashboard_loads_no_web_stack(tmp_path: Path) -> None:
    modules = imported(["dashboard"], tmp_path, AGENTD_HOME=str(tmp_path))
    assert "agentd.daemon.dashboard.access" in modules  # the verb ran (the token file's name)
    assert loaded(modules, ("aiohttp", "jinja2", "agentd.daemon.dashboard.server")) == []


def test_every_verb_is_listed_with_its_help_and_hook_stays_hidden() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(VERBS)
    assert set(VERBS) == {
        "status",
        "cat",
        "show",
        "start",
        "stop",
        "restart",
        "enable",
        "disable",
        "reload",
        "logs",
        "events",
        "history",
        "bootstrap",
        "attach",
        "screen",
        "top",
        "dashboard",
        "install-service",
        "state",
        "hooks",
        "hook",
        "verify",
        "worktree",
    }
    listing = CliRunner().invoke(main, ["--help"]).stdout.split("Commands:\n", 1)[1]
    shown = {line.split()[0]: line.split(None, 1)[1] for line in listing.splitlines()}
    assert set(shown) == set(VERBS) - {"hook"}
    for name, help_line in shown.items():
        command = main.get_command(ctx, name)
        assert command is not None
        assert command.get_short_help_str(200).startswith(help_line.rstrip("."))
