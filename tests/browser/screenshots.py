"""The README's screenshots of the pages, taken by the browser tests from the simulator.

HWINFO_SCREENSHOTS=1 makes the tests write them (docs/screenshots/, in 256 colours:
png.small); otherwise they check that the README's copies are there, of their size, and small.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.browser.chromium import Chromium, png_size
from tests.browser.png import small

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# What the README may weigh per picture.
MAX_SCREENSHOT_BYTES = 80 * 1024


def screenshot_for_readme(browser: Chromium, name: str, width: int, height: int) -> None:
    """Write docs/screenshots/NAME.png from the page open now (with HWINFO_SCREENSHOTS=1), or
    check that the README's copy is there, of that size and small."""
    path = SCREENSHOTS / f"{name}.png"
    if os.environ.get("HWINFO_SCREENSHOTS") == "1":
        browser.viewport(width, height, mobile=width < 500)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(small(browser.screenshot()))
    png = path.read_bytes()
    assert png_size(png) == (width, height), f"{path}: not {width}x{height}"
    assert len(png) <= MAX_SCREENSHOT_BYTES, f"{path}: {len(png)} bytes"
