"""What a unit reads back from its history at load, as tables (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from agentd.supervisor.records.history import last_end, restored_pause

END = {"kind": "end", "session": 1, "reason": "exit:0", "at": "2026-01-02T03:04:05Z"}
PAUSED = {"kind": "outcome", "session": 1, "next": "paused", "reset_at": "2026-01-02T04:00:00Z"}


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([], None),
        ([END], None),
        ([END, PAUSED], 1767326400.0),
        ([END, {**PAUSED, "reset_at": "2026-01-02T05:00:00+01:00"}], 1767326400.0),
        ([END, PAUSED, {"kind": "start", "session": 2}], None),  # only the last record counts
        ([END, {**PAUSED, "next": "backoff"}], None),
        ([END, {**PAUSED, "reset_at": None}], None),
        ([END, {**PAUSED, "reset_at": "soon"}], None),
    ],
)
def test_restored_pause(records: list[dict[str, Any]], expected: float | None) -> None:
    assert restored_pause(records) == expected


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([], (None, None)),
        ([{"kind": "start", "session": 1}], (None, None)),
        ([END, PAUSED], ("exit:0", 1767323045.0)),
        (
            [END, {**END, "reason": "timeout", "at": "2026-01-02T03:04:06+00:00"}, PAUSED],
            ("timeout", 1767323046.0),
        ),
        ([{**END, "at": "garbage"}], ("exit:0", None)),
        ([{**END, "at": None}], ("exit:0", None)),
    ],
)
def test_last_end(records: list[dict[str, Any]], expected: tuple[str | None, float | None]) -> None:
    assert last_end(records) == expected
