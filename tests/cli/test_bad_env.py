"""Bad environments and bad files, through the real CLIs: a message on stderr,
a non-zero exit, and never a Python traceback.

Each case is (name, how to prepare it in a scratch dir, the command line); the
scratch dir holds ``afile`` (a regular file), ``good/`` (a usable home with a
valid unit ``u``) and whatever the case adds. As root, a directory without
write permission is no obstacle, so unusable places come from paths under a
regular file, from /proc (no mkdir there) and /sys (EPERM).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

AGENTD = [sys.executable, "-m", "agentd.cli"]
AGENTCTL = [sys.executable, "-m", "agentd.cli.agentctl"]
Prepare = Callable[[Path], dict[str, str]]


def _home(sub: str, make: Callable[[Path], None] | None = None) -> Prepare:
    """AGENTD_HOME at ``scratch/sub`` after ``make(home)``."""

    def prepare(scratch: Path) -> dict[str, str]:
        home = scratch / sub
        if make is not None:
            make(home)
        return {"AGENTD_HOME": str(home)}

    return prepare


def _file_at(name: str) -> Callable[[Path], None]:
    def make(home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("a regular file where a directory belongs\n")

    return make


def _fixed(env: dict[str, str]) -> Prepare:
    return lambda _scratch: env


def _xdg_under_file(scratch: Path) -> dict[str, str]:
    """No AGENTD_HOME: the XDG places, all under a regular file."""
    bad = scratch / "afile"
    return {
        "HOME": str(bad / "home"),
        "XDG_CONFIG_HOME": str(bad / "config"),
        "XDG_STATE_HOME": str(bad / "state"),
        "XDG_RUNTIME_DIR": str(bad / "run"),
    }


HOMES: dict[str, Prepare] = {
    "home-in-proc": _fixed({"AGENTD_HOME": "/proc/agentd-nope"}),
    "home-on-sysfs": _fixed({"AGENTD_HOME": "/sys/agentd-nope"}),
    "home-under-a-file": _home("afile/home"),
    "logs-is-a-file": _home("h-logs", _file_at("logs")),
    "units-is-a-file": _home("h-units", _file_at("units")),
    "run-is-a-file": _home("h-run", _file_at("run")),
    "xdg-under-a-file": _xdg_under_file,
    "socket-too-long": lambda s: {
        "AGENTD_HOME": str(s / "good"),
        "AGENTD_SOCKET": str(s / ("x" * 120) / "agentd.sock"),
    },
    "socket-under-a-file": lambda s: {
        "AGENTD_HOME": str(s / "good"),
        "AGENTD_SOCKET": str(s / "afile" / "agentd.sock"),
    },
}

# Each must fail at once with one line: the daemon never gets going.
DAEMON_CASES = [
    "home-in-proc",
    "home-on-sysfs",
    "home-under-a-file",
    "logs-is-a-file",
    "units-is-a-file",
    "run-is-a-file",
    "xdg-under-a-file",
    "socket-too-long",
    "socket-under-a-file",
]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    root = tmp_path / "s"
    root.mkdir()
    (root / "afile").write_text("just a file\n")
    (root / "good" / "units").mkdir(parents=True)
    unit = root / "good" / "units" / "u.yaml"
    unit.write_text(f"command: [{sys.executable}, -c, 'pass']\nworkdir: {root}\n")
    unit.chmod(0o600)
    return root


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTD_HOME", "AGENTD_SOCKET", "XDG_"))
    }
    return subprocess.run(
        argv,
        env={**clean, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def _no_traceback(res: subprocess.CompletedProcess[str], *, one_line: bool = True) -> None:
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    assert res.returncode != 0, res.stdout + res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines, "a failure must say what went wrong"
    if one_line:
        assert len(lines) == 1, res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("case", DAEMON_CASES)
def test_serve_in_a_bad_environment_is_one_line(scratch: Path, case: str) -> None:
    res = _run([*AGENTD, "serve"], HOMES[case](scratch), scratch)
    _no_traceback(res)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["home-in-proc", "home-under-a-file", "logs-is-a-file", "xdg-under-a-file"]
)
def test_run_in_a_bad_environment_is_one_line(scratch: Path, case: str) -> None:
    res = _run(
        [*AGENTD, "run", str(scratch / "good" / "units" / "u.yaml")], HOMES[case](scratch), scratch
    )
    _no_traceback(res)


@pytest.mark.parametrize("case", sorted(HOMES))
def test_agentctl_in_a_bad_environment_is_one_line(scratch: Path, case: str) -> None:
    _no_traceback(_run([*AGENTCTL, "status"], HOMES[case](scratch), scratch))


@pytest.mark.parametrize(
    "verb", [["logs", "u"], ["history", "u"], ["events"], ["start", "u"], ["enable", "u"]]
)
def test_every_daemon_verb_says_where_it_looked(scratch: Path, verb: list[str]) -> None:
    res = _run([*AGENTCTL, *verb], HOMES["home-under-a-file"](scratch), scratch)
    _no_traceback(res)
    assert str(scratch / "afile") in res.stderr


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


BAD_FILES: dict[str, Callable[[Path], Path]] = {
    "eight-megabytes": lambda d: _write(d / "big.yaml", b"#" * (8 * 1024 * 1024)),
    "binary": lambda d: _write(d / "bin.yaml", bytes(range(256)) * 8),
    "not-utf8": lambda d: _write(d / "latin.yaml", "command: [caf\xe9]\n".encode("latin-1")),
    "empty": lambda d: _write(d / "empty.yaml", b""),
    "a-list": lambda d: _write(d / "list.yaml", b"- command\n- workdir\n"),
    "deep": lambda d: _write(d / "deep.yaml", b"[" * 200_000),
    "alias-bomb": lambda d: _write(
        d / "bomb.yaml",
        b"a: &a [x,x,x,x,x,x,x,x,x]\n"
        + b"".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n".encode()
            for i in range(9)
        ),
    ),
    "a-directory": lambda d: (d / "dir.yaml").mkdir() or d / "dir.yaml",
    "a-fifo": lambda d: os.mkfifo(d / "fifo.yaml", 0o600) or d / "fifo.yaml",
    "a-symlink-loop": lambda d: (d / "loop.yaml").symlink_to("loop.yaml") or d / "loop.yaml",
    "missing": lambda d: d / "missing.yaml",
    "world-writable": lambda d: (
        _write(d / "ww.yaml", b"command: [x]\nworkdir: /\n").chmod(0o666) or d / "ww.yaml"
    ),
    "bad-name": lambda d: _write(d / "bad name.yaml", b"command: [x]\nworkdir: /\n"),
    "missing-workdir": lambda d: _write(d / "nowork.yaml", b"command: [x]\nworkdir: /nope/x\n"),
    "command-not-found": lambda d: _write(
        d / "nocmd.yaml", b"command: [no-such-agent-cli]\nworkdir: /\n"
    ),
}


@pytest.mark.slow
def test_check_of_bad_files_names_each_and_shows_no_traceback(scratch: Path) -> None:
    paths = [make(scratch) for make in BAD_FILES.values()]
    res = _run(
        [*AGENTD, "check", *map(str, paths)], {"AGENTD_HOME": str(scratch / "good")}, scratch
    )
    _no_traceback(res, one_line=False)
    for path in paths:
        assert f"{path}:" in res.stderr, path
    assert f"{len(paths)} of {len(paths)} unit file(s) invalid" in res.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["eight-megabytes", "binary", "deep", "a-directory", "missing", "world-writable"]
)
def test_run_of_a_bad_file_is_one_message(scratch: Path, case: str) -> None:
    path = BAD_FILES[case](scratch)
    _no_traceback(
        _run([*AGENTD, "run", str(path)], {"AGENTD_HOME": str(scratch / "good")}, scratch),
        one_line=False,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["state", "--dir", "/proc/agentd-nope", "show"],
        ["state", "--dir", "{afile}", "init"],
        ["state", "--dir", "{afile}/x", "next", "a step"],
        ["state", "--dir", "/sys/agentd-nope", "init"],
        ["hooks", "claude-code", "--dir", "{scratch}/typo"],
        ["hooks", "claude-code", "--dir", "{afile}"],
        ["logs", "../etc"],
        ["status", "no/such"],
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_agentctl_with_a_bad_argument_is_one_message(scratch: Path, argv: list[str]) -> None:
    args = [a.format(afile=scratch / "afile", scratch=scratch) for a in argv]
    res = _run([*AGENTCTL, *args], {"AGENTD_HOME": str(scratch / "good")}, scratch)
    _no_traceback(res, one_line=False)
    assert not (scratch / "typo").exists()  # hooks --dir must exist: nothing created
