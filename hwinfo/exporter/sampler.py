"""The background sampler: collects a snapshot every interval and publishes it pre-rendered.

Scrapes never collect: they read `Sampler.latest`, swapped in whole after each sample.
NVML runs behind a deadline on its own thread (collect/deadline.py); a hung call leaves the
last GPU data in place, flagged stale in the snapshot, and the host sections keep updating.
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hwinfo.collect.deadline import GuardedGpu
from hwinfo.collect.snapshot import SnapshotCollector
from hwinfo.exporter.exposition import Rendered, Selection, render
from hwinfo.exporter.status import DaemonStatus, SourceStatus
from hwinfo.logs import get_logger
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.sources import OK
from hwinfo.render.json import render_json

if TYPE_CHECKING:
    from hwinfo.collect.gpu.accounting_state import StateKeeper

log = get_logger("hwinfo.sampler")
# Sampling intervals a GPU sample may run before its data is flagged stalled.
OVERDUE_SAMPLES = 2


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
        keeper: StateKeeper | None = None,
    ) -> None:
        """`keeper` writes what the collector keeps for the next daemon, after each sample."""
        self.collector = collector
        self.keeper = keeper
        self.selection = selection
        self.interval = interval
        self.status = status
        self.latest: Published | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hwinfo-sampler", daemon=True)
        if isinstance(collector.gpu, GuardedGpu):
            # Two samples missed is a hang as far as readers are concerned: the ledger stops
            # charging the GPU then, not at the NVML deadline (seconds later).
            collector.gpu.watch(OVERDUE_SAMPLES * interval, self._gpu_overdue)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        # A sample under way (NVML up to its deadline) is not waited for: the process is
        # ending, and its result would be thrown away. The thread is a daemon thread.
        self._thread.join(timeout=1.0)

    def sample(self) -> Published:
        snapshot = self.collector.collect()
        self._update_status(snapshot)
        published = Published(snapshot, render(snapshot, self.status, self.selection))
        self.latest = published
        if self.keeper is not None:
            self.keeper.save()
        return published

    def _gpu_overdue(self) -> None:
        """NVML has not answered for two sampling intervals: the last sample is published
        again, its GPU data flagged stalled, until NVML answers or the deadline passes."""
        latest, state = self.latest, self.status.sources.get("gpu")
        if latest is None or state is None:
            return
        state.stalled = True
        self.latest = Published(latest.snapshot, render(latest.snapshot, self.status, self.selection))

    def _update_status(self, snapshot: Snapshot) -> None:
        status = self.status
        status.samples_total += 1
        gpu = self.collector.gpu
        stalled = isinstance(gpu, GuardedGpu) and gpu.stalled
        for source, took in snapshot.collection_seconds.items():
            read = snapshot.source(source)
            state = status.sources.setdefault(source, SourceStatus())
            state.duration_seconds = took
            state.stalled = source == "gpu" and stalled
            # NVML being down (no driver) is not a failed collection: hwinfo_nvml_up says it.
            state.success = read is not None and read.state == OK
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
