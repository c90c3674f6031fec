"""CPU inventory and load."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Cache:
    """One cache level and type, as lscpu summarises it."""

    level: int
    type: str  # "data", "instruction" or "unified", as sysfs names it
    size_bytes: int | None  # of one instance
    instances: int | None  # how many distinct instances the machine has
    shared_by_cpus: int | None  # logical CPUs that share one instance
    scope: str | None  # "core", "socket" or "cluster": what one instance belongs to

    @property
    def name(self) -> str:
        suffix = {"data": "d", "instruction": "i"}.get(self.type, "")
        return f"L{self.level}{suffix}"

    @property
    def total_bytes(self) -> int | None:
        """All instances together: lscpu's figure."""
        if self.size_bytes is None or self.instances is None:
            return None
        return self.size_bytes * self.instances


@dataclass
class NumaNode:
    id: int
    cpus: list[int]
    memory_total_bytes: int | None
    memory_free_bytes: int | None


@dataclass
class Cpu:
    vendor: str | None
    model_name: str | None
    # x86: CPUID family/model/stepping. ARM: no family; model is the MIDR part number and
    # stepping its revision, as lscpu shows them.
    family: int | None
    model: int | None
    stepping: int | None
    microcode: str | None
    architecture: str | None  # machine name as uname gives it: x86_64, aarch64
    sockets: int | None
    cores: int | None  # physical cores in all sockets
    logical_cpus: int | None  # online CPUs; None when neither procfs nor the OS tells
    threads_per_core: int | None
    frequency_base_hertz: float | None
    frequency_min_hertz: float | None
    frequency_max_hertz: float | None
    frequency_current_hertz: float | None  # mean over online CPUs
    caches: list[Cache] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    # The flags ML work cares about, in a fixed order, under the names users search for.
    ml_flags: list[str] = field(default_factory=list)
    numa_nodes: list[NumaNode] = field(default_factory=list)
    # Busy share of each logical CPU over the last sampling window, 0..1; empty before a window.
    utilization_ratio: list[float] = field(default_factory=list)
    load_average: list[float] | None = None  # 1, 5 and 15 minutes
