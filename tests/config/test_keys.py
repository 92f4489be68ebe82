"""What the loader refuses before or beyond the schema: near-miss keys get a
"did you mean", files over 1 MiB and non-files are refused unread, and a
pattern that matches an empty line is an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentd.config.keys import did_you_mean, keys_at, unit_keys
from agentd.config.unitfile import MAX_UNIT_BYTES, load_unit, parse_unit
from agentd.errors import UnitError
from tests.support import bytes_read, needs_read_count


def _error(text: str) -> str:
    with pytest.raises(UnitError) as caught:
        parse_unit(f"command: [x]\nworkdir: /\n{text}", file="u.yaml", name="u")
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "restart:\n  exit_code: [3]\n",
            "u.yaml:4: restart.exit_code: unknown key (did you mean exit_codes?)",
        ),
        ("sentinals: []\n", "u.yaml:3: sentinals: unknown key (did you mean sentinels?)"),
        (
            "sentinels: [{name: a, match: x, actoin: stop}]\n",
            "sentinels[0].actoin: unknown key (did you mean action?)",
        ),
        (
            "state: {layout: [{path: a.md, tial: 3}]}\n",
            "state.layout[0].tial: unknown key (did you mean tail?)",
        ),
        ("bogus: 1\n", "u.yaml:3: bogus: unknown key"),  # nothing close: no guess
    ],
)
def test_an_unknown_key_near_a_known_one_says_which(text: str, said: str) -> None:
    assert said in _error(text)


def test_keys_at_and_did_you_mean_follow_the_schema() -> None:
    assert "exit_codes" in (keys_at(("restart",)) or [])
    assert keys_at(("sentinels", 0)) == ["name", "match", "action", "pause_for"]
    assert keys_at(("nope",)) is None and keys_at(("command",)) is None
    assert did_you_mean((), "workdri") == "workdir"
    assert did_you_mean((), "source") is None  # internal: never suggested
    paths = [k.path for k in unit_keys()]
    assert "source" not in paths and "restart.window" in paths and "sentinels[].match" in paths


@pytest.mark.parametrize(
    "text",
    [
        'sentinels: [{name: a, match: ""}]\n',
        'sentinels: [{name: a, match: ".*"}]\n',
        'sentinels: [{name: a, match: "x?"}]\n',
        'handoff: {when: "(context)?"}\n',
    ],
)
def test_a_pattern_that_matches_an_empty_line_is_refused(text: str) -> None:
    assert "matches an empty line" in _error(text)


@needs_read_count
def test_a_unit_file_over_1_mib_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:  # sparse: 8 MB that cost nothing to write
        f.truncate(8 * 1024 * 1024)
    big.chmod(0o600)
    before = bytes_read()
    with pytest.raises(UnitError, match="over the 1024 KiB"):
        load_unit(big)
    read = bytes_read() - before
    assert read < 64 * 1024, f"read {read} bytes of a file refused by its size"
    edge = tmp_path / "edge.yaml"
    edge.write_bytes(b"command: [x]\nworkdir: /\n" + b"#" * (MAX_UNIT_BYTES - 30) + b"\n")
    edge.chmod(0o600)
    assert load_unit(edge).name == "edge"  # exactly at the limit or under: parsed


def test_a_fifo_or_a_directory_is_not_a_unit_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(UnitError, match="not a regular file"):
        load_unit(fifo)  # would block forever if it were opened
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    with pytest.raises(UnitError, match="not a regular file"):
        load_unit(folder)
