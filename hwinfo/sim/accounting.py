"""NVML's per-process accounting on one simulated GPU: its mode and the driver's ring buffer.

NVML (Accounting Statistics): with accounting on, the driver keeps statistics of each compute
or graphics process from its start, in a circular buffer of `buffer_size` processes that
outlives them; `time` is 0 while a process runs and its run time once it has ended. Turning
accounting off clears the buffer, and so does clearing it (ended processes only).

A GPU's processes end here when a scenario's process list changes (Machine.set_processes,
reconfigure_mig); a scenario can also declare processes that ended at a given moment after
the driver loaded, such as short jobs that no running-process list ever showed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from hwinfo.sim.scenario_model import AccountedProcessSpec, AccountingSpec, GpuSpec, ProcessSpec

MIB = 1 << 20


@dataclass(frozen=True)
class Record:
    """One process as nvmlDeviceGetAccountingStats describes it."""

    pid: int
    start_us: int  # Unix time in microseconds (NVML: "CPU timestamp in usec")
    time_ms: int  # 0 while it runs
    gpu_util_percent: int | None  # over its lifetime; None: NVML_VALUE_NOT_AVAILABLE
    memory_util_percent: int | None
    max_memory_bytes: int | None
    running: bool


def _declared(spec: AccountedProcessSpec, loaded_at: float) -> Record:
    ended = loaded_at + spec.ended_after_s
    return Record(
        pid=spec.pid,
        start_us=int((ended - spec.run_ms / 1000) * 1_000_000),
        time_ms=spec.run_ms,
        gpu_util_percent=spec.gpu_util_percent,
        memory_util_percent=spec.memory_util_percent,
        max_memory_bytes=None if spec.max_memory_mib is None else spec.max_memory_mib * MIB,
        running=False,
    )


class AccountingBuffer:
    """The accounting state of one GPU; times are the host's Unix clock (plus any skew)."""

    def __init__(self, spec: AccountingSpec, loaded_at: float) -> None:
        self.enabled = spec.enabled
        self.size = spec.buffer_size
        self._loaded_at = loaded_at
        self._declared = spec.processes  # sorted by the moment they ended
        self._declared_ends = [loaded_at + d.ended_after_s for d in spec.processes]
        self._ended: deque[Record] = deque(maxlen=spec.buffer_size)
        self._started: dict[int, float] = {}  # pid -> when its statistics began
        # Declared processes that ended by then are gone (cleared, or ended while it was off).
        self._cleared_at = float("-inf") if spec.enabled else loaded_at
        self._changes = 0  # bumped by every change, for the cache of records()
        self._cache: tuple[tuple[int, ...], GpuSpec, list[Record], dict[int, Record]] | None = None

    def start(self, pids: Iterable[int], now: float) -> None:
        for pid in pids:
            self._started.setdefault(pid, now)
        self._changes += 1

    def end(self, processes: Iterable[ProcessSpec], gpu: GpuSpec, now: float) -> None:
        """Processes that have left the GPU: kept in the buffer while accounting is on."""
        for process in processes:
            started = self._started.pop(process.pid, now)
            if self.enabled:
                running = self._running(process, gpu, started)
                # Unknown: one real capture (L40S, driver 595.80, captures/text) lists every
                # ended process with a maximum memory of 0 MiB and running ones with their
                # figure; ended processes here do the same.
                self._ended.append(Record(
                    pid=process.pid, start_us=running.start_us,
                    time_ms=max(0, int((now - started) * 1000)),
                    gpu_util_percent=running.gpu_util_percent,
                    memory_util_percent=running.memory_util_percent,
                    max_memory_bytes=0, running=False,
                ))
        self._changes += 1

    def set_enabled(self, enabled: bool, running: Iterable[int], now: float) -> None:
        """NVML: disabling clears every process's statistics; enabling starts them anew."""
        if not enabled:
            self.clear(now)
            self._started.clear()
        elif not self.enabled:
            self.clear(now)  # processes that ended while it was off were never accounted
            self._started = dict.fromkeys(running, now)
        self.enabled = enabled
        self._changes += 1

    def clear(self, now: float) -> None:
        """nvmlDeviceClearAccountingPids: forget the processes that have ended."""
        self._ended.clear()
        self._cleared_at = now
        self._changes += 1

    def records(self, gpu: GpuSpec, now: float) -> list[Record]:
        """What the buffer holds now, oldest first: ended processes, then running ones."""
        return self._current(gpu, now)[0]

    def latest(self, pid: int, gpu: GpuSpec, now: float) -> Record | None:
        """The record NVML reports for a pid: of a pid used twice, the latest (nvml.h)."""
        return self._current(gpu, now)[1].get(pid)

    def _current(self, gpu: GpuSpec, now: float) -> tuple[list[Record], dict[int, Record]]:
        # Every accounting call asks: rebuilt only when something changed, so a scenario
        # that declares many processes costs its declarations once, not once per call.
        low = bisect_right(self._declared_ends, self._cleared_at)
        high = bisect_right(self._declared_ends, now)
        key = (low, high, self._changes)
        if self._cache is None or self._cache[0] != key or self._cache[1] is not gpu:
            declared = [_declared(d, self._loaded_at)
                        for d in self._declared[max(low, high - self.size):high]]
            ended = sorted([*declared, *self._ended], key=lambda r: r.start_us + r.time_ms * 1000)
            running = [self._running(p, gpu, self._started.get(p.pid, now)) for p in gpu.processes]
            records = [*ended, *running][-self.size:]
            self._cache = key, gpu, records, {r.pid: r for r in records}
        return self._cache[2], self._cache[3]

    @staticmethod
    def _running(process: ProcessSpec, gpu: GpuSpec, started: float) -> Record:
        # Unknown: how the driver averages a process's utilization over its life; the
        # process's own SM samples where the scenario gives them, else the GPU's.
        util = process.sm_percent if process.sm_percent is not None else gpu.utilization_gpu_percent
        memory_util = (process.memory_percent if process.memory_percent is not None
                       else gpu.utilization_memory_percent)
        used = process.used_memory_mib
        return Record(
            pid=process.pid, start_us=int(started * 1_000_000), time_ms=0,
            gpu_util_percent=util, memory_util_percent=memory_util,
            max_memory_bytes=None if used is None else used * MIB, running=True,
        )
