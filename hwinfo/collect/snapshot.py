"""Runs the collectors and assembles a Snapshot; one failing source never sinks the others.

Each source's section comes with its state (model/snapshot.py SourceState): read now, an
older reading kept because NVML did not answer in time, failed, or not collected.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import hwinfo
from hwinfo.collect.claims import read_claims
from hwinfo.collect.cpu import CpuCollector
from hwinfo.collect.errors import StaleGpu
from hwinfo.collect.host import HostCollector
from hwinfo.collect.memory import MemoryCollector
from hwinfo.collect.network import NetworkCollector
from hwinfo.collect.storage import StorageCollector
from hwinfo.collect.sysfs import Root, RootError
from hwinfo.model.host import Host
from hwinfo.model.snapshot import SCHEMA_VERSION, Snapshot
from hwinfo.model.sources import FAILED, NOT_COLLECTED, OK, STALE, SourceError, SourceState

if TYPE_CHECKING:
    from hwinfo.collect.job_resources import JobResourcesCollector
    from hwinfo.collect.pci import PciCollector
    from hwinfo.model.gpu import GpuSystem

T = TypeVar("T")


class GpuSource(Protocol):
    """The GPU collector, or the deadline-guarded wrapper around it (collect/deadline.py)."""

    def collect(self) -> GpuSystem: ...

    def close(self) -> None: ...


def read_nothing(section: Any) -> bool:
    """Whether a section has no fact at all: every field None or empty (an empty --root)."""
    return all(
        value is None or value == [] or value == {}
        for value in (getattr(section, f.name) for f in dataclasses.fields(section))
    )


class _Collection:
    """One snapshot's sources as they are read: their state, errors and durations."""

    def __init__(self, started: float, root: Root) -> None:
        self.started = started
        self.root = root
        self.errors: list[SourceError] = []
        self.took: dict[str, float] = {}
        self.sources: list[SourceState] = []

    def ok(self, source: str) -> None:
        self.sources.append(SourceState(source, OK, self.started, 0.0, None))

    def failed(self, source: str, message: str) -> None:
        self.errors.append(SourceError(source, message))
        self.sources.append(SourceState(source, FAILED, None, None, message))

    def read(self, source: str, read: Callable[[], T], whole: bool = True) -> T | None:
        """read() into its section; a collector bug or a hung NVML costs this section only.

        `whole`: a section in which nothing at all was read counts as failed.
        """
        began = time.perf_counter()
        try:
            section = read()
        except StaleGpu as exc:
            age = max(0.0, self.started - exc.timestamp_seconds)
            self.sources.append(SourceState(source, STALE, exc.timestamp_seconds, age, str(exc)))
            return exc.system  # type: ignore[return-value]  # only the GPU source is ever stale
        except Exception as exc:  # noqa: BLE001 - an unexpected kernel file must not sink the report
            self.failed(source, str(exc) if _worded(exc) else f"{type(exc).__name__}: {exc}")
            return None
        finally:
            self.took[source] = time.perf_counter() - began
        if whole and read_nothing(section):
            self.failed(source, f"nothing could be read below {self.root.path}")
            return None
        self.ok(source)
        return section


class _Unreadable:
    """A collector whose static inventory could not be read (a kernel file it cannot parse):
    each snapshot's section fails with that reason, and the other sources go on."""

    def __init__(self, reason: Exception) -> None:
        self.reason = reason

    def collect(self) -> Any:
        raise self.reason

    @staticmethod
    def identity() -> Host:
        return Host(**dict.fromkeys(f.name for f in dataclasses.fields(Host)))


C = TypeVar("C")


def _built(make: Callable[[Root], C], root: Root) -> C | _Unreadable:
    try:
        return make(root)
    except RootError:
        raise  # a file below --root that cannot be used at all: the command says so at once
    except Exception as exc:  # noqa: BLE001 - as in _Collection.read: this source only
        return _Unreadable(exc)


def _worded(exc: Exception) -> bool:
    """Our own exceptions already say what happened in words; a bug's need its type."""
    return type(exc).__module__.startswith("hwinfo.")


class SnapshotCollector:
    """Holds the per-source collectors (and their static inventory) between snapshots."""

    def __init__(self, root: Root, gpu: GpuSource | None = None, claims: str | None = None,
                 with_commands: bool = False) -> None:
        """`claims`: the claims directory of `hwinfo run` to read; None: not read."""
        self.root = root
        # The PCI places of GPUs, NICs and drives (collect/pci.py), for `report --topology`.
        self.pci: PciCollector | None = None
        # CPU first: where the command line has not opened its utilization window already
        # (collect/cpu.py), it opens as it is built, and the others' inventory is read within it.
        self.cpu = _built(CpuCollector, root)
        self.host = _built(HostCollector, root)
        self.memory = _built(MemoryCollector, root)
        self.storage = _built(StorageCollector, root)
        self.network = _built(NetworkCollector, root)
        self.gpu = gpu
        self.claims = claims
        self.with_commands = with_commands
        self.jobs: JobResourcesCollector | None = None  # with the GPUs' processes only

    def close(self) -> None:
        if self.gpu is not None:
            self.gpu.close()

    def collect(self) -> Snapshot:
        run = _Collection(time.time(), self.root)
        # Failed (its uptime file refused), the host section still names the host.
        host = run.read("host", self.host.collect, whole=False) or self.host.identity()
        memory = run.read("memory", self.memory.collect)
        # Whole=False: no disk or no interface but loopback is a reading (a diskless node).
        storage = run.read("storage", self.storage.collect, whole=False)
        network = run.read("network", self.network.collect, whole=False)
        if self.gpu is not None:
            gpu = run.read("gpu", self.gpu.collect, whole=False)
        else:
            gpu = None
            run.sources.append(SourceState("gpu", NOT_COLLECTED, None, None, None))
        # After the GPU sample, outside NVML's deadline: the cgroups of the jobs on the GPUs
        # (a source only where the GPUs' processes are read, as pci only with --topology).
        jobs = None
        if self.jobs is not None and gpu is not None:
            jobs = run.read("jobs", lambda: self.jobs.collect(gpu), whole=False)  # type: ignore[union-attr]
        pci = None
        if self.pci is not None:
            pci = run.read("pci", self.pci.collect, whole=False)
        claims = None
        if self.claims is not None:
            path = self.claims
            claims = run.read("claims", lambda: read_claims(path, self.with_commands), whole=False)
        # CPU last: its utilization window then overlaps the other sources' work.
        cpu = run.read("cpu", self.cpu.collect)
        return Snapshot(
            schema_version=SCHEMA_VERSION,
            hwinfo_version=hwinfo.__version__,
            timestamp_seconds=run.started,
            host=host,
            cpu=cpu,
            memory=memory,
            gpu=gpu,
            storage=storage,
            network=network,
            claims=claims,
            jobs=jobs,
            errors=run.errors,
            collection_seconds=run.took,
            sources=run.sources,
            pci=pci,
        )
