"""Loading a running server's web config again: on request (SIGHUP) or when its files change.

A reload reads and parses off the loop (a hostile YAML file can take seconds) on a thread of
its own, and never weakens the configuration in force: webconfig.load_web_config refuses a
file that would (its `previous=`), and the previous configuration stays.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

from hwinfo.exporter import webconfig
from hwinfo.exporter.webconfig import WebConfig, WebConfigError
from hwinfo.logs import get_logger

logger = get_logger(__name__)

_POLL_INTERVAL = 1.0  # seconds between checks of the web config's files


class Reloader:
    """Watches one web config's files; poll() says when a new configuration is to be applied."""

    def __init__(self, config: WebConfig | None, wake: Callable[[], None]) -> None:
        self._config = config
        self._wake = wake  # tells the loop that a load finished
        self._watched = config.watched_files() if config is not None else ()
        self._stamp = _stamp(self._watched)
        self._next_poll = 0.0
        self._requested = False
        self._loading = False
        self._loaded: queue.SimpleQueue[tuple[str, WebConfig | WebConfigError]] = (
            queue.SimpleQueue()
        )

    def request(self) -> None:
        """Load again at the next poll, changed or not; safe from a signal handler."""
        self._requested = True

    def poll(self, now: float) -> WebConfig | None:
        """A newly loaded configuration to apply now, if any; starts a load when one is due."""
        loaded = self._finish()
        if self._loading:  # a request made meanwhile stays, for when this load is done
            return loaded
        requested = self._requested
        if not requested and (self._config is None or now < self._next_poll):
            return loaded
        self._requested = False
        self._next_poll = now + _POLL_INTERVAL
        stamp = _stamp(self._watched)
        if stamp != self._stamp or requested:
            # Remembered even when loading fails, so that a broken file is reported once.
            self._stamp = stamp
            self._start("on request" if requested else "its files changed")
        return loaded

    def _start(self, why: str) -> None:
        if self._config is None:
            logger.info("no web config to reload: hwinfo serve was started without one")
            return
        previous = self._config

        def load() -> None:
            try:
                outcome: WebConfig | WebConfigError = webconfig.load_web_config(
                    previous.path, previous)
            except WebConfigError as exc:
                outcome = exc
            except Exception as exc:  # noqa: BLE001 - a bug must not leave a load under way
                outcome = WebConfigError(f"{previous.path}: {exc!r}")
            self._loaded.put((why, outcome))
            self._wake()

        self._loading = True
        logger.info("reading the web config %s again (%s)", previous.path, why)
        threading.Thread(target=load, name="hwinfo-reload", daemon=True).start()

    def _finish(self) -> WebConfig | None:
        try:
            why, outcome = self._loaded.get_nowait()
        except queue.Empty:
            return None
        self._loading = False
        if isinstance(outcome, WebConfigError):
            logger.warning("web config not reloaded, keeping the previous one: %s", outcome)
            return None
        logger.info("web config reloaded from %s (%s)", outcome.path, why)
        self._config = outcome
        if outcome.watched_files() != self._watched:
            self._watched = outcome.watched_files()
            self._stamp = _stamp(self._watched)
        return outcome


def _stamp(files: tuple[str, ...]) -> tuple[tuple[int, int, int] | None, ...]:
    """What tells that a file changed: replaced (inode), rewritten (mtime, size) or gone."""
    stamps: list[tuple[int, int, int] | None] = []
    for name in files:
        try:
            info = os.stat(name)
        except OSError:
            stamps.append(None)
            continue
        stamps.append((info.st_ino, info.st_mtime_ns, info.st_size))
    return tuple(stamps)
