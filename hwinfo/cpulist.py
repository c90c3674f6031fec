"""Linux CPU list strings ("0-3,8-11"), as sysfs and NVML affinity use them."""

from __future__ import annotations


def parse_cpulist(text: str) -> list[int]:
    """CPU numbers in a list such as "0-3,8,10-11"; raises ValueError on malformed text."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        start = int(first)
        stop = int(last) if last else start
        if stop < start:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.extend(range(start, stop + 1))
    return cpus


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
