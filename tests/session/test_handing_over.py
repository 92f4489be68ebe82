"""How text is handed to a CLI: pasted where the program takes a paste, typed
where the unit says so (Gemini CLI); and the SessionStart hook's bootstrap, which
a session's start does not need (its prompt names the file already)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentd.cli.agentctl import hooks
from agentd.session.inject import PASTE_END, PASTE_START, hand_over


class _Typed:
    """What a Session's submit is given."""

    def __init__(self, bracketed: bool) -> None:
        self.bracketed_paste = bracketed
        self.sent: list[tuple[bytes, bytes]] = []

    def submit(self, data: bytes, key: bytes) -> None:
        self.sent.append((data, key))


@pytest.mark.parametrize(
    ("bracketed", "paste", "pasted"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_text_is_pasted_only_where_the_program_and_the_unit_want_it(
    bracketed: bool, paste: bool, pasted: bool
) -> None:
    session = _Typed(bracketed)
    hand_over(session, "record your state", "\r", paste=paste)  # type: ignore[arg-type]
    ((data, key),) = session.sent
    assert key == b"\r"
    assert data.startswith(PASTE_START) is pasted and data.endswith(PASTE_END) is pasted
    assert b"record your state" in data


def test_the_session_start_hook_gives_the_bootstrap_after_a_compaction_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boot = tmp_path / "bootstrap-1.md"
    boot.write_text("# agentd bootstrap: u, session 1\n", encoding="utf-8")
    monkeypatch.setenv("AGENTD_BOOTSTRAP_FILE", str(boot))
    assert hooks.session_start({"source": "startup"}) == ""  # Codex asks at start too
    assert hooks.session_start({"source": "compact"}).startswith("# agentd bootstrap")
    assert hooks.session_start().startswith("# agentd bootstrap")
