"""What each job, pod and container holding a GPU uses of the rest of the machine, from its own
cgroup: CPU time against the CPUs it may use, host memory against its limit, block I/O, and
on cgroup v2 its pressure (docs/jobs.md).

The cgroup is the one its processes' /proc/PID/cgroup named when they were attributed
(Attribution.cgroups, collect/cgroup.py): a Slurm job's own (job_N, which holds every step and
the job's limits, as Slurm's task/cgroup sets them on it), a container's scope, a pod's
container. So it is read once per job and sample, whatever its process count, after the GPU
sample and outside NVML's deadline; at most ATTRIBUTED_LIMIT of them, those holding the most
GPU memory, as the attributed series are bounded. Every file is read bounded, below the Root,
as hostile input: a fixture tree or a kernel that writes something else costs that figure.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from hwinfo.collect import cgroup_files as files
from hwinfo.collect.cpu_load import CpuTimes, parse_cpu_times
from hwinfo.collect.sysfs import Root, RootError
from hwinfo.model.attribution import ATTRIBUTED_LIMIT, UNIFIED, Attribution
from hwinfo.model.gpu import GpuSystem
from hwinfo.model.jobs import PRESSURE_RESOURCES, JobDevice, JobResources

# A one-number or one-line interface file is a few dozen bytes; io.stat and blkio a few lines
# a device. Past these, the file is no kernel's and its figure is not available.
_SMALL = 4096
_LINES = 64 * 1024
_TABLE = 2 * 1024 * 1024  # /proc/diskstats, /proc/self/mountinfo
_V1_BLKIO = "blkio.throttle.io_service_bytes"
# /proc/stat counts in USER_HZ ticks (filesystems/proc.rst), what sysconf calls CLK_TCK.
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_V1_UNCOUNTED = ("this kernel keeps cgroup v1 block I/O only on disks with a blkio throttle limit "
                 "(Linux 6.10+), and no disk has one")


@dataclass
class _Unit:
    """One job, pod or container as its GPU processes name it."""

    who: Attribution
    user: str | None
    gpu_memory: int = 0
    cgroups: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str | None, ...]:
        return (self.who.kind, self.who.slurm_job, self.who.pod_uid, self.who.container_id)


class JobResourcesCollector:
    """Reads the cgroups of the jobs on the GPUs, and keeps what rates need between samples.

    `min_window_seconds`: a one-shot report reads a job it has not seen before twice, this
    far apart, so that its CPU use now can be told; a daemon (0) tells it from one sample to
    the next.
    """

    def __init__(self, root: Root, min_window_seconds: float = 0.0) -> None:
        self.root = root
        self.min_window_seconds = min_window_seconds
        self._mounts: dict[str, str] = {}
        # What the last reading saw: per job, (when, CPU seconds); per device the disk's
        # counters; per job and device, its bytes and the busy time apportioned to it so far.
        self._cpu: dict[tuple[str | None, ...], tuple[float, float]] = {}
        self._disks: dict[str, files.DiskStat] = {}
        self._moved: dict[tuple[tuple[str | None, ...], str], int] = {}
        self._busy: dict[tuple[tuple[str | None, ...], str], float] = {}
        self._v1_counted: bool | None = None  # v1 keeps block I/O per cgroup on some disk
        # The host's CPU times (/proc/stat) now and at the last reading, and per job the busy
        # time of its cpuset's CPUs counted so far.
        self._cpu_times: CpuTimes = {}
        self._last_cpu_times: CpuTimes = {}
        self._cpuset_busy_total: dict[tuple[str | None, ...], float] = {}

    def collect(self, gpu: GpuSystem | None) -> list[JobResources]:
        units = jobs_on(gpu)
        if not self._mounts:
            self._mounts = files.cgroup_mounts(self._text("proc/self/mountinfo", _TABLE)[0])
        if self.min_window_seconds > 0 and any(u.key not in self._cpu for u in units):
            self._read_all(units)
            time.sleep(self.min_window_seconds)
        return self._read_all(units)

    def _read_all(self, units: list[_Unit]) -> list[JobResources]:
        now = time.monotonic()
        disks = files.diskstats(self._text("proc/diskstats", _TABLE)[0])
        self._v1_counted = self._v1_blkio_counted() if units else None
        self._last_cpu_times = self._cpu_times
        self._cpu_times = parse_cpu_times(self._text("proc/stat", _TABLE)[0]) if units else {}
        found = [self._read(unit, now, disks) for unit in units]
        keys = {u.key for u in units}
        # Only the jobs on the GPUs now are kept: a job that ends leaves nothing behind.
        self._cpu = {k: v for k, v in self._cpu.items() if k in keys}
        self._moved = {k: v for k, v in self._moved.items() if k[0] in keys}
        self._busy = {k: v for k, v in self._busy.items() if k[0] in keys}
        self._cpuset_busy_total = {k: v for k, v in self._cpuset_busy_total.items() if k in keys}
        self._disks = disks
        return found

    def _read(self, unit: _Unit, now: float, disks: dict[str, files.DiskStat]) -> JobResources:
        v2 = set(unit.cgroups) <= {UNIFIED}
        where = UNIFIED if v2 else "cpuacct"
        job = JobResources(
            kind=unit.who.kind, user=unit.user, slurm_job=unit.who.slurm_job,
            pod_uid=unit.who.pod_uid, container_id=unit.who.container_id,
            label=unit.who.label.rsplit(".", 1)[0] if unit.who.kind == "slurm" else unit.who.label,
            cgroup=unit.cgroups.get(where) or next(iter(unit.cgroups.values())),
            cgroup_version=2 if v2 else 1, cpu_seconds=None, cpuset_cpus=None,
            cpu_quota_cpus=None, allotted_cpus=None, busy_cpus=None, cpuset_busy_seconds=None,
            memory_used_bytes=None,
            memory_peak_bytes=None, memory_limit_bytes=None)
        reader = _Reader(self, unit.cgroups, job.unavailable)
        self._cpu_figures(job, reader, v2, unit.key, now)
        self._memory(job, reader, v2)
        self._io(job, reader, v2, unit.key, disks)
        if UNIFIED in unit.cgroups:
            for resource in PRESSURE_RESOURCES:
                read = files.pressure(reader.text(UNIFIED, f"{resource}.pressure", "pressure"))
                if read is not None:
                    job.pressure[resource] = read
            if job.pressure:
                job.unavailable.pop("pressure", None)
        else:
            job.unavailable["pressure"] = "cgroup v1 keeps no pressure (PSI) per cgroup"
        return job

    def _cpu_figures(self, job: JobResources, reader: _Reader, v2: bool,
                     key: tuple[str | None, ...], now: float) -> None:
        # No cpu.max (the cpu controller off for it), or no cgroup of its own in v1's cpu
        # hierarchy: no quota of its own.
        if v2:
            usage = files.keyed(reader.text(UNIFIED, "cpu.stat", "cpu_seconds")).get("usage_usec")
            job.cpu_seconds = None if usage is None else usage / 1e6
            quota = reader.text(UNIFIED, "cpu.max")
            read, job.cpu_quota_cpus = files.cpu_max(quota)
        else:
            usage = files.one_number(reader.text("cpuacct", "cpuacct.usage", "cpu_seconds"))
            job.cpu_seconds = None if usage is None else usage / 1e9
            quota = reader.text("cpu", "cpu.cfs_quota_us")
            read, job.cpu_quota_cpus = files.cfs_quota(quota, reader.text("cpu", "cpu.cfs_period_us"))
        if quota is not None and not read:
            job.unavailable["cpu_quota_cpus"] = "its CFS quota is not one the kernel writes"
        if job.cpu_seconds is None:
            job.unavailable.setdefault("cpu_seconds", "its CPU time could not be read")
        cpus = self._cpuset(reader, v2)
        job.cpuset_cpus = None if cpus is None else len(cpus)
        job.cpuset_busy_seconds = self._cpuset_busy(key, cpus)
        allotted = [n for n in (job.cpuset_cpus, job.cpu_quota_cpus) if n is not None]
        job.allotted_cpus = min(allotted) if allotted else None
        before = self._cpu.get(key)
        if job.cpu_seconds is not None:
            if before is not None and now > before[0] and job.cpu_seconds >= before[1]:
                job.busy_cpus = (job.cpu_seconds - before[1]) / (now - before[0])
            self._cpu[key] = (now, job.cpu_seconds)

    def _cpuset(self, reader: _Reader, v2: bool) -> list[int] | None:
        """The CPUs of its cpuset: its own, else the nearest ancestor's (an empty v2 list,
        or a level without the controller, is its parent's); the machine's online CPUs where
        no cpuset hierarchy is mounted."""
        hierarchy, name = (UNIFIED, "cpuset.cpus.effective") if v2 else ("cpuset", "cpuset.effective_cpus")
        mount = self._mounts.get(hierarchy)
        if mount is None:
            return files.cpuset(self._text("sys/devices/system/cpu/online", _SMALL)[0])
        path = reader.cgroups.get(hierarchy, "/")
        segments = [s for s in path.split("/") if s]
        for depth in range(len(segments), -1, -1):
            here = f"{mount}/{'/'.join(segments[:depth])}"
            for candidate in (name, "cpuset.cpus") if not v2 else (name,):
                cpus = files.cpuset(self._text(f"{here}/{candidate}", _SMALL)[0])
                if cpus is not None:
                    return cpus
        return None

    def _cpuset_busy(self, key: tuple[str | None, ...], cpus: list[int] | None) -> float | None:
        """How busy its cpuset's CPUs were, with its work and anyone else's, since the last
        reading (/proc/stat, their mean), added to what was counted before: where cgroup v1
        keeps no CPU pressure, CPUs saturated while it used less than its allotment tell a
        job starved by others' work. None until the host's CPU times are read."""
        if cpus is None or not self._cpu_times or not self._last_cpu_times:
            return None
        total = self._cpuset_busy_total.get(key)
        present = [c for c in cpus if c in self._cpu_times and c in self._last_cpu_times]
        if total is None:  # first seen now: counted from this reading on
            total = 0.0
        elif present:
            busy = sum(self._cpu_times[c][0] - self._last_cpu_times[c][0] for c in present)
            total += max(0.0, busy / _CLOCK_TICKS / len(present))
        self._cpuset_busy_total[key] = total
        return total

    def _memory(self, job: JobResources, reader: _Reader, v2: bool) -> None:
        hierarchy = UNIFIED if v2 else "memory"
        names = (("memory.current", "memory.peak", "memory.max") if v2 else
                 ("memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.limit_in_bytes"))
        used, peak, limit = (reader.text(hierarchy, name, field) for name, field in zip(
            names, ("memory_used_bytes", "memory_peak_bytes", "memory_limit_bytes")))
        job.memory_used_bytes = files.one_number(used)
        job.memory_peak_bytes = files.one_number(peak)
        read, job.memory_limit_bytes = files.memory_limit(limit)
        if limit is not None and not read:
            job.unavailable["memory_limit_bytes"] = f"{names[2]} is not a limit the kernel writes"

    def _io(self, job: JobResources, reader: _Reader, v2: bool, key: tuple[str | None, ...],
            disks: dict[str, files.DiskStat]) -> None:
        if v2:
            devices = files.io_stat(reader.text(UNIFIED, "io.stat", "devices"))
        elif self._v1_counted is False:
            job.unavailable["devices"] = _V1_UNCOUNTED
            return
        else:
            devices = files.blkio(reader.text("blkio", f"{_V1_BLKIO}_recursive", "devices"))
            if devices is None and not reader.has_children("blkio"):
                # A kernel before 4.11 has no _recursive file: the plain one is the same
                # where the cgroup has no child (a container), and undercounts where it has.
                job.unavailable.pop("devices", None)
                devices = files.blkio(reader.text("blkio", _V1_BLKIO, "devices"))
        if devices is None:
            return
        for number, (read, written) in devices.items():
            disk = disks.get(number)
            job.devices.append(JobDevice(disk.name if disk else number, read, written,
                                         self._busy_time(key, number, read, written, disk)))

    def _v1_blkio_counted(self) -> bool | None:
        """Whether cgroup v1 keeps block I/O per cgroup on this host: since Linux 6.10 its
        throttle statistics (the only v1 I/O bytes without BFQ) are kept only on a disk some
        cgroup has a blkio throttle limit on (block/blk-throttle.h, blk_should_throtl), so
        where the top cgroup's counters name no disk at all, none is counted; None: no v1
        blkio hierarchy, or its file not read."""
        mount = self._mounts.get("blkio")
        if mount is None:
            return None
        text = self._text(f"{mount}/{_V1_BLKIO}_recursive", _LINES)[0]
        return None if text is None else bool(files.blkio(text))

    def _busy_time(self, key: tuple[str | None, ...], number: str, read: int | None,
                   written: int | None, disk: files.DiskStat | None) -> float | None:
        """The device's busy time since the last reading times the job's share of the bytes
        it moved, added to what was counted before; None where either is not known."""
        if disk is None or read is None or written is None:
            return None
        moved = read + written
        before, last = self._moved.get((key, number)), self._disks.get(number)
        self._moved[(key, number)] = moved
        busy = self._busy.get((key, number), 0.0)
        if before is not None and last is not None:
            device_moved = disk.moved_bytes - last.moved_bytes
            if device_moved > 0 and moved >= before:
                share = min(1.0, (moved - before) / device_moved)
                busy += max(0.0, disk.busy_seconds - last.busy_seconds) * share
        self._busy[(key, number)] = busy
        return busy

    def _text(self, rel: str, limit: int) -> tuple[str | None, str | None]:
        """A file's text, or None and why: missing, or refused as no kernel's file."""
        try:
            text = self.root.read_text(rel, limit)
        except RootError as exc:
            return None, str(exc)
        return text, None if text is not None else "not there"


class _Reader:
    """Reads one job's interface files, noting in `unavailable` what could not be read."""

    def __init__(self, collector: JobResourcesCollector, cgroups: dict[str, str],
                 unavailable: dict[str, str]) -> None:
        self.collector = collector
        self.cgroups = cgroups
        self.unavailable = unavailable

    def path(self, hierarchy: str) -> str | None:
        mount = self.collector._mounts.get(hierarchy)
        cgroup = self.cgroups.get(hierarchy)
        return None if mount is None or cgroup is None else f"{mount}{cgroup}"

    def text(self, hierarchy: str, name: str, figure: str | None = None) -> str | None:
        """The file's text; None (and `figure` noted as not available) where it is not."""
        directory = self.path(hierarchy)
        if directory is None:
            why = (f"the {hierarchy} hierarchy is not mounted"
                   if hierarchy not in self.collector._mounts
                   else f"it has no cgroup of its own in the {hierarchy} hierarchy")
            text = None
        else:
            text, why = self.collector._text(f"{directory}/{name}",
                                             _LINES if name.startswith(("io.", "blkio.")) else _SMALL)
            why = why and f"{name}: {why}"
        if text is None and figure is not None:
            self.unavailable.setdefault(figure, why or "not read")
        return text

    def has_children(self, hierarchy: str) -> bool:
        directory = self.path(hierarchy)
        if directory is None:
            return True
        return any(self.collector.root.listdir(f"{directory}/{entry}")
                   for entry in self.collector.root.listdir(directory))


