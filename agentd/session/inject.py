"""How the bootstrap reaches a new session (docs/units.md, ``inject``).

``plan()`` is pure: from the unit, the rendered text and the file it was
written to, it returns the argv to spawn and what (if anything) to type into
the pty and when. An ``Injector`` carries the plan out on the live session.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentd import events as ev
from agentd.config.clihooks import with_hooks
from agentd.config.placeholders import fill_placeholders
from agentd.config.unit import Unit
from agentd.process.tree import MARKER_VAR
from agentd.terminal.rules import Rule

if TYPE_CHECKING:
    from agentd.session.session import Session

PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
# The temporary matcher rule that waits for the prompt before stdin injection.
PROMPT_RULE = "inject.after"


@dataclass(frozen=True)
class InjectPlan:
    mode: str
    argv: list[str]
    env: dict[str, str]
    # stdin mode: the text to type, when (after this regex, else at once), and the submit key
    text: str | None = None
    after: re.Pattern[str] | None = None
    submit: str = "\r"
    paste: bool = True  # as a bracketed paste, where the program takes one
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
    argv = with_hooks(unit.hooks, [fill_placeholders(arg, values) for arg in unit.command])
    env = {k: fill_placeholders(v, values) for k, v in unit.env.items()}
    mode = unit.inject.mode or "stdin"
    if mode == "stdin":
        after = re.compile(unit.inject.after) if unit.inject.after else None
        return InjectPlan(
            mode,
            argv,
            env,
            text=text,
            after=after,
            submit=unit.inject.submit,
            paste=unit.inject.paste,
        )
    if mode == "file":
        return InjectPlan(mode, argv, env, file=unit.inject_path)
    return InjectPlan(mode, argv, env)


def session_env(
    base: Mapping[str, str],
    unit: Unit,
    plan: InjectPlan,
    *,
    number: int,
    reason: str,
    bootstrap_file: Path,
    marker: str,
    socket: Path,
) -> dict[str, str]:
    """The session's environment: agentd's own, the unit's ``env`` on top, then
    the AGENTD_* contract and the marker that finds the session's processes later."""
    env = dict(base)
    env.update(plan.env)
    env.update(
        {
            "AGENTD_UNIT": unit.name,
            "AGENTD_SESSION": str(number),
            "AGENTD_SOCKET": str(socket),
            "AGENTD_STATE_DIR": str(unit.state_dir),
            "AGENTD_BOOTSTRAP_FILE": str(bootstrap_file),
            "AGENTD_RESTART_REASON": reason,
            MARKER_VAR: marker,
        }
    )
    if isinstance(unit.state.layout, str):  # `agentctl state` in the session follows it
        env["AGENTD_LAYOUT"] = unit.state.layout
    return env


def typed_bytes(text: str, *, bracketed: bool) -> bytes:
    """What to write to the pty to hand ``text`` over (its submit key comes after,
    see ``Session.submit``).

    A program that turned on bracketed paste (``ESC[?2004h``) gets the text as
    one paste, so the newlines inside do not submit it line by line; any
    paste-end marker inside the text is removed so it cannot end the paste early.
    Otherwise the text is typed as is (a line-reading program sees its lines).
    """
    body = text.encode("utf-8")
    if bracketed:
        body = body.replace(PASTE_END, b"").replace(PASTE_START, b"")
        return PASTE_START + body + PASTE_END
    return body


def hand_over(session: Session, text: str, submit: str, *, paste: bool = True) -> int:
    """Type ``text`` into the session and submit it (as a paste if ``paste`` and the
    program turned bracketed paste on); the bytes written."""
    data = typed_bytes(text, bracketed=paste and session.bracketed_paste)
    key = submit.encode("utf-8")
    session.submit(data, key)
    return len(data) + len(key)


class Injector:
    """Hands the bootstrap to a live session as ``plan`` says, once."""

    def __init__(
        self, plan: InjectPlan, text: str, tokens: int, *, emit: Callable[..., None]
    ) -> None:
        self.plan = plan
        self.text = text
        self.tokens = tokens
        self._emit = emit
        self._session: Session | None = None

    def begin(self, session: Session) -> None:
        mode = self.plan.mode
        if mode != "none":
            # Whatever the agent shows of its instructions is echo, not a sentinel.
            session.matcher.expect_echo(self.text)
        if mode != "stdin":
            self._emit(
                ev.SESSION_INJECT,
                mode=mode,
                bytes=len(self.text.encode("utf-8")),
                tokens=self.tokens,
            )
            return
        self._session = session
        if self.plan.after is None:
            self.on_prompt()
        else:
            session.matcher.add_rule(
                Rule(PROMPT_RULE, self.plan.after, "inject", echo_check=False, partial=True)
            )

    def on_prompt(self) -> None:
        """The prompt appeared (or none was awaited): type the bootstrap and submit."""
        session, self._session = self._session, None
        if session is None:
            return
        session.matcher.remove_rule(PROMPT_RULE)
        written = hand_over(session, self.text, self.plan.submit, paste=self.plan.paste)
        self._emit(
            ev.SESSION_INJECT,
            mode="stdin",
            bytes=written,
            tokens=self.tokens,
            bracketed_paste=self.plan.paste and session.bracketed_paste,
        )
