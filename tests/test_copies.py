"""Files copied from the workplace's shared dir stay the same as their originals.

The suite must run from a checkout alone, so it carries copies of the raw TUI
captures and of the fake model servers; where the originals are present
(``../shared`` beside the checkout), a drift between the two fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SHARED = TESTS.parent.parent / "shared"
COPIES = [
    *[
        (TESTS / "fixtures" / "tui" / p.name, p)
        for p in sorted((SHARED / "fixtures" / "tui").glob("*"))
    ],
    *[
        (TESTS / "realcli" / name, SHARED / "realcli" / name)
        for name in (
            "fake_anthropic.py",
            "fake_openai.py",
            "seed_cli_homes.py",
            "fake_gemini.py",
            "seed_gemini.py",
        )
    ],
]


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared dir beside this checkout")
@pytest.mark.parametrize(("copy", "original"), COPIES, ids=[c.name for c, _ in COPIES])
def test_copy_matches_its_original(copy: Path, original: Path) -> None:
    assert copy.read_bytes() == original.read_bytes(), f"{copy} drifted from {original}"


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared dir beside this checkout")
def test_every_shared_capture_is_copied() -> None:
    originals = {p.name for p in (SHARED / "fixtures" / "tui").glob("*")}
    copies = {p.name for p in (TESTS / "fixtures" / "tui").glob("*")}
    assert originals <= copies, f"not copied: {sorted(originals - copies)}"
