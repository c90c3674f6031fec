"""One thread that runs NVML calls with a deadline, and refuses new work while one hangs.

A hung NVML call cannot be cancelled from Python. Waiting on it with a timeout keeps the
sampler going; refusing new calls until it returns keeps threads from piling up behind it.
All NVML work of the daemon runs on this one thread, so NVML is never entered concurrently.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

T = TypeVar("T")


class Stalled(Exception):
    """The previous call is still running past its deadline."""

    def __init__(self, since: float) -> None:
        super().__init__(f"an NVML call has been running for {time.monotonic() - since:.0f} s")
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

    def call(self, fn: Callable[[], T], timeout: float) -> T:
        """fn() on the worker; Stalled if it (or an earlier call) outlives its deadline."""
        with self._lock:
            if self._busy_since is not None:
                raise Stalled(self._busy_since)
            self._busy_since = time.monotonic()
        future: Future[T] = Future()
        self._jobs.put((fn, future))
        try:
            return future.result(timeout)
        except FutureTimeout:
            raise Stalled(self._busy_since) from None

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
