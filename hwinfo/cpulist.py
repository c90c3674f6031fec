"""Linux CPU list strings ("0-3,8-11"), as sysfs and NVML affinity use them."""

from __future__ import annotations

import re

# CPU numbers are below this. The kernel's NR_CPUS tops out at 8192 (x86-64 MAXSMP, powerpc;
# arm64 at 4096); 65536 leaves room for larger builds while a hostile "0-99999999" in a
# scenario, or a corrupt sysfs file, costs at most this many list entries instead of gigabytes.
MAX_CPUS = 65536
_PART = re.compile(r"([0-9]{1,9})(?:-([0-9]{1,9}))?")


def parse_cpulist(text: str) -> list[int]:
    """CPU numbers in a list such as "0-3,8,10-11"; ValueError (one line) on malformed text.

    Every number must be below MAX_CPUS, and the list may name at most MAX_CPUS CPUs in all.
    """
    cpus: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        match = _PART.fullmatch(part)
        if match is None:
            raise ValueError(f"bad CPU list entry {_cut(part)!r}")
        start = int(match.group(1))
        stop = int(match.group(2) or start)
        if stop < start:
            raise ValueError(f"bad CPU range {part!r}")
        if stop >= MAX_CPUS:
            raise ValueError(f"CPU {stop} is beyond the most this hwinfo accepts ({MAX_CPUS - 1})")
        if len(cpus) + stop - start + 1 > MAX_CPUS:
            raise ValueError(f"more than {MAX_CPUS} CPUs listed")
        cpus.extend(range(start, stop + 1))
    return cpus


def _cut(text: str) -> str:
    return text if len(text) <= 20 else text[:17] + "..."


def format_cpulist(cpus: list[int]) -> str:
    """The shortest list string for these CPUs: [0, 1, 2, 5] -> "0-2,5"."""
    ranges: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        ranges.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(ranges)
