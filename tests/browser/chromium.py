"""Headless Chromium driven over the DevTools protocol on a pipe, with the standard library.

`--remote-debugging-pipe` makes Chromium read commands from its fd 3 and write answers and
events to its fd 4, each a JSON message ended by a NUL byte
(https://chromedevtools.github.io/devtools-protocol/). One tab is opened and attached in
flat mode; every event of the tab is kept, so a test can ask what the console said, which
exceptions were thrown and whether a dialog (`alert`) opened.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from conftest import require_tool

# Every wait has a deadline: a page that never loads fails its test, never hangs it.
DEADLINE_SECONDS = 30.0
# What a headless browser must not do on a test machine: reach out to Google, update itself.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--hide-scrollbars", "--remote-debugging-pipe")


class BrowserError(AssertionError):
    """Chromium answered a command with an error, or not in time."""


class Chromium:
    """One headless Chromium with one tab; use as a context manager."""

    def __init__(self) -> None:
        binary = require_tool("chromium")
        self._profile = tempfile.mkdtemp(prefix="hwinfo-chromium-")
        reading, self._commands = os.pipe()
        self._answers, writing = os.pipe()
        # bash puts Chromium's ends at fds 3 and 4 and becomes Chromium (no preexec_fn, which
        # is unsafe with threads). They are moved to 10 or above first, so that moving one to
        # 3 or 4 cannot overwrite the other (dash takes no fd above 9: bash, not sh).
        to_browser, from_browser = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
                                    for fd in (reading, writing))
        os.close(reading)
        os.close(writing)
        wiring = f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}'
        self.process = subprocess.Popen(
            ["bash", "-c", wiring, binary, *FLAGS, f"--user-data-dir={self._profile}",
             "about:blank"],
            pass_fds=(to_browser, from_browser), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._next_id = 0
        self._lock = threading.Condition()
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._closed = False
        threading.Thread(target=self._read, name="chromium-reader", daemon=True).start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)

    def __enter__(self) -> Chromium:  # noqa: PYI034 - Self is Python 3.11's
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.send("Browser.close", timeout=10)
            except (BrowserError, OSError):
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        os.close(self._commands)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._answers, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                os.close(self._answers)
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._lock:
                for message in messages:
                    data = json.loads(message)
                    if "id" in data:
                        self._replies[data["id"]] = data
                        continue
                    self.events.append(data)
                    if data.get("method") == "Page.javascriptDialogOpening":
                        # Kept as a problem, and dismissed: an open dialog blocks the page.
                        self._post("Page.handleJavaScriptDialog", {"accept": False},
                                   data.get("sessionId"))
                self._lock.notify_all()

    def _post(self, method: str, params: dict[str, Any], session: str | None) -> int:
        """Send a command without waiting for its answer; its id. Called holding the lock or not."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            message: dict[str, Any] = {"id": ident, "method": method, "params": params}
            if session is not None:
                message["sessionId"] = session
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        return ident

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = False,
             timeout: float = DEADLINE_SECONDS) -> dict[str, Any]:
        """A command's result; BrowserError for an error or no answer within `timeout`."""
        ident = self._post(method, params or {}, self.session if session else None)
        deadline = time.monotonic() + timeout
        with self._lock:
            while ident not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise BrowserError(f"no answer to {method} within {timeout:g} s")
                self._lock.wait(left)
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_for(self, what: str, found: Callable[[], Any],
                 timeout: float = DEADLINE_SECONDS) -> Any:
        """What `found` returns once it is truthy, asked again after each event; BrowserError
        if it is not within `timeout`."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                self._lock.release()
                try:
                    result = found()
                finally:
                    self._lock.acquire()
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserError(f"timed out waiting for {what}")
                self._lock.wait(min(left, 0.25))

    def event_count(self, method: str) -> int:
        with self._lock:
            return sum(e.get("method") == method for e in self.events)

    def viewport(self, width: int, height: int, mobile: bool = False) -> None:
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
                  session=True)

    def javascript(self, enabled: bool) -> None:
        self.send("Emulation.setScriptExecutionDisabled", {"value": not enabled}, session=True)

    def open(self, url: str) -> None:
        """Load `url` in the tab and wait for its load event."""
        loads = self.event_count("Page.loadEventFired")
        result = self.send("Page.navigate", {"url": url}, session=True)
        if result.get("errorText"):
            raise BrowserError(f"{url}: {result['errorText']}")
        self.wait_for(f"{url} to load", lambda: self.event_count("Page.loadEventFired") > loads)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serializable)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, full_page: bool = False) -> bytes:
        """A PNG of the viewport, or of the whole page."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            width, height = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        return base64.b64decode(self.send("Page.captureScreenshot", params, session=True)["data"])

    def problems(self) -> list[str]:
        """What a person with the developer tools open would see as errors: console errors,
        exceptions thrown, Chromium's own error entries (CSP violations, failed loads), and
        any dialog a script opened."""
        found = []
        with self._lock:
            events = list(self.events)
        for event in events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                found.append(f"{entry['source']}: {entry['text']} {entry.get('url', '')}")
            elif method == "Page.javascriptDialogOpening":
                found.append(f"dialog: {params['type']} {params['message']!r}")
        return found

    def forget_events(self) -> None:
        with self._lock:
            self.events.clear()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's header chunk."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", png[16:24])
    return width, height
