"""CPU caches from sys/devices/system/cpu/cpuN/cache/indexM, summarised per level as lscpu does."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from hwinfo.collect.cpu_topology import CPU_DIR, Topology, read_cpulist
from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal
from hwinfo.model.cpu import Cache

T = TypeVar("T")

_TYPE_ORDER = {"data": 0, "instruction": 1, "unified": 2}
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@dataclass(frozen=True)
class CacheInstance:
    """One physical cache: the CPUs that share it and its size."""

    level: int
    type: str
    size_bytes: int | None
    cpus: frozenset[int]


def parse_cache_size(text: str | None) -> int | None:
    """sysfs cache size ("48K", "2048K", "36M") in bytes."""
    if not text:
        return None
    number, unit = (text[:-1], text[-1]) if text[-1] in _UNITS else (text, "")
    value = decimal(number)
    return None if value is None else value * _UNITS.get(unit, 1)


def cache_instances(root: Root, cpus: list[int]) -> list[CacheInstance]:
    """Every distinct cache of the online CPUs, each read once (not once per CPU sharing it)."""
    instances: list[CacheInstance] = []
    covered: dict[str, set[int]] = {}  # index directory name -> CPUs whose cache there is known
    for cpu in cpus:
        base = f"{CPU_DIR}/cpu{cpu}/cache"
        for index in root.listdir(base):
            if not index.startswith("index") or cpu in covered.get(index, ()):
                continue
            path = f"{base}/{index}"
            level = root.read_int(f"{path}/level")
            kind = root.read_value(f"{path}/type")
            shared = read_cpulist(root, f"{path}/shared_cpu_list")
            if level is None or kind is None or not shared:
                continue
            instance = CacheInstance(
                level=level,
                type=kind.lower(),
                size_bytes=parse_cache_size(root.read_value(f"{path}/size")),
                cpus=frozenset(shared),
            )
            instances.append(instance)
            # CPUs sharing a cache list it under the same index, so theirs need not be read.
            covered.setdefault(index, set()).update(instance.cpus)
    return instances


def cache_scope(cpus: frozenset[int], topology: Topology) -> str | None:
    """What one cache instance belongs to: "core", "socket" or "cluster" (anything between)."""
    if not topology.cores:
        return None
    if any(cpus <= core for core in topology.cores):
        return "core"
    if any(cpus == package for package in topology.packages):
        return "socket"
    return "cluster"


def _uniform(values: Iterable[T]) -> T | None:
    """The value all items share, or None when they differ (hybrid parts)."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _lscpu_order(level: int, kind: str) -> tuple[int, int]:
    return level, _TYPE_ORDER.get(kind, len(_TYPE_ORDER))


def summarize_caches(
    instances: list[CacheInstance], topology: Topology, cpus: list[int]
) -> list[Cache]:
    """One Cache per level and type, in lscpu's order: L1d, L1i, L2, L3."""
    online = frozenset(cpus)
    groups: dict[tuple[int, str], list[CacheInstance]] = {}
    for instance in instances:
        groups.setdefault((instance.level, instance.type), []).append(instance)
    caches = []
    for (level, kind), group in sorted(groups.items(), key=lambda g: _lscpu_order(*g[0])):
        caches.append(
            Cache(
                level=level,
                type=kind,
                size_bytes=_uniform(i.size_bytes for i in group),
                instances=len(group),
                shared_by_cpus=_uniform(len(i.cpus) for i in group),
                # Scope from the online sharers: topology knows nothing of offline CPUs.
                scope=_uniform(cache_scope(i.cpus & online, topology) for i in group),
            )
        )
    return caches


def read_caches(root: Root, cpus: list[int], topology: Topology) -> list[Cache]:
    return summarize_caches(cache_instances(root, cpus), topology, cpus)
