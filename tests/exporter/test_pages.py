"""`/` of a real daemon: the page, its files and its headers, over loopback HTTP."""

from __future__ import annotations

import base64
import gzip
import hashlib
import urllib.parse
from typing import Any

import pytest

from hwinfo.exporter import pages
from hwinfo.exporter.http import Request
from hwinfo.exporter.pages import MachinePage, refresh_seconds
from hwinfo.render.html import machine
from hwinfo.render.html.assets import PAGE_HEADERS
from tests.exporter.serving import get, serving
from tests.render.pages.dom import parse


def test_the_page_its_files_and_its_headers() -> None:
    with serving("--simulate", "dgx-a100-mig", "--interval", "3") as url:
        status, headers, body = get(url + "/")
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        for name, value in PAGE_HEADERS.items():
            assert headers[name] == value
        root = parse(body)
        assert len(root.find_all("article", "card")) == 8
        assert root.find_all("body")[0].attrs["data-refresh"] == "3"
        (script,) = root.find_all("script")
        status, script_headers, code = get(urllib.parse.urljoin(url + "/", script.attrs["src"]))
        assert status == 200 and script_headers["Content-Type"].startswith("text/javascript")
        # The browser runs the file the server sends only if it is the one the policy hashed.
        digest = "sha256-" + base64.b64encode(hashlib.sha256(code).digest()).decode()
        assert script.attrs["integrity"] == digest
        assert f"script-src '{digest}'" in headers["Content-Security-Policy"]
        kinds = {}
        for node in root.find_all("link"):
            status, file_headers, _ = get(urllib.parse.urljoin(url + "/", node.attrs["href"]))
            assert status == 200 and file_headers["X-Content-Type-Options"] == "nosniff"
            assert "immutable" in file_headers["Cache-Control"]
            kinds[node.attrs["rel"]] = file_headers["Content-Type"]
        assert kinds == {"stylesheet": "text/css; charset=utf-8", "icon": "image/svg+xml"}
        # The footer's links are the daemon's other endpoints.
        for node in root.find_all("footer")[0].find_all("a"):
            assert get(urllib.parse.urljoin(url + "/", node.attrs["href"]))[0] == 200


def test_the_page_is_gzipped_for_clients_that_take_it() -> None:
    with serving("--simulate", "dgx-a100-mig") as url:
        status, headers, body = get(url + "/", {"Accept-Encoding": "gzip"})
        assert status == 200 and headers["Content-Encoding"] == "gzip"
        page = gzip.decompress(body)
        assert len(body) < len(page) / 3 and page.startswith(b"<!doctype html>")


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.5

    def time(self) -> float:
        return self.now


class _Published:
    snapshot = None  # render_machine is counted, not run


def test_the_page_is_rendered_once_a_second_per_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, rendered = _Clock(), []

    def render(snapshot: Any, reading: Any) -> bytes:
        rendered.append(reading.now)
        return b"<!doctype html>page"

    monkeypatch.setattr(pages, "time", clock)
    monkeypatch.setattr(machine, "render_machine", render)
    latest: list[_Published | None] = [None]
    page = MachinePage(lambda: latest[0], 5.0, 5.0, "9.9")  # type: ignore[arg-type, return-value]
    request = Request("GET", "/", {}, {})
    first = page(request)
    assert all(page(request) is first for _ in range(50))  # 50 viewers, one second: one page
    clock.now += 0.4
    assert page(request) is first and len(rendered) == 1
    clock.now += 0.2  # the next second: the age shown changes
    assert page(request) is not first and len(rendered) == 2
    latest[0] = _Published()  # a new sample
    page(request)
    assert len(rendered) == 3


@pytest.mark.parametrize(("interval", "refresh"), [(0.1, 2), (2.4, 2), (5.0, 5), (30.0, 30),
                                                   (86400.0, 60)])
def test_the_page_reloads_at_the_samplers_pace_within_bounds(interval: float, refresh: int) -> None:
    assert refresh_seconds(interval) == refresh
