"""The reference in docs/ covers what the code accepts and does, and stays in step
with it: the generated files are what scripts/gen_docs.py writes now."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentd import events as ev
from agentd.cli.agentctl.group import VERBS
from agentd.config.keys import unit_keys

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


@pytest.mark.slow
def test_the_generated_docs_are_up_to_date() -> None:
    res = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr


def test_every_key_the_loader_accepts_is_documented() -> None:
    text = (DOCS / "units.md").read_text()
    keys = list(unit_keys())
    assert len(keys) > 60
    for key in keys:
        assert key.doc, f"{key.path} has no docstring in its model"
        assert f"| `{key.path}` |" in text, key.path


def test_every_command_is_documented() -> None:
    text = (DOCS / "commands.md").read_text()
    for verb in set(VERBS) - {"hook"}:  # `hook` is run by the CLIs' hooks, not by people
        assert f"### `agentctl {verb}`" in text, verb
    for verb in ("serve", "run", "check", "demo"):
        assert f"### `agentd {verb}`" in text, verb
    for verb in (
        "init",
        "show",
        "check",
        "decide",
        "done",
        "next",
        "task",
        "block",
        "handoff",
        "archive",
    ):
        assert f"### `agentctl state {verb}`" in text, verb
    for code in range(5):
        assert re.search(rf"^\| {code} \| ", text, re.M), code


def test_every_event_is_documented() -> None:
    text = (DOCS / "events.md").read_text()
    names = [v for k, v in vars(ev).items() if k.isupper() and isinstance(v, str) and "." in v]
    for name in names:
        assert f"| `{name}` |" in text, name


USER_TEXT = ["README.md", *(f"docs/{p.name}" for p in sorted(DOCS.glob("*.md")))]


@pytest.mark.parametrize("name", USER_TEXT)
def test_user_text_speaks_of_nothing_users_do_not_have(name: str) -> None:
    text = (REPO / name).read_text()
    for word in (r"\bSPEC\b", r"\bseeds?\b", r"\b00[0-4]_[0-9a-f]+", r"\bshared/"):
        assert not re.search(word, text), f"{name}: {word}"


def test_readme_links_the_reference_and_the_license_is_mit() -> None:
    readme = (REPO / "README.md").read_text()
    for doc in (
        "docs/units.md",
        "docs/commands.md",
        "docs/layouts.md",
        "docs/events.md",
        "docs/files.md",
    ):
        assert f"({doc})" in readme, doc
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert 'license = { text = "MIT" }' in (REPO / "pyproject.toml").read_text()
