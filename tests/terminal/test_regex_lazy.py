"""``agentd.regexes`` costs nothing until a pattern is compiled for a search: RE2 and
``regex`` are imported then (a unit without patterns, and ``agentd check`` of one whose
patterns do not backtrack, never load them), and Python's Unicode spaces are found
then, the same as asking every character."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentd.regexes import _unicode_spaces


def test_the_unicode_spaces_are_every_character_python_calls_a_space() -> None:
    every = "".join(f"\\x{{{c:x}}}" for c in range(sys.maxunicode + 1) if chr(c).isspace())
    assert _unicode_spaces() == every


def loaded_after(code: str) -> set[str]:
    """The engines loaded once ``code`` ran after ``import agentd.regexes``."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import re, sys\nfrom agentd.regexes import searcher\n{code}\n"
            "print(*(m for m in ('re2', 'regex') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(proc.stdout.split())


@pytest.mark.parametrize(
    ("code", "engines"),
    [
        ("", set()),
        ("searcher(re.compile(r'Compacting\\s+conversation'))", {"re2"}),
        ("searcher(re.compile(r'limit(?! reset)'))", {"re2", "regex"}),  # RE2 cannot: regex
    ],
)
def test_an_engine_is_imported_by_the_first_pattern_that_runs_on_it(
    code: str, engines: set[str]
) -> None:
    assert loaded_after(code) == engines
