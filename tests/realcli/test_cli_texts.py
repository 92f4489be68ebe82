"""scripts/cli_texts.py on the pinned versions: every message template it finds in
the real releases is read by a preset rule or known to need none; and it does
report a template once the rule that reads it is gone."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.realcli.pins import versions

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cli_texts.py"
CLIS = [(cli, v) for cli in ("claude-code", "codex", "gemini", "aider") for v in versions(cli)]


@pytest.fixture(scope="module")
def cli_texts() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_texts", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cli_texts"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("cli", "version"), CLIS, ids=[f"{c}@{v}" for c, v in CLIS])
def test_the_pinned_releases_have_no_text_left_unread(
    cli_texts: ModuleType, cli: str, version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    found = cli_texts.templates(cli, cli_texts.sources(cli, cli_texts.program(cli, version)))
    assert len(found) >= 5, f"{cli}@{version}: only {sorted(found)} found: the phrases are stale"
    verdicts = cli_texts.judge(cli, found)
    unread = [v.text for v in verdicts if v.rule is None and v.known is None]
    assert unread == [], f"{cli}@{version}: no rule reads {unread}"
    assert any(v.rule for v in verdicts)
    # Without the rules that read them, the same templates are reported.
    kept = [r for r in cli_texts.preset_rules(cli) if not _reads_limits_or_context(r.name)]
    blind = [
        v
        for v in verdicts
        if v.rule is not None and not any(r.pattern.search(v.text) for r in kept)
    ]
    assert blind, f"{cli}@{version}: dropping the limit and context rules changed nothing"


def _reads_limits_or_context(name: str) -> bool:
    return any(word in name for word in ("limit", "compact", "context", "compress", "token"))
