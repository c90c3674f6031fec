"""The snapshot: everything one collection saw, the only thing renderers and exporters read."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwinfo.model.claims import Claims
from hwinfo.model.cpu import Cpu
from hwinfo.model.gpu import GpuSystem
from hwinfo.model.host import Host
from hwinfo.model.jobs import JobResources
from hwinfo.model.memory import Memory
from hwinfo.model.network import Network
from hwinfo.model.pci import PciTree
from hwinfo.model.sources import SourceError, SourceState
from hwinfo.model.storage import Storage
from hwinfo.model.unixtime import UnixTime

# Bumped when a JSON field is renamed or removed; adding fields keeps it.
SCHEMA_VERSION = 1


@dataclass
class Snapshot:
    schema_version: int
    hwinfo_version: str
    timestamp_seconds: UnixTime  # the collection started
    host: Host
    cpu: Cpu | None
    memory: Memory | None
    gpu: GpuSystem | None  # None: GPU collection switched off
    # None: the source failed, or the document comes from an hwinfo that did not read it.
    storage: Storage | None = None
    network: Network | None = None
    # The CPU, memory and I/O of the jobs, pods and containers on the GPUs (model/jobs.py);
    # None: not collected (no GPU processes asked for, or a document older than the field).
    jobs: list[JobResources] | None = None
    # Claims of `hwinfo run` on this host; None: not read (an older daemon's document).
    claims: Claims | None = None
    errors: list[SourceError] = field(default_factory=list)
    # How long each source took to read, for the exporter's self-metrics.
    collection_seconds: dict[str, float] = field(default_factory=dict)
    # Every source's freshness; documents written before this field existed read as [].
    sources: list[SourceState] = field(default_factory=list)
    # Where sysfs places GPUs, RDMA NICs and NVMe drives; None: not collected (only
    # `report --topology` reads it).
    pci: PciTree | None = None

    def source(self, name: str) -> SourceState | None:
        return next((s for s in self.sources if s.source == name), None)

    def age_seconds(self, now: float) -> float:
        """How long ago the snapshot was taken (never negative: clocks of two hosts differ)."""
        return max(0.0, now - self.timestamp_seconds)
