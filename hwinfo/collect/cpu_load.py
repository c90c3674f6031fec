"""CPU time from /proc/stat, turned into per-CPU busy ratios, and /proc/loadavg."""

from __future__ import annotations

from time import monotonic

from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal

# Jiffies (busy, total) per CPU number.
CpuTimes = dict[int, tuple[int, int]]

# When (monotonic seconds) and what note_start read.
_at_start: tuple[float, CpuTimes] | None = None


def note_start() -> None:
    """Read this machine's CPU times as the command starts (hwinfo/entry.py), before its
    modules are imported: a one-shot report's utilization window then opens here and spans
    its whole run, instead of adding to it."""
    global _at_start
    _at_start = (monotonic(), parse_cpu_times(Root("/").read_text("proc/stat")))


def at_start() -> tuple[float, CpuTimes] | None:
    """When and what note_start read; None where it was not called (not the command line)."""
    return _at_start


def parse_cpu_times(text: str | None) -> CpuTimes:
    """Per-CPU busy and total time from /proc/stat's "cpuN" lines; empty without the file."""
    times: CpuTimes = {}
    for line in (text or "").splitlines():
        name, _, rest = line.partition(" ")
        cpu = decimal(name[3:]) if name.startswith("cpu") else None
        # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
        # already counted in user and nice, so the total stops at steal, as psutil's does.
        values = [decimal(v) for v in rest.split()[:8]]
        if cpu is None or None in values:
            continue
        total = sum(values)  # type: ignore[arg-type]
        idle = sum(values[3:5])  # type: ignore[arg-type]  # idle + iowait: not running
        times[cpu] = (total - idle, total)
    return times


def busy_ratios(before: CpuTimes, after: CpuTimes) -> list[float]:
    """Each CPU's busy share between two readings, 0..1, for the CPUs present in both, in order."""
    ratios = []
    for cpu in sorted(after.keys() & before.keys()):
        busy = after[cpu][0] - before[cpu][0]
        total = after[cpu][1] - before[cpu][1]
        # No tick elapsed: nothing ran. Counters can step back (iowait is not monotonic), so clamp.
        ratios.append(min(max(busy / total, 0.0), 1.0) if total > 0 else 0.0)
    return ratios


def parse_load_average(text: str | None) -> list[float] | None:
    """The 1, 5 and 15 minute load averages from /proc/loadavg."""
    fields = (text or "").split()[:3]
    try:
        return [float(f) for f in fields] if len(fields) == 3 else None
    except ValueError:
        return None
