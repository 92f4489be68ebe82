"""The versions of the real agent CLIs the tests run: pinned here, and only here.

Each CLI's pins can be replaced for one run by an environment variable holding
a comma-separated list of versions, so that trying the newest release is one
command away::

    AGENTD_TEST_CLAUDE_CODE=2.1.340 .venv/bin/python -m pytest -q tests/realcli
    AGENTD_TEST_CODEX=0.172.0 AGENTD_TEST_GEMINI=0.62.0 AGENTD_TEST_AIDER=0.87.0 ...

(``scripts/cli_texts.py VERSION...`` checks a release's texts against the
presets without running it.) The first version of a list is the one the tests
that need just one run.
"""

from __future__ import annotations

import os

PINNED: dict[str, tuple[str, ...]] = {
    "claude-code": ("2.1.197", "2.1.332"),  # 2.1.332: the newest on npm on 2026-12-01
    "codex": ("0.171.0",),
    "gemini": ("0.61.0",),
    "aider": ("0.86.2",),
}


def env_var(cli: str) -> str:
    """The variable that overrides ``cli``'s pins: AGENTD_TEST_CLAUDE_CODE, ..."""
    return "AGENTD_TEST_" + cli.upper().replace("-", "_")


def versions(cli: str) -> tuple[str, ...]:
    """The versions of ``cli`` to test: its override, else its pins."""
    given = os.environ.get(env_var(cli), "")
    chosen = tuple(v.strip() for v in given.split(",") if v.strip())
    return chosen or PINNED[cli]


CLAUDE_CODE = versions("claude-code")[0]
CODEX = versions("codex")[0]
GEMINI = versions("gemini")[0]
AIDER = versions("aider")[0]
