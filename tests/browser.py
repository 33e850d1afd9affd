"""One headless-Chromium page for browser tests (HTML report, UI), shared so every test launches it alike.

Playwright drives the system Chromium (Debian's ``/usr/bin/chromium``) rather than a browser Playwright
would download: nothing may download at run time, and CI installs the Debian package. Tests that need a
page ask for the ``chromium_page`` fixture (``tests/conftest.py`` imports it, so every test sees it);
without Chromium or Playwright they skip with the
reason and the command that fixes it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]


def chromium_path() -> Path | None:
    """The system Chromium: ``MTAGENT_TEST_CHROMIUM`` if set, else ``/usr/bin/chromium`` or one on PATH."""
    override = os.environ.get("MTAGENT_TEST_CHROMIUM")
    candidates = [override] if override else ["/usr/bin/chromium", shutil.which("chromium") or "",
                                              shutil.which("chromium-browser") or ""]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def skip_reason() -> str | None:
    """Why browser tests cannot run here, or None when they can."""
    if chromium_path() is None:
        return "headless Chromium not found at /usr/bin/chromium (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture
def chromium_page(tmp_path: Path) -> Iterator[Any]:
    """A fresh Playwright ``Page`` in headless system Chromium, 1000×900, closed after the test."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium_path()), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            yield page
        finally:
            browser.close()
