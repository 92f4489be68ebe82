"""Whatever is in a unit file, loading it gives a Unit or a UnitError that
points at a line: never a traceback from yaml, pydantic or a converter."""

from __future__ import annotations

import contextlib
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentd.config.convert import parse_duration, parse_signal, parse_size
from agentd.config.placeholders import fill_placeholders
from agentd.config.unit import Unit
from agentd.config.unitfile import load_unit, parse_unit
from agentd.errors import UnitError
from agentd.times import parse_reset_time

# The examples of the profile (tests/conftest.py): 100 in the suite, more on demand.
SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

TOP_KEYS = [
    "description",
    "preset",
    "command",
    "workdir",
    "env",
    "autostart",
    "inject",
    "state",
    "sentinels",
    "restart",
    "stop",
    "limits",
    "budget",
    "logs",
    "notify",
    "pty",
    "name",
]
NESTED_KEYS = [
    "mode",
    "after",
    "submit",
    "path",
    "dir",
    "layout",
    "budget_tokens",
    "match",
    "action",
    "pause_for",
    "exit_codes",
    "success_codes",
    "on_failure",
    "delay",
    "max_delay",
    "min_uptime",
    "burst",
    "window",
    "max_sessions",
    "signal",
    "grace",
    "session_timeout",
    "idle_timeout",
    "context_tokens",
    "stall_sessions",
    "max_bytes",
    "backups",
    "on",
    "cols",
    "rows",
    "tail",
    "title",
    "kind",
    "<<",
]
WORDS = [
    "/",
    "/tmp",
    "~",
    ".",
    "$HOME",
    "${HOME}/x",
    "claude-code",
    "codex",
    "gemini",
    "aider",
    "agentd",
    "{bootstrap}",
    "{nope}",
    "{{",
    "10s",
    "-1s",
    "5m",
    "10MB",
    "1GiB",
    "TERM",
    "SIGINT",
    "99",
    "restart",
    "pause",
    "argv",
    "stdin",
    "file",
    "none",
    "(unclosed",
    "a.*b",
    "done",
    "",
    "yes",
    "on",
    "true",
    "null",
    "1e999",
    ".inf",
    "0x10",
    "1:30",
    "2020-13-45",
]

text = st.text(max_size=30)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    text,
)
keys = st.one_of(st.sampled_from(TOP_KEYS + NESTED_KEYS), text, st.integers(-3, 3))
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=20,
)
documents = st.one_of(
    st.dictionaries(st.sampled_from(TOP_KEYS), values, max_size=8),
    st.fixed_dictionaries(
        {"command": values, "workdir": st.sampled_from(["/", "/tmp", "~", "."])},
        optional={key: values for key in TOP_KEYS if key not in ("command", "workdir")},
    ),
    values,
)

VALID = "command: [agent, '{bootstrap}']\nworkdir: /\nrestart: {delay: 1s}\nsentinels:\n"
VALID += "  - {name: c, match: 'Compacting', action: restart}\nnotify: {on: [done]}\n"


def dump(document: Any) -> str:
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


def check(text: str) -> None:
    """The property: a Unit, or a UnitError with a file and a line >= 1."""
    try:
        unit = parse_unit(text, file="units/p.yaml", name="p")
    except UnitError as error:
        assert error.file == "units/p.yaml"
        assert isinstance(error.line, int) and error.line >= 1, repr(error)
        assert str(error).startswith(f"units/p.yaml:{error.line}: ")
        for problem in getattr(error, "problems", []):
            assert isinstance(problem.line, int) and problem.line >= 1
    else:
        assert isinstance(unit, Unit)
        assert unit.inject.mode is not None


@pytest.mark.slow
@SETTINGS
@given(documents)
def test_random_documents_give_a_unit_or_a_located_error(document: Any) -> None:
    check(dump(document))


@SETTINGS
@given(st.text(max_size=200))
def test_random_text_gives_a_unit_or_a_located_error(raw: str) -> None:
    check(raw)


@SETTINGS
@given(st.text(alphabet=string.printable + "{}[]:-&*!|>'\"#%@`", max_size=120))
def test_yaml_punctuation_gives_a_unit_or_a_located_error(raw: str) -> None:
    check(raw)


@SETTINGS
@given(st.integers(0, len(VALID)), st.integers(0, 20), st.text(max_size=8))
def test_damaged_valid_unit_gives_a_unit_or_a_located_error(at: int, cut: int, insert: str) -> None:
    check(VALID[:at] + insert + VALID[at + cut :])


@pytest.fixture(scope="module")
def unit_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("props") / "p.yaml"


@pytest.mark.slow
@SETTINGS
@given(documents)
def test_load_unit_gives_a_unit_or_a_located_error(unit_file: Path, document: Any) -> None:
    unit_file.write_text(dump(document), encoding="utf-8")
    unit_file.chmod(0o600)
    try:
        load_unit(unit_file)
    except UnitError as error:
        assert error.file == str(unit_file)
        assert isinstance(error.line, int) and error.line >= 1, repr(error)


anything = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(text, scalars))


@SETTINGS
@given(anything)
def test_converters_raise_only_value_errors(value: Any) -> None:
    for convert in (parse_duration, parse_size, parse_signal):
        with contextlib.suppress(ValueError):
            convert(value)


@SETTINGS
@given(st.text(max_size=40), st.floats(0, 4e9))
def test_parse_reset_time_raises_only_value_errors(raw: str, now: float) -> None:
    with contextlib.suppress(ValueError):
        assert isinstance(parse_reset_time(raw, now), float)


@SETTINGS
@given(st.text(alphabet="{}$ab_ ", max_size=30))
def test_fill_placeholders_raises_only_value_errors(template: str) -> None:
    try:
        fill_placeholders(template, {"a": "A", "b": "B"})
    except ValueError as error:
        assert "unknown placeholder" in str(error)
