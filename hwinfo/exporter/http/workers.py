"""The worker threads: each answers a request by calling its route's handler, and hands the
Response on (the server sends it). A request that finds every worker busy waits (in the
loop) at most Limits.queue_wait; the loop then answers it 503."""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Mapping
from http import HTTPStatus

from hwinfo.exporter.http.connection import Connection
from hwinfo.exporter.http.message import Handler, Request, Response, plain
from hwinfo.exporter.throttled_log import ThrottledLog

Job = tuple[Connection, Request]


class Workers:
    """A fixed pool of threads and the requests waiting for one. Called from the loop, but
    for finished(); a worker calls done(conn, request, response) with each answer."""

    def __init__(self, routes: Mapping[str, Handler], count: int, queue_wait: float,
                 log: ThrottledLog, done: Callable[[Connection, Request, Response], None]) -> None:
        self._routes = dict(routes)
        self._count = count
        self._queue_wait = queue_wait
        self._log = log
        self._done = done
        self._waiting: collections.deque[tuple[Connection, Request, float]] = collections.deque()
        self._busy = 0
        self._lock = threading.Lock()  # guards _busy
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._work, name=f"hwinfo-http-{n}", daemon=True)
                         for n in range(self._count)]
        for thread in self._threads:
            thread.start()

    def submit(self, conn: Connection, request: Request) -> None:
        """Answer this request when a worker is free."""
        self._waiting.append((conn, request, time.monotonic() + self._queue_wait))
        self.dispatch()

    def finished(self) -> None:
        """Called by a worker's done() before it hands the connection back: it is free."""
        with self._lock:
            self._busy -= 1

    def next_deadline(self) -> float | None:
        return self._waiting[0][2] if self._waiting else None

    def dispatch(self) -> list[Job]:
        """Hand waiting requests to free workers; those that waited too long, for a 503."""
        now = time.monotonic()
        expired: list[Job] = []
        while self._waiting:
            conn, request, deadline = self._waiting[0]
            if conn.closed:
                self._waiting.popleft()
            elif self._take_worker():
                self._waiting.popleft()
                self._jobs.put((conn, request))
            elif deadline <= now:
                self._waiting.popleft()
                expired.append((conn, request))
            else:
                break
        if expired:
            self._log.warning("overload", "all %d workers busy for %.1f s: answering 503",
                              self._count, self._queue_wait)
        return expired

    def _take_worker(self) -> bool:
        with self._lock:
            if self._busy >= self._count:
                return False
            self._busy += 1
            return True

    def stop(self, deadline: float) -> None:
        """Let every worker end after its request, waiting for none past `deadline`."""
        self._waiting.clear()
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:  # daemon threads: one stuck in a handler is left behind
            thread.join(max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            conn, request = job
            self._done(conn, request, self._respond(request))

    def _respond(self, request: Request) -> Response:
        """The route's answer to a request."""
        handler = self._routes.get(request.path)
        if handler is None:
            return plain(HTTPStatus.NOT_FOUND)
        if request.method not in ("GET", "HEAD"):
            return plain(HTTPStatus.METHOD_NOT_ALLOWED, {"Allow": "GET, HEAD"})
        try:
            response = handler(request)
            if not isinstance(response, Response):
                raise TypeError(f"handler returned {type(response).__name__}, not a Response")
        except Exception as exc:  # noqa: BLE001 - logged, throttled: clients can provoke it
            # One kind per route: the routes are the server's own, so the kinds are bounded.
            self._log.warning("handler " + request.path, "handler for %s failed: %r",
                              request.path, exc, exc_info=True)
            return plain(HTTPStatus.INTERNAL_SERVER_ERROR)
        return response
