"""A headless Chromium per test file, each test on a blank tab with its own events."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.chromium import Chromium


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    with Chromium() as browser:
        yield browser


@pytest.fixture
def browser(chromium: Chromium) -> Chromium:
    """The file's Chromium with this test's events only, scripts on, on about:blank."""
    chromium.javascript(True)
    chromium.open("about:blank")
    chromium.forget_events()
    return chromium
