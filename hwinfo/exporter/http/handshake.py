"""TLS handshakes, stepped on a thread of their own so that the event loop never spends their
cryptography.

The loop waits for a handshaking socket to be ready, sets the connection aside and submits
it; this thread calls its non-blocking do_handshake() (OpenSSL works without the GIL, on
another core) and hands back what the handshake waits for next. A step never waits for the
network. The queue is ordered as the auth gate's: the client that asked least goes first,
so a flood of new TLS connections from a few hundred addresses does not stand between a
scraper's first login and its handshake.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

from hwinfo.exporter.http.connection import Connection

# done(conn, outcome): 0 when the handshake is complete, the selector event it waits for,
# or the OSError it failed with.
Done = Callable[[Connection, "int | OSError"], None]


def step(conn: Connection) -> int | OSError:
    """One step of conn's handshake: see Done for what it returns."""
    if time.monotonic() > conn.deadline:
        return TimeoutError("TLS handshake timed out")
    try:
        return conn.handshake()
    except OSError as exc:  # ssl.SSLError is one
        return exc


class Handshakes:
    """A queue of handshake steps, the least demanding client's first, and the thread that
    takes them; started with the first step."""

    def __init__(self, done: Done) -> None:
        self._done = done
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queue: list[tuple[float, int, Connection]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, conn: Connection, demand: float) -> None:
        """Step conn's handshake soon, before those of more demand; done() follows, from this
        module's thread."""
        with self._lock:
            heapq.heappush(self._queue, (demand, next(self._order), conn))
            self._ready.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hwinfo-tls", daemon=True)
                self._thread.start()

    def close(self, timeout: float) -> list[Connection]:
        """Stop after the step under way (waiting `timeout` at most); the connections whose
        step was not taken, for the caller to close."""
        with self._lock:
            self._closed = True
            self._ready.notify()
            left = [conn for _, _, conn in self._queue]
            self._queue.clear()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return left

    def _next(self) -> Connection | None:
        with self._lock:
            while not self._queue and not self._closed:
                self._ready.wait()
            return None if self._closed else heapq.heappop(self._queue)[2]

    def _run(self) -> None:
        while (conn := self._next()) is not None:
            self._done(conn, step(conn))
