"""The routes of hwinfo's pages: the machine page at `/`, and the files every page loads.

A page is rendered off the scrape path: a scrape reads bytes the sampler made and never
waits for a page, and a daemon no one looks at never loads the page's renderer. The machine page is rendered at most once a second per snapshot, however
many people look (its age is in whole seconds), and kept gzipped beside; `hwinfo board`
serves its page with the same headers and files.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from hwinfo.exporter.http import Handler, Request, Response, gzip_bytes
from hwinfo.render.html.assets import ASSET_HEADERS, ASSETS, PAGE_HEADERS, Asset

if TYPE_CHECKING:  # the sampler, and the collectors with it, are serve's, not the board's
    from hwinfo.exporter.sampler import Published

HTML = "text/html; charset=utf-8"
# The page reloads at the sampler's pace, but never more than every 2 s nor less than a minute.
MIN_REFRESH_SECONDS, MAX_REFRESH_SECONDS = 2, 60


def page_response(body: bytes, status: int = 200) -> Response:
    """A page with its security headers, gzipped once for every client that takes gzip."""
    return Response(status, body, HTML, PAGE_HEADERS, gzip_body=gzip_bytes(body))


def refresh_seconds(interval: float) -> int:
    """How often a page reloads itself when its data changes every `interval` seconds."""
    return max(MIN_REFRESH_SECONDS, min(MAX_REFRESH_SECONDS, round(interval)))


def _asset(asset: Asset) -> Handler:
    response = Response(200, asset.body, asset.content_type, ASSET_HEADERS,
                        gzip_body=gzip_bytes(asset.body))
    return lambda _: response


def asset_routes() -> dict[str, Handler]:
    """The stylesheet, script and icon (linked with their digests: Asset.link)."""
    return {asset.path: _asset(asset) for asset in ASSETS}


class MachinePage:
    """`/` of `hwinfo serve`: the last snapshot as a page (render/html/machine.py)."""

    def __init__(self, latest: Callable[[], Published | None], interval: float,
                 nvml_timeout: float, version: str) -> None:
        """`latest` gives the sampler's last Published sample (None before the first)."""
        self._latest = latest
        self._refresh = refresh_seconds(interval)
        # A sample is due every interval and may wait on NVML for its deadline: past three
        # intervals and that deadline, the sampler is not keeping up.
        self._stale_after = 3 * interval + nvml_timeout
        self._version = version
        self._lock = threading.Lock()
        self._made_for: tuple[Published | None, int] | None = None
        self._made: Response | None = None

    def __call__(self, _: Request) -> Response:
        # Imported by the first page view: the renderers and the health rules are 0.5 MiB
        # of a daemon that only Prometheus may ever ask.
        from hwinfo.render.html.machine import Reading, render_machine

        latest = self._latest()
        now = time.time()
        with self._lock:  # the others asking in the same second wait for this rendering
            made_for = self._made_for
            if (self._made is not None and made_for is not None and made_for[0] is latest
                    and made_for[1] == int(now)):
                return self._made
            snapshot = None if latest is None else latest.snapshot
            reading = Reading(now, self._refresh, self._stale_after, self._version)
            self._made = page_response(render_machine(snapshot, reading))
            self._made_for = (latest, int(now))
            return self._made
