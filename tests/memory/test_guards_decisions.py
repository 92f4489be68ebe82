"""A decision line as the docs define it (docs/layouts.md), read and written whole.

Every field read back as written, spaces trimmed; the optional tag and
alternatives; the decision-log write-up's own labels; a line that is not one
(a missing field, an empty one, an impossible time) is reported with its
number; a decision written and read back is itself; the Markdown entry of the
four-file layout, line for line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentd.memory.formats.decisions import (
    Decision,
    bad_lines,
    format_entry,
    format_line,
    is_decision,
    parse_line,
    scan_file,
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "[2026-11-30 14:32] [arch] decision: use one cache | why: fewer calls | files: a.py,"
            " b.py | snapshot: snap-1 | alternatives: raw redis",
            Decision(
                "2026-11-30 14:32",
                "use one cache",
                "fewer calls",
                "a.py, b.py",
                "snap-1",
                "arch",
                "raw redis",
            ),
        ),
        (
            "[2026-11-30 14:32]decision:d|why:w|files:-|snapshot:-",
            Decision("2026-11-30 14:32", "d", "w", "-", "-", "", ""),
        ),
        (
            "[2026-11-30 14:32] [] decision:  d  |  why:  w  | files: f | snapshot: s |"
            " alternatives:   ",
            Decision("2026-11-30 14:32", "d", "w", "f", "s", "", ""),
        ),
        (
            "[2026-11-30 14:32] [ ops ] decision: a | b | why: w | files: - | snapshot: -",
            Decision("2026-11-30 14:32", "a | b", "w", "-", "-", "ops", ""),
        ),
        (
            "[2026-11-30 14:32] 决策：用缓存 | 理由: 快 | 影响文件: a.py"
            " | 状态快照: s1 | 替代方案：无",
            Decision("2026-11-30 14:32", "用缓存", "快", "a.py", "s1", "", "无"),
        ),
        (
            "[2026-11-30 14:32] decision: d | why: w | files: f | 快照: s",
            Decision("2026-11-30 14:32", "d", "w", "f", "s"),
        ),
        ("[2026-11-30 14:32] decision: d | why: w | files: f", None),  # no snapshot
        ("[2026-11-30 14:32] decision: d | why:  | files: f | snapshot: s", None),  # empty why
        ("[2026-11-30] decision: d | why: w | files: f | snapshot: s", None),
        ("2026-11-30 14:32 decision: d | why: w | files: f | snapshot: s", None),
        ("[2026-11-31 14:32] decision: d | why: w | files: f | snapshot: s", None),
        (" [2026-11-30 14:32] decision: d | why: w | files: f | snapshot: s", None),
    ],
)
def test_a_line_reads_as_the_decision_it_writes_or_as_none(
    line: str, expected: Decision | None
) -> None:
    got = parse_line(line)
    assert got == expected
    assert is_decision(line) is (got is not None)


def test_the_files_of_a_decision_are_a_list_and_a_dash_is_none() -> None:
    assert Decision("t", "d", "w", files=" a.py ,b/c.py").file_list == ["a.py", "b/c.py"]
    assert Decision("t", "d", "w", files=" - ").file_list == []
    assert Decision("t", "d", "w").file_list == []


def test_a_written_decision_is_one_line_that_reads_back_as_itself() -> None:
    d = Decision(
        "2026-12-01 09:05", "use\nsqlite  now", "one  file", "", " ", "a]b", "keep\tpostgres"
    )
    line = format_line(d)
    assert line == (
        "[2026-12-01 09:05] [a)b] decision: use sqlite now | why: one file | files: - "
        "| snapshot: - | alternatives: keep postgres"
    )
    assert parse_line(line) == Decision(
        "2026-12-01 09:05", "use sqlite now", "one file", "-", "-", "a)b", "keep postgres"
    )
    plain = format_line(Decision("2026-12-01 09:05", "d", "w"))
    assert plain == "[2026-12-01 09:05] decision: d | why: w | files: - | snapshot: -"


@pytest.mark.parametrize(
    "d",
    [
        Decision("2026-12-01 09:05", "d | why: x", "w"),
        Decision("2026-12-01 09:05", "", "w"),
        Decision("2026-12-01 09:05", "d", "  "),
        Decision("2026-13-01 09:05", "d", "w"),
    ],
)
def test_a_decision_that_would_not_read_back_is_refused_saying_why(d: Decision) -> None:
    with pytest.raises(ValueError) as refused:
        format_line(d)
    assert str(refused.value) == (
        "the decision does not fit the six-field form: each field must be non-empty and must "
        "not contain `| why:`, `| files:` or another field's label"
    )


def test_the_lines_that_are_not_decisions_are_found_by_number(tmp_path: Path) -> None:
    good = "[2026-11-30 14:32] decision: d | why: w | files: - | snapshot: -"
    lines = [good, "", "   ", "[2026-11-30 14:32] decision: torn", good, "not one  X\r"]
    assert bad_lines(lines) == [3, 5]
    log = tmp_path / "decisions.log"
    log.write_bytes("\r\n".join([*lines, "caf\xe9 \udcff"]).encode("utf-8", "surrogatepass"))
    found = list(scan_file(log))
    assert [n for n, _ in found] == [4, 6, 7]
    assert found[0][1] == "[2026-11-30 14:32] decision: torn"
    assert found[1][1] == "not one  X"  # the line end taken off, CR and all, nothing more
    assert found[2][1].startswith("café ")  # a broken byte never raises
    log.write_text("oops \t\n")
    assert list(scan_file(log)) == [(1, "oops \t")]  # quoted as it is, its spaces too


def test_the_markdown_entry_of_a_decision_line_for_line() -> None:
    d = Decision(
        "2026-11-30 14:32",
        "use one\ncache",
        "fewer  calls",
        "a.py, b.py",
        "snap-1",
        "arch",
        "raw redis",
    )
    assert format_entry(3, d) == [
        "## 3. [arch] use one cache",
        "",
        "- date: 2026-11-30 14:32",
        "- why: fewer calls",
        "- files: a.py, b.py",
        "- alternatives: raw redis",
        "- snapshot: snap-1",
        "- status: active",
    ]
    assert format_entry(1, Decision("2026-11-30 14:32", "d", "w", snapshot=" ")) == [
        "## 1. d",
        "",
        "- date: 2026-11-30 14:32",
        "- why: w",
        "- status: active",
    ]
