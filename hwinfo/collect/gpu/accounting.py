"""NVML accounting: whether it is on, and the processes it saw that no sample listed running.

With accounting on, the driver keeps run time, peak memory and lifetime utilization of each
process in a ring buffer (by default 4,000 processes) that outlives them. A job that starts
and ends between two of hwinfo's samples is in no running-process list, but it is in that
buffer: `AccountedProcesses` adds such jobs to per-user counters, once each.

Cost per sample: three calls, plus one statistics call per pid new to the buffer. Pids in the
buffer when hwinfo starts ended before it (or run now): they are taken as already counted, so
a restarted daemon does not count them twice, unless the daemon resumes what it had judged
before (accounting_state.py): then what ended while it was down is counted too.
"""

from __future__ import annotations

import ctypes
import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hwinfo.binding import function, pynvml
from hwinfo.collect.gpu.accounting_state import Judged
from hwinfo.collect.gpu.nvml import Reader
from hwinfo.collect.gpu.owners import ProcessOwner
from hwinfo.model.attribution import charged_user
from hwinfo.model.gpu import AccountedUsage, Accounting, GpuProcess

_ENABLED = 1  # NVML_FEATURE_ENABLED
_NOT_AVAILABLE_UINT = 0xFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE in an unsigned int
# NVML's start time is in microseconds and run time in milliseconds of the same clock as
# time.time(): a process that ended at a sample's moment may read as a little before it.
_CLOCK_SLACK_SECONDS = 1.0

_mode = function("nvmlDeviceGetAccountingMode")
_buffer_size = function("nvmlDeviceGetAccountingBufferSize")
_pids = function("nvmlDeviceGetAccountingPids")
_stats_wrapper = function("nvmlDeviceGetAccountingStats")


def _stats(handle: Any, pid: int) -> Any:
    try:
        return _stats_wrapper(handle, pid)
    except TypeError:
        # nvidia-ml-py stores None into the struct's integer field, and raises, when NVML
        # answers NVML_VALUE_NOT_AVAILABLE for the peak memory (WDDM): the same C call
        # through pynvml without its wrapper.
        stats = pynvml.c_nvmlAccountingStats_t()
        call = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetAccountingStats")
        pynvml._nvmlCheckReturn(call(handle, ctypes.c_uint(pid), ctypes.byref(stats)))
        return stats


def read_accounting(read: Reader, handle: Any) -> Accounting | None:
    """The mode and buffer size; None where NVML does not give the mode."""
    mode = read("accounting", _mode, handle)
    if mode is None:
        return None
    return Accounting(mode == _ENABLED, read("accounting", _buffer_size, handle))


def _ended_at(stats: Any) -> float:
    """When an ended process ended, in Unix seconds."""
    return stats.startTime / 1_000_000 + stats.time / 1000


