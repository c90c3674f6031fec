"""System memory, swap and huge pages from /proc/meminfo and sysfs."""

from __future__ import annotations

import re

from hwinfo.collect.sysfs import Root
from hwinfo.model.memory import HugePagePool, Memory

_HUGEPAGES_DIR = "sys/kernel/mm/hugepages"
_POOL_NAME = re.compile(r"hugepages-(\d+)kB$")


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo (and node meminfo) fields in bytes; counts such as HugePages_Total as is."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if key.startswith("Node "):  # node meminfo: "Node 0 MemTotal:  123 kB"
            key = key.split()[-1]
        if not parts:
            continue
        try:
            number = int(parts[0])
        except ValueError:
            continue
        values[key] = number * 1024 if parts[1:] == ["kB"] else number
    return values


def huge_page_pools(root: Root, meminfo: dict[str, int]) -> list[HugePagePool]:
    """One pool per page size from sysfs; the default pool from meminfo where sysfs is absent."""
    pools = []
    for name in root.listdir(_HUGEPAGES_DIR):
        match = _POOL_NAME.match(name)
        if not match:
            continue
        base = f"{_HUGEPAGES_DIR}/{name}"
        total = root.read_int(f"{base}/nr_hugepages")
        free = root.read_int(f"{base}/free_hugepages")
        if total is None or free is None:
            continue
        pools.append(
            HugePagePool(
                page_size_bytes=int(match.group(1)) * 1024,
                total=total,
                free=free,
                reserved=root.read_int(f"{base}/resv_hugepages"),
                surplus=root.read_int(f"{base}/surplus_hugepages"),
            )
        )
    if not pools and "Hugepagesize" in meminfo and "HugePages_Total" in meminfo:
        pools.append(
            HugePagePool(
                page_size_bytes=meminfo["Hugepagesize"],
                total=meminfo["HugePages_Total"],
                free=meminfo.get("HugePages_Free", 0),
                reserved=meminfo.get("HugePages_Rsvd"),
                surplus=meminfo.get("HugePages_Surp"),
            )
        )
    return sorted(pools, key=lambda p: p.page_size_bytes)


def _difference(a: int | None, b: int | None) -> int | None:
    """a - b; not available where either is, or where b exceeds a (a file no kernel wrote)."""
    return None if a is None or b is None or b > a else a - b


class MemoryCollector:
    def __init__(self, root: Root) -> None:
        self.root = root

    def collect(self) -> Memory:
        info = parse_meminfo(self.root.read_text("proc/meminfo") or "")
        # A running machine has memory: 0 kB is a file no kernel wrote, not a figure.
        total = info.get("MemTotal") or None
        available = info.get("MemAvailable")
        cached = info.get("Cached")
        if cached is not None:
            # free(1) counts reclaimable slab as cache, so do we.
            cached += info.get("SReclaimable", 0)
        return Memory(
            total_bytes=total,
            available_bytes=available,
            used_bytes=_difference(total, available),
            free_bytes=info.get("MemFree"),
            buffers_bytes=info.get("Buffers"),
            cached_bytes=cached,
            swap_total_bytes=info.get("SwapTotal"),
            swap_used_bytes=_difference(info.get("SwapTotal"), info.get("SwapFree")),
            swap_free_bytes=info.get("SwapFree"),
            huge_pages=huge_page_pools(self.root, info),
        )
