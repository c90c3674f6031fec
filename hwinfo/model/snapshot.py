"""The snapshot: everything one collection saw, the only thing renderers and exporters read."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwinfo.model.cpu import Cpu
from hwinfo.model.gpu import GpuSystem
from hwinfo.model.host import Host
from hwinfo.model.memory import Memory

# Bumped when a JSON field is renamed or removed; adding fields keeps it.
SCHEMA_VERSION = 1


@dataclass
class SourceError:
    """A collector that failed as a whole; its section is null."""

    source: str  # "cpu", "memory", "gpu"
    message: str


@dataclass
class Snapshot:
    schema_version: int
    hwinfo_version: str
    timestamp_seconds: float  # Unix time the collection started
    host: Host
    cpu: Cpu | None
    memory: Memory | None
    gpu: GpuSystem | None  # None: GPU collection switched off
    errors: list[SourceError] = field(default_factory=list)
    # How long each source took to read, for the exporter's self-metrics.
    collection_seconds: dict[str, float] = field(default_factory=dict)