class AccountedProcesses:
    """Per-user counters of processes that NVML accounting kept and no sample listed running."""

    def __init__(self, owner_of: Callable[[int], ProcessOwner | None],
                 resumed: Mapping[str, Judged] | None = None) -> None:
        """`resumed`: what a daemon before this one had judged, by GPU UUID."""
        self._owner_of = owner_of
        # GPU UUID -> pid -> how many of the buffer's entries of that pid are already judged
        # (counted, listed running, or there when hwinfo began): a pid used again is one
        # entry more, and NVML reports the latest of them (nvml.h).
        self._judged: dict[str, Counter[int]] = {}
        self._judged_at: dict[str, float] = {}
        self._resumed = dict(resumed or {})
        # GPU UUID -> the moment before which a resumed GPU's new entries ended unseen by
        # either daemon and are not counted; set for the one sample that counts the rest.
        self._missed_since: dict[str, float] = {}
        self._totals: dict[tuple[str, str | None], AccountedUsage] = {}
        # What to keep for the next daemon: replaced whole after a sample that changed it.
        self.judged: Mapping[str, Judged] = dict(self._resumed)

    def forget(self, uuid: str) -> None:
        """Accounting is off there: turning it off cleared the buffer, so start afresh."""
        self._resumed.pop(uuid, None)
        if self._judged.pop(uuid, None) is not None:
            self._judged_at.pop(uuid, None)
            self._publish()

    def _publish(self) -> None:
        # A resumed GPU not read again yet keeps what the last daemon had judged of it.
        self.judged = {**self._resumed, **{uuid: Judged(self._judged_at[uuid], dict(counts))
                                           for uuid, counts in self._judged.items()}}

    def update(self, read: Reader, handle: Any, uuid: str, index: int,
               listed: Iterable[GpuProcess]) -> None:
        """Count what ended since the last sample; `listed`: the processes listed running now."""
        now = time.time()
        pids = read("accounting", _pids, handle)
        if pids is None:
            return
        running = {p.pid: p.user for p in listed}
        # A counter is served at 0 before it first grows: Prometheus's increase() cannot see
        # a series' first value as growth. The owner-less row, and each user's on the GPUs
        # where they run, are the rows short jobs land in.
        for user in {None, *running.values()}:
            self._row(uuid, index, user)
        entries = Counter(pids)
        judged = self._judged.get(uuid)
        if judged is None:
            resumed = self._resumed.pop(uuid, None)
            if resumed is None:  # everything here ended before hwinfo, or runs now
                self._judged[uuid], self._judged_at[uuid] = entries, now
                self._publish()
                return
            # What ended while no daemon watched is counted from the next sample on, so that
            # its counters are first served at 0.
            judged = self._judged[uuid] = Counter(resumed.entries)
            self._judged_at[uuid] = resumed.at
            self._missed_since[uuid] = resumed.at - _CLOCK_SLACK_SECONDS
            self._running_judged(judged, running, entries)
            return
        missed_since = self._missed_since.pop(uuid, None)
        before = judged.copy()
        self._running_judged(judged, running, entries)
        for pid, count in entries.items():
            if count <= judged[pid]:
                continue
            # Its own reader: a pid the buffer dropped meanwhile (NotFound) is no fault to show.
            stats = Reader()("accounting", _stats, handle, pid)
            if stats is None or stats.isRunning:
                continue  # asked again next sample, once it has ended
            # Of several new entries of one pid only the latest can be read: it is counted,
            # unless it ended before the last daemon's last judgement, which would have seen it.
            judged[pid] = count
            if missed_since is None or _ended_at(stats) >= missed_since:
                self._add(uuid, index, pid, stats)
        # The buffer forgets old processes; so does this, or it would grow for ever.
        judged = self._judged[uuid] = Counter({pid: min(judged[pid], n)
                                               for pid, n in entries.items() if judged[pid]})
        if judged != before:
            self._judged_at[uuid] = now
            self._publish()

    @staticmethod
    def _running_judged(judged: Counter[int], running: Iterable[int], entries: Counter[int]) -> None:
        """Listed running: the ledger counts it from the process lists."""
        for pid in running:
            judged[pid] = max(judged[pid], entries[pid])

    def _add(self, uuid: str, index: int, pid: int, stats: Any) -> None:
        owner = self._owner_of(pid)
        started = stats.startTime / 1_000_000
        # A live process of that pid is the one accounted only if it began by then (it can
        # still run after freeing the GPU); a later one reused the pid.
        user = (charged_user(owner.user, owner.attribution) if owner is not None
                and owner.started_at is not None and owner.started_at <= started + 1 else None)
        usage = self._row(uuid, index, user)
        run = stats.time / 1000
        usage.processes += 1
        usage.run_seconds += run
        if stats.gpuUtilization != _NOT_AVAILABLE_UINT:
            usage.busy_seconds += run * min(stats.gpuUtilization, 100) / 100

    def _row(self, uuid: str, index: int, user: str | None) -> AccountedUsage:
        return self._totals.setdefault((uuid, user), AccountedUsage(index, user, 0, 0.0, 0.0))

    def usage(self, present: dict[str, int]) -> list[AccountedUsage]:
        """Totals of the GPUs present now (UUID -> index), by GPU then user: copies, so that
        a published snapshot keeps the figures of its own moment."""
        rows = [dataclasses.replace(usage, gpu_index=present[uuid])
                for (uuid, _), usage in self._totals.items() if uuid in present]
        return sorted(rows, key=lambda u: (u.gpu_index, u.user or ""))

