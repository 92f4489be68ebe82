"""The hooks agentd gives an agent CLI: what they run, and how each CLI takes them.

Screen text is a guess; a hook is the CLI saying so. Two hooks, both running
``agentctl hook VERB`` (``agentd.cli.agentctl.hooks`` says what they do):

- ``PreCompact`` -> ``pre-compact``: the CLI is about to compact; agentd ends
  the session while the CLI waits for its hook, so no summary request is sent;
- ``SessionStart`` -> ``session-start``: prints the bootstrap, which the CLI
  adds to a new or compacted context.

Where they go (unit key ``hooks``, set by the presets):

- ``claude-code``: ``--settings '<json>'`` on the command line, for that session
  only (Claude Code 2.1.197 and 2.1.332 take a JSON string or a file there, and
  add its hooks to those of the project and the user: the project's
  ``.claude/settings.json`` is neither needed nor touched);
- ``codex``: ``-c hooks.EVENT=[...]`` (TOML) for that session, with
  ``--dangerously-bypass-hook-trust``: Codex 0.171.0 stops at a "Hooks need
  review" dialog before the first turn for every new hook, and nobody is there
  to answer it; the flag also runs the project's own hooks without that review;
- ``none``: no hooks (``agentctl hooks CLI --dir WORKDIR`` writes them into
  the project's settings instead; so must a command that is a wrapper, or
  that gives Claude Code a ``--settings`` of its own).

Pure: no I/O; the interpreter's path (``sys.executable``) is the only thing read.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import PurePath
from typing import Any, Literal

CliHooks = Literal["claude-code", "codex", "none"]
# The CLI waits for the hook up to its timeout; agentd ends the session (hook
# included) well within it. Should agentd not, the hook gives up first and the
# CLI compacts after all: lossy, but the agent goes on.
PRECOMPACT_TIMEOUT = 120
SESSION_START_TIMEOUT = 10
# The program names the hooks are given to: a wrapper script in front of the
# CLI would take the flags for its own.
PROGRAMS: dict[str, tuple[str, ...]] = {
    "claude-code": ("claude", "claude.exe"),
    "codex": ("codex", "codex.exe"),
}


def hook_command(verb: str) -> str:
    """The command a CLI runs for a hook: this Python, so PATH does not matter,
    ``exec``'d by the CLI's shell, so the hook is the CLI's own child."""
    return f"exec {shlex.quote(sys.executable)} -m agentd.cli.agentctl hook {verb}"


def agentd_hooks() -> dict[str, list[dict[str, Any]]]:
    """agentd's hooks in Claude Code's settings shape (Codex takes the same)."""
    return {
        "PreCompact": [
            {
                "matcher": "manual|auto",
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command("pre-compact"),
                        "timeout": PRECOMPACT_TIMEOUT,
                    }
                ],
            }
        ],
        "SessionStart": [
            {
                "matcher": "compact|clear|resume",
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command("session-start"),
                        "timeout": SESSION_START_TIMEOUT,
                    }
                ],
            }
        ],
    }


def takes_hooks(kind: str, argv: list[str]) -> bool:
    """Is ``argv``'s program the CLI ``kind`` gives hooks to? Not when the command
    names a settings file of its own (Claude Code takes one ``--settings``: ours
    would replace it, or it ours)."""
    if not argv or PurePath(argv[0]).name not in PROGRAMS.get(kind, ()):
        return False
    return kind != "claude-code" or not any(
        a == "--settings" or a.startswith("--settings=") for a in argv[1:]
    )


def with_hooks(kind: str, argv: list[str]) -> list[str]:
    """``argv`` with agentd's hooks for this session, as CLI ``kind`` takes them
    (its program first, then the hooks, then the rest); unchanged for ``none``
    or a program that is not that CLI (``takes_hooks``)."""
    if not takes_hooks(kind, argv):
        return list(argv)
    program, rest = argv[0], list(argv[1:])
    if kind == "claude-code":
        settings = json.dumps({"hooks": agentd_hooks()}, separators=(",", ":"))
        return [program, "--settings", settings, *rest]
    return [program, *codex_overrides(), *rest]


def codex_overrides() -> list[str]:
    """Codex's ``-c`` overrides for agentd's hooks (TOML), and the trust bypass."""
    out: list[str] = []
    for event, entries in agentd_hooks().items():
        # Codex runs PreCompact for manual and auto alike (the hook ignores manual
        # ones itself) and SessionStart at startup too: no matchers.
        handlers = ", ".join(
            f"{{type = {_toml(h['type'])}, command = {_toml(h['command'])}, "
            f"timeout = {int(h['timeout'])}}}"
            for entry in entries
            for h in entry["hooks"]
        )
        out += ["-c", f"hooks.{event}=[{{hooks = [{handlers}]}}]"]
    return [*out, "--dangerously-bypass-hook-trust"]


def _toml(text: str) -> str:
    """A TOML basic string: JSON's string escapes are TOML's."""
    return json.dumps(text, ensure_ascii=False)
