"""The kernel's cgroup interface files, and the two host files beside them, as numbers.

Each parser takes a file's text (read bounded, below a Root) and returns what it holds, or
None where the text is not what the kernel writes: a fixture tree, a file from another
kernel, binary. Formats: Documentation/admin-guide/cgroup-v2.rst (cpu.stat, cpu.max, io.stat,
memory.*, <resource>.pressure), cgroup-v1/ (cpuacct.rst, cpusets.rst, memory.rst,
blkio-controller.rst), sched-bwc.rst (cpu.cfs_quota_us, cpu.cfs_period_us),
accounting/psi.rst, iostats.rst (/proc/diskstats) and filesystems/proc.rst (mountinfo).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hwinfo.cpulist import parse_cpulist
from hwinfo.model.jobs import MAX_DEVICES, Pressure

# A counter or size the kernel writes as an unsigned 64-bit number.
_U64 = re.compile(r"[0-9]{1,20}", re.ASCII)
_U64_MAX = (1 << 64) - 1
# A memory limit at or above this is "no limit": v1 writes PAGE_COUNTER_MAX pages in bytes
# (9223372036854771712 with 4 KiB pages), which no machine's memory comes near.
_NO_LIMIT_BYTES = 1 << 60
_DEVICE = re.compile(r"([0-9]{1,10}):([0-9]{1,10})", re.ASCII)
# The lines a diskstats or mountinfo is read to: a host has a few hundred block devices and
# mounts; a Kubernetes node a few thousand mounts.
MAX_LINES = 20_000
_SECTOR_BYTES = 512  # diskstats counts 512-byte sectors whatever the disk's own size


def u64(text: str) -> int | None:
    """An unsigned 64-bit number as the kernel writes it; None for anything else."""
    value = int(text) if _U64.fullmatch(text) else None
    return value if value is not None and value <= _U64_MAX else None


def one_number(text: str | None) -> int | None:
    """The one number of a file such as cpuacct.usage or memory.current."""
    return None if text is None else u64(text.strip())


def memory_limit(text: str | None) -> tuple[bool, int | None]:
    """(read, limit) of memory.max (v2: "max" or bytes) or memory.limit_in_bytes (v1: bytes;
    unlimited is a number past any machine's memory); limit None: no limit."""
    value = (text or "").strip()
    if value == "max":
        return True, None
    number = u64(value)
    if number is None:
        return False, None
    return True, (None if number >= _NO_LIMIT_BYTES else number)


def keyed(text: str | None) -> dict[str, int]:
    """A flat keyed file ("usage_usec 123\\n..."): cpu.stat, memory.stat."""
    found: dict[str, int] = {}
    for line in (text or "").splitlines()[:64]:
        key, _, value = line.partition(" ")
        number = u64(value.strip())
        if key and number is not None:
            found[key] = number
    return found


def cpu_max(text: str | None) -> tuple[bool, float | None]:
    """(read, CPUs) of cpu.max, "$MAX $PERIOD" in µs; CPUs None: "max", no quota."""
    parts = (text or "").split()
    if len(parts) != 2:
        return False, None
    period = u64(parts[1])
    if not period:
        return False, None
    if parts[0] == "max":
        return True, None
    quota = u64(parts[0])
    return (False, None) if quota is None else (True, quota / period)


def cfs_quota(quota: str | None, period: str | None) -> tuple[bool, float | None]:
    """(read, CPUs) of v1's cpu.cfs_quota_us (-1: no quota) and cpu.cfs_period_us."""
    quota_text, period_value = (quota or "").strip(), one_number(period)
    if quota_text == "-1":
        return True, None
    quota_value = u64(quota_text)
    if quota_value is None or not period_value:
        return False, None
    return True, quota_value / period_value


def cpuset(text: str | None) -> list[int] | None:
    """The CPUs a cpuset list names ("0-3,8"); None when it is not a list or empty (an empty
    v2 cpuset.cpus.effective means the parent's)."""
    try:
        cpus = parse_cpulist((text or "").strip())
    except ValueError:
        return None
    return cpus or None


Devices = dict[str, tuple[int | None, int | None]]  # "MAJ:MIN" -> (read, written) bytes


def io_stat(text: str | None) -> Devices | None:
    """v2 io.stat: "MAJ:MIN rbytes=… wbytes=… rios=…" a line per device."""
    if text is None:
        return None
    devices: Devices = {}
    for line in text.splitlines()[:MAX_LINES]:
        device, *pairs = line.split() or [""]  # a blank line: no kernel's, skipped
        if not _DEVICE.fullmatch(device) or device in devices:
            continue
        values = dict(pair.partition("=")[::2] for pair in pairs[:16])
        devices[device] = (u64(values.get("rbytes", "")), u64(values.get("wbytes", "")))
    return _first(devices)


def blkio(text: str | None) -> Devices | None:
    """v1 blkio.throttle.io_service_bytes(_recursive): "MAJ:MIN Read N", "… Write N", …"""
    if text is None:
        return None
    read: dict[str, int] = {}
    written: dict[str, int] = {}
    for line in text.splitlines()[:MAX_LINES]:
        parts = line.split()
        if len(parts) != 3 or not _DEVICE.fullmatch(parts[0]) or (number := u64(parts[2])) is None:
            continue
        if parts[1] == "Read":
            read[parts[0]] = number
        elif parts[1] == "Write":
            written[parts[0]] = number
    return _first({d: (read.get(d), written.get(d)) for d in read.keys() | written.keys()})


def _first(devices: Devices) -> Devices:
    """At most MAX_DEVICES, the lowest device numbers: the same ones at every sample."""
    return dict(sorted(devices.items(), key=lambda kv: _number(kv[0]))[:MAX_DEVICES])


def _number(device: str) -> tuple[int, int]:
    major, _, minor = device.partition(":")
    return int(major), int(minor)


def pressure(text: str | None) -> Pressure | None:
    """A <resource>.pressure file: "some avg10=… total=<µs>" and "full …"."""
    totals: dict[str, float] = {}
    for line in (text or "").splitlines()[:4]:
        kind, *pairs = line.split() or [""]  # a blank line: no kernel's, skipped
        values = dict(pair.partition("=")[::2] for pair in pairs[:8])
        total = u64(values.get("total", ""))
        if kind in ("some", "full") and total is not None:
            totals[kind] = total / 1e6
    if "some" not in totals:
        return None
    return Pressure(totals["some"], totals.get("full"))


class DiskStat(NamedTuple):
    """A block device since boot."""

    name: str
    moved_bytes: int  # read and written
    busy_seconds: float  # io_ticks: time with I/O in flight


def diskstats(text: str | None) -> dict[str, DiskStat]:
    """/proc/diskstats: "MAJ MIN name reads merged sectors ms writes merged sectors ms
    in-flight io_ticks …" -> "MAJ:MIN" -> its name, bytes read and written, and io_ticks."""
    found: dict[str, DiskStat] = {}
    for line in (text or "").splitlines()[:MAX_LINES]:
        fields = line.split()
        if len(fields) < 13:
            continue
        numbers = [u64(fields[i]) for i in (0, 1, 5, 9, 12)]
        if None in numbers:
            continue
        major, minor, read, written, ticks = numbers  # type: ignore[misc]
        found[f"{major}:{minor}"] = DiskStat(
            fields[2], (read + written) * _SECTOR_BYTES, ticks / 1000)  # type: ignore[operator]
    return found


# The v1 controllers whose files the jobs' figures come from.
V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "blkio")


def cgroup_mounts(text: str | None) -> dict[str, str]:
    """Where each cgroup hierarchy is mounted, from a mountinfo: a v1 controller's name, or
    "unified" for cgroup2, -> the mount point. Only mounts of a hierarchy's top ("/" as their
    root) count: below another, the paths /proc/PID/cgroup names are not under them. The
    first mount of each wins."""
    mounts: dict[str, str] = {}
    for line in (text or "").splitlines()[:MAX_LINES]:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3 or fields[3] != "/":
            continue
        point = _unescape(fields[4])
        if tail[0] == "cgroup2":
            mounts.setdefault("unified", point)
        elif tail[0] == "cgroup":
            for option in tail[2].split(",")[:64]:
                if option in V1_CONTROLLERS:
                    mounts.setdefault(option, point)
    return mounts


def _unescape(path: str) -> str:
    """mountinfo writes space, tab, newline and backslash in a path as octal (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)