def jobs_on(gpu: GpuSystem | None) -> list[_Unit]:
    """The jobs, pods and containers whose processes are on the GPUs and whose cgroups were
    read: at most ATTRIBUTED_LIMIT, those holding the most GPU memory (then by name)."""
    units: dict[tuple[str | None, ...], _Unit] = {}
    biggest: dict[tuple[str | None, ...], int] = {}
    for proc in _processes(gpu):
        who = proc.attribution
        if who is None or not who.known or not who.cgroups:
            continue
        unit = _Unit(who, proc.charged_user)
        unit = units.setdefault(unit.key, unit)
        memory = proc.used_memory_bytes or 0
        unit.gpu_memory += memory
        for hierarchy, path in who.cgroups.items():
            unit.cgroups.setdefault(hierarchy, path)
        if memory > biggest.get(unit.key, -1):  # its user: that of its largest process
            biggest[unit.key] = memory
            unit.user = proc.charged_user
    ranked = sorted(units.values(), key=lambda u: (-u.gpu_memory, [k or "" for k in u.key]))
    return ranked[:ATTRIBUTED_LIMIT]


def _processes(gpu: GpuSystem | None) -> Iterable:  # type: ignore[type-arg]
    for device in (gpu.gpus if gpu is not None and gpu.gpus else ()):
        yield from device.all_processes()
