"""How the bootstrap reaches a new session (SPEC 3 ``inject``), as a plan.

``plan()`` is pure: from the unit, the rendered text and the file it was
written to, it returns the argv to spawn and what (if anything) to type into
the pty and when. The session carries the plan out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agentd.convert import fill_placeholders
from agentd.unit import Unit

PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"


@dataclass(frozen=True)
class InjectPlan:
    mode: str
    argv: list[str]
    env: dict[str, str]
    # stdin mode: the text to type, when (after this regex, else at once), and the submit key
    text: str | None = None
    after: re.Pattern[str] | None = None
    submit: str = "\r"
    # file mode: where the bootstrap is written for the agent to read
    file: Path | None = None


def placeholder_values(unit: Unit, session: int, text: str, bootstrap_file: Path) -> dict[str, str]:
    return {
        "bootstrap": text,
        "bootstrap_file": str(bootstrap_file),
        "unit": unit.name,
        "session": str(session),
        "workdir": str(unit.workdir),
        "event": "start",
    }


def plan(unit: Unit, session: int, text: str, bootstrap_file: Path) -> InjectPlan:
    values = placeholder_values(unit, session, text, bootstrap_file)
    argv = [fill_placeholders(arg, values) for arg in unit.command]
    env = {k: fill_placeholders(v, values) for k, v in unit.env.items()}
    mode = unit.inject.mode or "stdin"
    if mode == "stdin":
        after = re.compile(unit.inject.after) if unit.inject.after else None
        return InjectPlan(mode, argv, env, text=text, after=after, submit=unit.inject.submit)
    if mode == "file":
        return InjectPlan(mode, argv, env, file=unit.inject_path)
    return InjectPlan(mode, argv, env)


def typed_bytes(text: str, submit: str, *, bracketed: bool) -> bytes:
    """What to write to the pty to hand ``text`` over and submit it.

    A program that turned on bracketed paste (``ESC[?2004h``) gets the text as
    one paste, so the newlines inside do not submit it line by line; any
    paste-end marker inside the text is removed so it cannot end the paste early.
    Otherwise the text is typed as is (a line-reading program sees its lines).
    """
    body = text.encode("utf-8")
    if bracketed:
        body = body.replace(PASTE_END, b"").replace(PASTE_START, b"")
        return PASTE_START + body + PASTE_END + submit.encode("utf-8")
    return body + submit.encode("utf-8")
