"""Installing the real agent CLIs: once per machine (once per CI run, on a fresh
one), into a cache dir, whatever the number of test processes asking at once.

The cache is ``$AGENTD_TEST_CACHE`` (default ``~/.cache/agentd-tests``), one
directory per CLI and version (``claude-code-2.1.332``, ``aider-0.86.2``). The
npm CLIs install with ``npm install --prefix DIR``, aider into a venv of its
own with pip. A file lock beside each directory makes one process install it
while the others wait (pytest-xdist's workers, two runs side by side); a
marker file written last tells a finished install from one cut short, which is
removed and done again. When the registry or the tool is missing, or the
install fails, the test is skipped and the reason says so, in capitals.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("AGENTD_TEST_CACHE") or Path.home() / ".cache" / "agentd-tests")
NPM_TIMEOUT = 300  # s: one npm install (Claude Code 2.1.332 is 400 MB)
PIP_TIMEOUT = 900  # s: aider and its dependencies (~700 MB)
LOCK_WAIT = 1200  # s: how long a process waits for another one's install
DONE = ".agentd-installed"  # written when an install finished


def skip(why: str) -> None:
    pytest.skip(f"REAL CLI TESTS SKIPPED: {why}")


@contextlib.contextmanager
def _locked(prefix: Path) -> Iterator[None]:
    """Hold the install lock of ``prefix`` (waiting up to LOCK_WAIT for another holder)."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"{prefix.name}.lock", "w") as lock:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    skip(f"another process has been installing {prefix} for {LOCK_WAIT} s")
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(argv: list[str], timeout: float, what: str) -> None:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        skip(f"{what} took over {timeout:g} s")
    except OSError as exc:
        skip(f"{what} could not run: {exc}")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        skip(f"{what} failed (exit {done.returncode}): " + " | ".join(tail))


def _installed(prefix: Path, exe: Path, version: str, install: Callable[[], None]) -> Path:
    """``exe`` under ``prefix``, after ``install()`` if it is not there yet."""
    if (prefix / DONE).exists() and exe.exists():
        return exe
    with _locked(prefix):
        if (prefix / DONE).exists() and exe.exists():  # installed while we waited
            return exe
        if not (exe.exists() and _says(exe, version)):  # else: installed before markers
            shutil.rmtree(prefix, ignore_errors=True)  # an install cut short: again
            try:
                install()
            except BaseException:
                shutil.rmtree(prefix, ignore_errors=True)  # nothing half-made is left
                raise
            if not exe.exists():
                skip(f"the install into {prefix} made no {exe.name}")
        (prefix / DONE).write_text(time.strftime("%Y-%m-%dT%H:%M:%S\n"), encoding="utf-8")
    return exe


def npm_cli(package: str, version: str, name: str, binary: str) -> Path:
    """The ``binary`` of npm ``package@version``, installed into CACHE/NAME-VERSION."""
    prefix = CACHE / f"{name}-{version}"
    exe = prefix / "node_modules" / ".bin" / binary

    def install() -> None:
        npm = shutil.which("npm")
        if npm is None:
            skip(f"npm is not on PATH, cannot install {package}@{version}")
        prefix.mkdir(parents=True)
        _run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                f"{package}@{version}",
            ],
            NPM_TIMEOUT,
            f"npm install {package}@{version}",
        )

    return _checked(_installed(prefix, exe, version, install), version)


def pip_cli(package: str, version: str, name: str, binary: str) -> Path:
    """The ``binary`` of PyPI ``package==version``, installed in a venv of its own,
    CACHE/NAME-VERSION (its dependencies must not meet agentd's)."""
    prefix = CACHE / f"{name}-{version}"
    exe = prefix / "bin" / binary

    def install() -> None:
        _run([sys.executable, "-m", "venv", str(prefix)], 120, f"python -m venv {prefix}")
        pip = str(prefix / "bin" / "pip")
        _run(
            [pip, "install", "-q", "--disable-pip-version-check", f"{package}=={version}"],
            PIP_TIMEOUT,
            f"pip install {package}=={version}",
        )

    return _checked(_installed(prefix, exe, version, install), version)


def _version(exe: Path) -> str:
    try:
        said = subprocess.run(
            [str(exe), "--version"],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"({exe} --version failed: {exc})"
    return (said.stdout + said.stderr).strip()


def _says(exe: Path, version: str) -> bool:
    return version in _version(exe)


_CHECKED: set[tuple[Path, str]] = set()  # asked once per process: aider takes 5 s to say


def _checked(exe: Path, version: str) -> Path:
    """``exe``, if its ``--version`` names ``version``."""
    if (exe, version) in _CHECKED:
        return exe
    said = _version(exe)
    if version not in said:
        skip(f"{exe} says {said[:200]!r}, not {version}")
    _CHECKED.add((exe, version))
    return exe


# What each CLI is, for ``python -m tests.realcli.install`` (CI installs them all
# once, before the tests): the package, its cache name, its program.
CLIS: dict[str, tuple[str, str, str, str]] = {  # cli: (registry, package, cache name, program)
    "claude-code": ("npm", "@anthropic-ai/claude-code", "claude-code", "claude"),
    "codex": ("npm", "@openai/codex", "codex", "codex"),
    "gemini": ("npm", "@google/gemini-cli", "gemini-cli", "gemini"),
    "aider": ("pypi", "aider-chat", "aider", "aider"),
}


def install(cli: str, version: str) -> Path:
    """The program of ``cli`` at ``version``, installed into the cache if need be."""
    registry, package, name, binary = CLIS[cli]
    fetch = npm_cli if registry == "npm" else pip_cli
    return fetch(package, version, name, binary)


def main() -> int:
    """Install every pinned version (AGENTD_TEST_<CLI> overrides them); say what
    could not be installed, loudly, and go on: those tests will skip."""
    from tests.realcli.pins import PINNED, versions

    for cli in PINNED:
        for version in versions(cli):
            began = time.monotonic()
            try:
                exe = install(cli, version)
            except pytest.skip.Exception as exc:
                print(f"install: {cli}@{version}: {exc}", flush=True)
                continue
            print(f"install: {cli}@{version}: {exe} ({time.monotonic() - began:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
