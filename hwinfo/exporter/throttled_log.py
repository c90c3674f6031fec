"""Log lines that clients can provoke, at most one per kind per interval.

Whatever a stranger can trigger by sending requests (a failing handler, an overloaded server,
evictions) must not let them fill the disk: each kind of event is logged once, then held back
for `interval` seconds, and the next line says how many were held back. Tracebacks are for
whoever runs with --log-level debug.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable


class ThrottledLog:
    """One WARNING line per kind per interval; safe to share between threads."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}  # kind -> when it may be logged again
        self._held: dict[str, int] = {}  # kind -> lines held back since it was logged

    def warning(self, kind: str, message: str, *args: object, exc_info: bool = False) -> bool:
        """Log message % args unless a line of this kind was logged within the interval.

        With exc_info, the current exception's traceback is added at DEBUG level only.
        Returns whether the line was logged.
        """
        now = self._clock()
        with self._lock:
            if now < self._next.get(kind, float("-inf")):
                self._held[kind] = self._held.get(kind, 0) + 1
                return False
            self._next[kind] = now + self._interval
            held = self._held.pop(kind, 0)
        suffix = f" (and {held} more since the last such line)" if held else ""
        self._logger.warning(
            message + suffix, *args, exc_info=exc_info and self._logger.isEnabledFor(logging.DEBUG)
        )
        return True
