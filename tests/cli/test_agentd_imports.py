"""``agentd`` loads only what the verb it runs needs:
``--version`` not even click, ``check`` the unit schema but nothing of the
daemon, and the daemon neither rich (structlog would pull it in) nor ssl
(asyncio would)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import write_unit

# Never needed to check a unit file or to print the version.
DAEMON = ("agentd.supervisor", "agentd.session", "agentd.process", "agentd.daemon", "asyncio")
PRETTY = ("rich", "ssl", "_ssl")


def imported(args: list[str], cwd: Path, **env: str) -> set[str]:
    """The modules loaded when ``agentd ARGS`` ends (the console script's entry, run by
    a fresh interpreter whose atexit hook lists ``sys.modules``)."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('\\n'.join(k for k, v in sys.modules.items() "
        "if v is not None), file=sys.stderr))\n"
        f"sys.argv = ['agentd', *{args!r}]\n"
        "from agentd.cli.agentd.script import main\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-P", "-c", code],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    names = set(proc.stderr.split())
    assert "agentd.cli.agentd.script" in names, proc.stderr
    return names


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


def test_version_loads_neither_click_nor_the_schema(tmp_path: Path) -> None:
    got = imported(["--version"], tmp_path)
    assert loaded(got, ("click", "pydantic", "yaml", "structlog", *DAEMON)) == []
    out = subprocess.run(
        [sys.executable, "-m", "agentd.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip().startswith("agentd, version ")


def test_check_loads_the_schema_but_nothing_of_the_daemon(tmp_path: Path) -> None:
    write_unit(tmp_path, "small", {"command": ["sleep", "1"], "workdir": str(tmp_path)})
    got = imported(["check"], tmp_path, AGENTD_HOME=str(tmp_path))
    assert "agentd.config.unit" in got and "pydantic" in got
    assert loaded(got, (*DAEMON, "structlog", *PRETTY)) == []


def test_the_daemon_runs_without_rich_ssl_or_pexpect(tmp_path: Path) -> None:
    """``agentd run`` of a unit that ends at once: the supervisor, structlog and asyncio
    are loaded, rich and OpenSSL are not, nor (on Linux, where agents are started by
    posix_spawn: agentd.session.launch) pexpect's fork."""
    write_unit(tmp_path, "quick", {"command": ["true"], "workdir": str(tmp_path)})
    got = imported(["run", "-q", "quick"], tmp_path, AGENTD_HOME=str(tmp_path))
    assert {"agentd.supervisor.service", "structlog", "asyncio"} <= got
    assert loaded(got, PRETTY) == []
    if sys.platform.startswith("linux"):
        assert "agentd.session.launch" in got
        assert loaded(got, ("pexpect", "ptyprocess")) == []
