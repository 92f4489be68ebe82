"""A secret split by what a terminal does not show (issue 27): an OSC string (a title)
or a character drawn over with a backspace in its middle went to the transcript raw."""

from __future__ import annotations

import pytest

from agentd.session.redact import Redactor, hide_token_shapes

SECRET = "sk-live-4f9a2c7e1b8d"


@pytest.mark.parametrize(
    "written",
    [
        b"sk-live-4f9a\x1b]0;working\x07" + b"2c7e1b8d",  # a title set in the middle (BEL)
        b"sk-live-4f9a\x1b]2;x\x1b\\2c7e1b8d",  # ... ended by ST
        b"sk-live-4f9a\x1b]8;;http://x\x1b\\2c7e1b8d",  # a hyperlink's start
        b"sk-live-4f9aX\x082c7e1b8d",  # X drawn over by the next character
        b"sk-live-4f9aXY\x08\x082c7e1b8d",
        b"sk-live-4f9a\xc3\xa9\x082c7e1b8d",  # a two-byte character drawn over
        b"sk-live-4f9a\x1b[31mX\x08\x1b[0m2c7e1b8d",
    ],
)
@pytest.mark.parametrize("cut", [None, 5, 13, 15, 18])
def test_a_secret_split_by_what_draws_nothing_is_hidden(written: bytes, cut: int | None) -> None:
    line = b"key: " + written + b" ok\r\n"
    redactor = Redactor([SECRET])
    if cut is None:
        out = redactor.redact(line) + redactor.flush()
    else:
        out = redactor.redact(line[:cut]) + redactor.redact(line[cut:]) + redactor.flush()
    assert b"4f9a" not in out and b"2c7e1b8d" not in out, out
    assert out.startswith(b"key: ***") and out.endswith(b" ok\r\n")


def test_text_that_only_looks_alike_is_left_alone() -> None:
    redactor = Redactor([SECRET])
    line = b"sk-live-4f9aX\x08Z2c7e1b8d and sk-live-\x1b]0;t\x07nothing\r\n"
    assert redactor.redact(line) + redactor.flush() == line


def test_a_stream_of_its_own_holds_back_its_own_part() -> None:
    redactor = Redactor([SECRET])
    one, two = redactor.stream(), redactor.stream()
    assert one.redact(b"a sk-live-4f9a") == b"a "  # the start of a secret: held back
    assert two.redact(b"b ") == b"b "
    assert one.redact(b"2c7e1b8d!") == b"***!"


@pytest.mark.parametrize(
    ("reason", "shown"),
    [
        ("rotated to sk-ant-api03-" + "Q" * 30, "rotated to ***"),
        ("push ghp_" + "a1" * 18 + " now", "push *** now"),
        ("GITHUB_TOKEN=abcdef123456 set", "GITHUB_TOKEN=*** set"),
        ("a plain reason", "a plain reason"),
    ],
)
def test_token_shapes_in_a_persons_text_are_hidden(reason: str, shown: str) -> None:
    assert hide_token_shapes(reason) == shown
