"""NVML behind a deadline: one thread runs every NVML call, and a caller waits only so long.

A hung NVML call cannot be cancelled from Python. Waiting on it with a timeout keeps the
caller going (the daemon's sampler, or a one-shot command that must end); refusing new
calls until it returns keeps threads from piling up behind it. All NVML work of a process
runs on this one thread, so NVML is never entered concurrently.

The caller's wait is a lock wait with a timeout, which a signal handler that raises
interrupts at once: Ctrl-C ends a command even while NVML hangs.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

from hwinfo.collect.errors import StaleGpu
from hwinfo.logs import get_logger

if TYPE_CHECKING:
    from hwinfo.collect.gpu.collector import GpuCollector
    from hwinfo.model.gpu import GpuSystem

T = TypeVar("T")

log = get_logger("hwinfo.nvml")


class Stalled(Exception):
    """NVML did not answer within the deadline (this call, or an earlier one still running)."""

    def __init__(self, timeout: float, since: float) -> None:
        running = time.monotonic() - since
        message = f"NVML did not answer within {timeout:g} s"
        if running > timeout + 1:  # an earlier call that still hangs
            message += f" (a call has been running for {running:.0f} s)"
        super().__init__(message)
        self.since = since


class BoundedWorker:
    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._busy_since: float | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def stalled(self) -> bool:
        with self._lock:
            return self._busy_since is not None

    def call(self, fn: Callable[[], T], timeout: float,
             overdue: tuple[float, Callable[[], None]] | None = None) -> T:
        """fn() on the worker; Stalled if it (or an earlier call) outlives its deadline. With
        `overdue` (seconds, callback): the callback runs, on this thread, once fn() has run
        that long without an answer, and the wait goes on to the deadline."""
        with self._lock:
            if self._busy_since is not None:
                raise Stalled(timeout, self._busy_since)
            self._busy_since = since = time.monotonic()
        future: Future[T] = Future()
        self._jobs.put((fn, future))
        try:
            if overdue is not None and overdue[0] < timeout:
                try:
                    return future.result(overdue[0])
                except FutureTimeout:
                    overdue[1]()
            return future.result(max(0.0, since + timeout - time.monotonic()))
        except FutureTimeout:
            raise Stalled(timeout, since) from None

    def close(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, future = job
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)
            finally:
                with self._lock:
                    self._busy_since = None


class GuardedGpu:
    """The GPU collector behind a deadline per sample, and a backoff while NVML is down.

    collect() returns fresh data, raises StaleGpu with the last data when NVML hangs, or
    Stalled when it hangs before any data came.
    """

    def __init__(self, inner: GpuCollector, timeout: float, max_backoff: float = 60.0) -> None:
        self.inner = inner
        self.timeout = timeout
        self.max_backoff = max_backoff
        self.worker = BoundedWorker("hwinfo-nvml")
        self.stalled = False
        # (seconds, callback): told when a sample runs that long, before its deadline (watch).
        self._overdue: tuple[float, Callable[[], None]] | None = None
        self._last: GpuSystem | None = None
        self._last_at = 0.0  # Unix time self._last was read
        self._backoff = 0.0
        self._retry_at = 0.0

    def watch(self, seconds: float, overdue: Callable[[], None]) -> None:
        """Call `overdue` (on the collecting thread) when a sample has run `seconds` without
        an answer from NVML, before its deadline: the daemon's next sample was due by then."""
        self._overdue = (seconds, overdue)

    def collect(self) -> GpuSystem:
        now = time.monotonic()
        if self._last is not None and self._last.status != "ok" and now < self._retry_at:
            return self._last  # NVML is down: do not knock on it every sample
        started = time.time()
        try:
            system = self.worker.call(self.inner.collect, self.timeout, self._overdue)
        except Stalled as exc:
            if not self.stalled:
                kept = "; keeping the last GPU data" if self._last is not None else ""
                log.warning("GPU collection stalled: %s%s", exc, kept)
            self.stalled = True
            if self._last is None:
                raise
            raise StaleGpu(self._last, self._last_at, str(exc)) from None
        self.inner.label(system)  # what users write is read here, never inside the deadline
        if self.stalled:
            log.warning("GPU collection answers again")
        self.stalled = False
        if system.status == "ok":
            self._backoff = 0.0
        else:
            # Driver reloading or missing: retry after 1, 2, 4 ... s, at most max_backoff.
            self._backoff = min(self.max_backoff, max(1.0, self._backoff * 2))
            self._retry_at = now + self._backoff
        self._last, self._last_at = system, started
        return system

    def close(self) -> None:
        try:
            self.worker.call(self.inner.close, 1.0)
        except Stalled:
            pass  # the hung call holds NVML; the process exits without shutting it down
        self.worker.close()
