"""The presets' texts of today: every example carries its CLI version and where it
was seen; numbers are read whole (digit boundaries); Claude Code's limit labels
are read by their shape; the hooks each preset gives its CLI."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from agentd.config.clihooks import codex_overrides, takes_hooks, with_hooks
from agentd.config.presets import cli_preset_example_records, cli_preset_names
from agentd.config.unit import Unit
from agentd.session.inject import plan
from agentd.supervisor.triggers import HANDOFF_RULE, rules
from agentd.terminal.rules import Rule
from agentd.times import parse_reset_time


def unit(preset: str, **more: object) -> Unit:
    return Unit.model_validate({"name": "u", "preset": preset, "workdir": "/", **more})


@pytest.mark.parametrize("name", cli_preset_names())
def test_every_example_names_its_version_and_source(name: str) -> None:
    for rule, records in cli_preset_example_records(name).items():
        assert records, f"{name}: {rule} has no examples"
        for record in records:
            assert record.get("version"), f"{name}: {rule}: {record['line']!r} has no version"
            assert record.get("source"), f"{name}: {rule}: {record['line']!r} has no source"


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", cli_preset_names())
def test_the_files_an_example_names_as_its_source_exist(name: str) -> None:
    """A source names a test or a capture: renaming one leaves no stale pointer."""
    for rule, records in cli_preset_example_records(name).items():
        for record in records:
            source = str(record["source"])
            for path in re.findall(r"tests/[\w/]+\.py", source):
                assert (ROOT / path).is_file(), f"{name}: {rule}: {source!r}: no {path}"
            for capture in re.findall(r"^capture (\S+\.raw)", source):
                found = [d / capture for d in (ROOT / "tests" / "fixtures").iterdir() if d.is_dir()]
                assert any(f.is_file() for f in found), f"{name}: {rule}: no capture {capture}"


def _rules_with_numbers(name: str) -> list[Rule]:
    return [r for r in rules(unit(name)) if r.pattern.groupindex]


def _variants(line: str) -> list[str]:
    """``line`` with a digit put before and after each run of digits."""
    out = []
    for m in re.finditer(r"\d+", line):
        out.append(line[: m.start()] + "1" + line[m.start() :])
        out.append(line[: m.end()] + "0" + line[m.end() :])
    return out


@pytest.mark.parametrize("name", cli_preset_names())
def test_numbers_in_rules_are_read_whole(name: str) -> None:
    """No rule reads part of a number: a group never starts or ends next to a digit
    (Codex's `1000% context left`, drawn mid-frame, must not read as `000`)."""
    examples = cli_preset_example_records(name)
    lines = [r["line"] for records in examples.values() for r in records]
    lines += ["1000% context left", "100% until auto-compact", "resets 123pm", "1100% used"]
    for rule in _rules_with_numbers(name):
        for line in [v for text in lines for v in _variants(text)] + lines:
            for m in rule.pattern.finditer(line):
                for group in m.re.groupindex:
                    start, end = m.span(group)
                    if start < 0 or not m.group(group)[:1].isdigit():
                        continue
                    assert not line[start - 1 : start].isdigit(), (name, rule.name, line)
                    if m.group(group)[-1:].isdigit():
                        assert not line[end : end + 1].isdigit(), (name, rule.name, line)


def test_the_codex_mid_frame_footer_reads_no_figure() -> None:
    handoff = unit("codex").handoff
    assert handoff.pattern is not None
    assert handoff.pattern.search("  ← for agents   1000% context left · ⚠ 1 warning") is None


@pytest.mark.parametrize(
    "label",
    [
        "5-hour limit",
        "Fable limit",
        "Fable 5 limit",
        "usage credit limit",
        "Mythos 7-day limit",
        "team's pooled group budget",
        "weekly limit",
        "session limit",
    ],
)
def test_claude_code_limit_labels_are_read_by_their_shape(label: str) -> None:
    sentinels = {s.name: s for s in unit("claude-code").sentinels}
    line = f"⎿  You've hit your {label} · resets Jan 10, 2027, 1:59pm (America/Los_Angeles)"
    hit = sentinels["usage-limit"].pattern.search(line)
    assert hit is not None, line
    assert hit["until"] == "Jan 10, 2027, 1:59pm (America/Los_Angeles)"
    assert sentinels["usage-limit-no-time"].pattern.search(line) is None
    assert parse_reset_time(hit["until"], 1_796_000_000) == 1_799_618_340  # 2027-01-10 21:59Z


def test_claude_code_without_a_reset_time_pauses_for_pause_for() -> None:
    sentinels = {s.name: s for s in unit("claude-code").sentinels}
    for line in (
        "Your org is out of usage · add funds to continue",
        "You've hit your individual spend limit · ask your admin to raise it",
    ):
        assert sentinels["usage-limit-no-time"].pattern.search(line), line
        assert sentinels["usage-limit-no-time"].action == "pause"
        assert sentinels["usage-limit"].pattern.search(line) is None, line


def test_auto_compact_next_means_no_context_left() -> None:
    handoff = unit("claude-code").handoff
    assert handoff.pattern is not None
    found = handoff.pattern.search(
        "  ⏵⏵ bypass permissions on (shift+tab to cycle)     auto-compact next"
    )
    assert found is not None
    groups = {k: v for k, v in found.groupdict().items() if v is not None}
    assert handoff.percent_left(groups) == 0 and handoff.wanted(groups)


# -- the hooks the presets give ---------------------------------------------------------
def test_claude_code_gets_its_hooks_by_settings_json() -> None:
    argv = with_hooks("claude-code", ["/opt/bin/claude", "--dangerously-skip-permissions", "go"])
    assert (
        argv[0] == "/opt/bin/claude"
        and argv[1] == "--settings"
        and argv[3:]
        == [
            "--dangerously-skip-permissions",
            "go",
        ]
    )
    hooks = json.loads(argv[2])["hooks"]
    assert sorted(hooks) == ["PreCompact", "SessionStart"]
    assert "agentctl hook pre-compact" in hooks["PreCompact"][0]["hooks"][0]["command"]
    assert hooks["PreCompact"][0]["hooks"][0]["timeout"] >= 60


def test_codex_gets_its_hooks_as_toml_overrides_and_skips_the_trust_dialog() -> None:
    argv = with_hooks("codex", ["codex", "--disable", "daemon_auto_start", "go"])
    assert argv[-3:] == ["--disable", "daemon_auto_start", "go"]
    assert "--dangerously-bypass-hook-trust" in argv
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    parsed = tomllib.loads("\n".join(overrides))
    assert sorted(parsed["hooks"]) == ["PreCompact", "SessionStart"]
    command = parsed["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    assert command.endswith("-m agentd.cli.agentctl hook pre-compact")
    assert codex_overrides()[-1] == "--dangerously-bypass-hook-trust"


def test_no_hooks_for_another_program_or_none() -> None:
    for kind, argv in (
        ("claude-code", ["npx", "claude"]),
        ("codex", ["bash", "-c", "codex"]),
        ("none", ["claude", "go"]),
        ("claude-code", ["claude", "--settings", "mine.json", "go"]),  # its own: kept
        ("claude-code", ["claude", "--settings=mine.json", "go"]),
    ):
        assert with_hooks(kind, argv) == argv
        assert not takes_hooks(kind, argv)


def test_the_presets_set_hooks_and_a_unit_can_turn_them_off(tmp_path: Path) -> None:
    assert unit("claude-code").hooks == "claude-code"
    assert unit("codex").hooks == "codex"
    assert unit("gemini").hooks == "none" and unit("aider").hooks == "none"
    boot = tmp_path / "boot.md"
    on = plan(unit("claude-code"), 1, "text", boot)
    assert on.argv[:2] == ["claude", "--settings"]
    off = plan(unit("claude-code", hooks="none"), 1, "text", boot)
    assert "--settings" not in off.argv


def test_gemini_types_its_requests_and_aider_opens_no_browser() -> None:
    assert unit("gemini").inject.paste is False
    assert unit("aider").env["BROWSER"] == "true"
    assert unit("aider", env={"OPENAI_API_KEY": "x"}).env["BROWSER"] == "true"  # merged


def test_a_missing_aider_message_file_fails_the_unit() -> None:
    sentinel = {s.name: s for s in unit("aider").sentinels}["message-file-unreadable"]
    assert sentinel.action == "fail"
    assert sentinel.pattern.search("/tmp/p/nope.txt: file not found error")
    assert not sentinel.pattern.search("Added nope.txt to the chat: file not found errors happen")


def test_the_handoff_rule_is_among_the_rules() -> None:
    assert HANDOFF_RULE in [r.name for r in rules(unit("gemini"))]
