"""The background sampler: collects a snapshot every interval and publishes it pre-rendered.

Scrapes never collect: they read `Sampler.latest`, swapped in whole after each sample.
NVML runs behind a deadline on its own thread (worker.py); a hung call leaves the last GPU
data in place, flagged stale, and the host sections keep updating.
"""

from __future__ import annotations

import gzip
import logging
import threading
import time
from dataclasses import dataclass, field

from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.snapshot import SnapshotCollector
from hwinfo.exporter.exposition import Rendered, Selection, render
from hwinfo.exporter.status import DaemonStatus, SourceStatus
from hwinfo.exporter.worker import BoundedWorker, Stalled
from hwinfo.model.gpu import GpuSystem
from hwinfo.model.snapshot import Snapshot
from hwinfo.render.json import render_json

log = logging.getLogger("hwinfo.sampler")


class GuardedGpu:
    """The GPU collector behind a deadline per sample, and a backoff while NVML is down."""

    def __init__(self, inner: GpuCollector, timeout: float, max_backoff: float = 60.0) -> None:
        self.inner = inner
        self.timeout = timeout
        self.max_backoff = max_backoff
        self.worker = BoundedWorker("hwinfo-nvml")
        self.stalled = False
        self._last: GpuSystem | None = None
        self._backoff = 0.0
        self._retry_at = 0.0

    def collect(self) -> GpuSystem:
        now = time.monotonic()
        if self._last is not None and self._last.status != "ok" and now < self._retry_at:
            return self._last  # NVML is down: do not knock on it every sample
        try:
            system = self.worker.call(self.inner.collect, self.timeout)
        except Stalled as exc:
            if not self.stalled:
                log.warning("GPU collection stalled: %s; serving the last GPU data", exc)
            self.stalled = True
            if self._last is None:
                raise
            return self._last
        if self.stalled:
            log.warning("GPU collection answers again")
        self.stalled = False
        if system.status == "ok":
            self._backoff = 0.0
        else:
            # Driver reloading or missing: retry after 1, 2, 4 ... s, at most max_backoff.
            self._backoff = min(self.max_backoff, max(1.0, self._backoff * 2))
            self._retry_at = now + self._backoff
        self._last = system
        return system

    def close(self) -> None:
        try:
            self.worker.call(self.inner.close, 1.0)
        except Stalled:
            pass  # the hung call holds NVML; the process exits without shutting it down
        self.worker.close()


@dataclass
class Published:
    """One sample as scrapes see it; replaced whole, never changed in place."""

    snapshot: Snapshot
    metrics: Rendered
    _json: tuple[bytes, bytes] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def json(self) -> tuple[bytes, bytes]:
        """(JSON, gzipped JSON) of the snapshot, rendered on first request: few ask for it."""
        with self._lock:
            if self._json is None:
                body = render_json(self.snapshot).encode()
                self._json = (body, gzip.compress(body, 1))
            return self._json


class Sampler:
    def __init__(
        self,
        collector: SnapshotCollector,
        selection: Selection,
        interval: float,
        status: DaemonStatus,
    ) -> None:
        self.collector = collector
        self.selection = selection
        self.interval = interval
        self.status = status
        self.latest: Published | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hwinfo-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 5)

    def sample(self) -> Published:
        snapshot = self.collector.collect()
        self._update_status(snapshot)
        published = Published(snapshot, render(snapshot, self.status, self.selection))
        self.latest = published
        return published

    def _update_status(self, snapshot: Snapshot) -> None:
        status = self.status
        status.samples_total += 1
        failed = {e.source for e in snapshot.errors}
        gpu = self.collector.gpu
        stalled = isinstance(gpu, GuardedGpu) and gpu.stalled
        for source, took in snapshot.collection_seconds.items():
            state = status.sources.setdefault(source, SourceStatus())
            state.duration_seconds = took
            state.stalled = source == "gpu" and stalled
            # NVML being down (no driver) is not a failed collection: hwinfo_nvml_up says it.
            state.success = source not in failed and not state.stalled
            if state.success:
                state.last_success_timestamp_seconds = snapshot.timestamp_seconds
            else:
                state.errors_total += 1
        if snapshot.gpu is not None:
            status.nvml_status = snapshot.gpu.status

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.sample()
            except Exception:  # the daemon outlives any one bad sample
                log.exception("sample failed")
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
