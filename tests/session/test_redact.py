"""The Redactor beyond plain copies: split secrets, patterns, secrets found in the state."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentd.session.redact import Redactor, secrets_in

KEY = "sk-ant-api03-Zm9vYmFyYmF6"


def in_chunks(r: Redactor, data: bytes, points: list[int]) -> bytes:
    cuts = [0, *points, len(data)]
    return b"".join(r.redact(data[a:b]) for a, b in itertools.pairwise(cuts)) + r.flush()


@pytest.mark.parametrize(
    "split",
    [
        b"\x1b[31m",  # a colour code
        b"\x1b[0m\x1b[1;33m",  # two of them
        b"\x1b[5C",  # a cursor move
        b"\r\n",  # a wrap
        b"\x1b[K\r\n\x1b[2G",  # a TUI's wrap: erase, new line, move back
    ],
)
def test_a_secret_split_by_what_a_terminal_draws_is_hidden_at_any_chunking(split: bytes) -> None:
    shown = KEY.encode()
    data = b"token: " + shown[:9] + split + shown[9:] + b" ok\r\n"
    for cut in range(len(data) + 1):
        assert in_chunks(Redactor([KEY]), data, [cut]) == b"token: *** ok\r\n", cut


def test_a_secret_split_three_times_is_still_hidden() -> None:
    s = KEY.encode()
    data = s[:5] + b"\x1b[1m" + s[5:11] + b"\r\n" + s[11:19] + b"\x1b[22m" + s[19:]
    assert in_chunks(Redactor([KEY]), data, [7, 20]) == b"***"


def test_a_pattern_hides_what_it_matches_in_text_and_output() -> None:
    r = Redactor([], [re.compile(r"corp-[0-9a-f]{8}")])
    assert r.redact_text("vpn corp-7f3a9c1e up") == "vpn *** up"
    assert r.redact(b"vpn corp-7f3a9c1e up\n") + r.flush() == b"vpn *** up\n"


def test_learned_secrets_are_hidden_from_then_on_and_held_back_at_a_chunk_end() -> None:
    r = Redactor([])
    r.learn(["hunter2hunter2"])
    assert r.redact(b"pw hunter2") == b"pw "
    assert r.redact(b"hunter2!") == b"***!"
    assert r.redact_text("x hunter2hunter2") == "x ***"


def test_secrets_in_state_text() -> None:
    text = (
        f"GITHUB_TOKEN=ghp_{'a' * 36}\napi_key: 'abcdefgh12345'\npassword: yes\n"
        f"tokens: 3000\nuse {KEY} for the api\nAKIAABCDEFGHIJKLMNOP\nmy vpn corp-12345678\n"
    )
    found = secrets_in(text, [re.compile(r"corp-\d{8}")])
    assert set(found) == {
        f"ghp_{'a' * 36}",
        "abcdefgh12345",
        KEY,
        "AKIAABCDEFGHIJKLMNOP",
        "corp-12345678",
    }


SECRETS = ["abcd", "bcdzz", "abcdef", "cdxy"]


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(["a", "b", "c", "d", "e", "f", "x", "y", "z", " ", "\x1b[1m", "\r"]),
        max_size=40,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_split_redaction_does_not_depend_on_chunking(parts: list[str], cuts: list[int]) -> None:
    data = "".join(parts).encode()
    points = sorted({c % (len(data) + 1) for c in cuts})
    assert in_chunks(Redactor(SECRETS), data, points) == in_chunks(Redactor(SECRETS), data, [])


def test_a_line_end_is_not_held_back_for_a_short_possible_start() -> None:
    r = Redactor(["tango-secret-1234"])
    assert r.redact(b"red alert\r\n") == b"red alert\r\n"  # "t" could start it: not held
    assert r.redact(b"x tango-\r\n") == b"x "  # 6 bytes of it: held across the wrap
    assert r.redact(b"secret-1234 ok") + r.flush() == b"*** ok"
