"""Runs the collectors and assembles a Snapshot; one failing source never sinks the others."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

import hwinfo
from hwinfo.collect.cpu import CpuCollector
from hwinfo.collect.host import HostCollector
from hwinfo.collect.memory import MemoryCollector
from hwinfo.collect.sysfs import Root
from hwinfo.model.gpu import GpuSystem
from hwinfo.model.snapshot import SCHEMA_VERSION, Snapshot, SourceError

T = TypeVar("T")


class GpuSource(Protocol):
    """The GPU collector, or the daemon's deadline-guarded wrapper around it."""

    def collect(self) -> GpuSystem: ...

    def close(self) -> None: ...


def _guarded(
    source: str, read: Callable[[], T], errors: list[SourceError], took: dict[str, float]
) -> T | None:
    # A collector bug or an unexpected kernel file must cost one section, not the report.
    started = time.perf_counter()
    try:
        return read()
    except Exception as exc:  # noqa: BLE001
        errors.append(SourceError(source, f"{type(exc).__name__}: {exc}"))
        return None
    finally:
        took[source] = time.perf_counter() - started


class SnapshotCollector:
    """Holds the per-source collectors (and their static inventory) between snapshots."""

    def __init__(self, root: Root, gpu: GpuSource | None = None) -> None:
        self.host = HostCollector(root)
        self.memory = MemoryCollector(root)
        self.cpu = CpuCollector(root)
        self.gpu = gpu

    def close(self) -> None:
        if self.gpu is not None:
            self.gpu.close()

    def collect(self) -> Snapshot:
        started = time.time()
        errors: list[SourceError] = []
        took: dict[str, float] = {}
        host = self.host.collect()
        memory = _guarded("memory", self.memory.collect, errors, took)
        gpu = _guarded("gpu", self.gpu.collect, errors, took) if self.gpu is not None else None
        # CPU last: its utilization window then overlaps the other sources' work.
        cpu = _guarded("cpu", self.cpu.collect, errors, took)
        return Snapshot(
            schema_version=SCHEMA_VERSION,
            hwinfo_version=hwinfo.__version__,
            timestamp_seconds=started,
            host=host,
            cpu=cpu,
            memory=memory,
            gpu=gpu,
            errors=errors,
            collection_seconds=took,
        )
