"""Redaction judged by an oracle of its own: what a terminal would show.

The chunking property in ``test_redact`` compares the Redactor with itself (a
redactor that hides nothing passes it). Here the expected output is worked out
without it: strip what a terminal does not show (colour codes, carriage
returns), replace each secret in that text, leftmost and longest first, with
``***``; the Redactor's output, stripped the same way, must be exactly that,
however the stream was cut into reads.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentd.session.redact import Redactor

SECRETS = ["abcd", "bcdzz", "abcdef", "cdxy"]
CONTROLS = re.compile(rb"\x1b\[1m|\r")
ORACLE = re.compile(b"|".join(re.escape(s.encode()) for s in sorted(SECRETS, key=len)[::-1]))


def shown(data: bytes) -> bytes:
    return CONTROLS.sub(b"", data)


def in_chunks(r: Redactor, data: bytes, points: list[int]) -> bytes:
    cuts = [0, *points, len(data)]
    return b"".join(r.redact(data[a:b]) for a, b in itertools.pairwise(cuts)) + r.flush()


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(["a", "b", "c", "d", "e", "f", "x", "y", "z", " ", "\x1b[1m", "\r"]),
        max_size=40,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_what_the_terminal_shows_has_every_secret_masked_and_nothing_else(
    parts: list[str], cuts: list[int]
) -> None:
    data = "".join(parts).encode()
    points = sorted({c % (len(data) + 1) for c in cuts})
    out = in_chunks(Redactor(SECRETS), data, points)
    assert shown(out) == ORACLE.sub(b"***", shown(data))


def test_a_stream_without_secrets_comes_out_byte_for_byte() -> None:
    data = b"\x1b[1mabc\r\nbcd z cdx\x1b[0m abce\r\n" * 50
    assert in_chunks(Redactor(SECRETS), data, [7, 300, 301, 900]) == data
