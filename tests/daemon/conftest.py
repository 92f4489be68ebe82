"""Fixtures of the daemon's tests in more than one module: the dashboard's browser."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import CHROMIUM, CHROMIUM_FLAGS


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A Chromium context with a fresh profile (playwright's ``BrowserContext``): the
    distribution's Chromium, never a downloaded one; skips saying what to install."""
    sync_api = pytest.importorskip(
        "playwright.sync_api",
        reason="the dashboard's browser tests need playwright: pip install -e '.[test]'",
    )
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"the dashboard's browser tests need {CHROMIUM}: apt-get install chromium")
    with sync_api.sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
