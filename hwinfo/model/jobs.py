"""What the jobs, pods and containers that hold GPUs use of the rest of the machine: CPU time
against the CPUs they may use, host memory against their limit, block I/O, and (cgroup v2)
pressure, each from the job's own cgroup (docs/jobs.md).

A figure is None where it was not read; the reason is in `unavailable` (field -> why). A
limit that does not exist is None and not in `unavailable`: no memory limit, no CFS quota.
Counters (cpu_seconds, the I/O bytes, pressure) are the kernel's, since the cgroup was made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# JobResources.pressure's keys: the kernel's PSI files of a cgroup v2 cgroup, <resource>.pressure.
PRESSURE_RESOURCES = ("cpu", "memory", "io")
# Block devices kept of a job's I/O file, the lowest device numbers: a job reads from a
# handful of disks; a hostile file could list thousands.
MAX_DEVICES = 16


@dataclass
class JobDevice:
    """The job's block I/O on one device."""

    device: str  # the kernel's name (sda, nvme0n1, dm-0); MAJ:MIN where sysfs does not name it
    read_bytes: int | None
    written_bytes: int | None
    # The device's busy time (io_ticks of /proc/diskstats, iostat's %util) times the job's
    # share of the bytes the device moved, summed over this hwinfo's samples: how long the
    # device worked for the job. None until two samples have been read.
    busy_seconds: float | None = None


@dataclass
class Pressure:
    """PSI of one resource (cgroup v2, kernel's admin-guide/cgroup-v2.rst): how long some or
    all of the cgroup's runnable tasks were stalled waiting for it."""

    some_seconds: float | None  # at least one task stalled
    full_seconds: float | None  # all non-idle tasks stalled at once (cpu: kernels 5.13+)


@dataclass
class JobResources:
    """One job, pod (container of a pod) or container with a process on a GPU."""

    kind: str  # slurm, pod, container (Attribution.kind)
    # Whom its GPU time is charged to (GpuProcess.charged_user), and the attribution labels
    # its GPU series carry: the two join on them.
    user: str | None
    slurm_job: str | None
    pod_uid: str | None
    container_id: str | None
    label: str  # Attribution.label without a step: slurm:4242, docker:5dace3de0735, pod:…
    cgroup: str  # its cgroup, from the top of the hierarchy its CPU time is read in
    cgroup_version: int  # 1 or 2
    cpu_seconds: float | None  # CPU time of all its processes
    # CPUs its cpuset allows (its own, else the nearest ancestor's: what it may run on).
    cpuset_cpus: int | None
    cpu_quota_cpus: float | None  # CFS quota over period (cpu.max); None: no quota
    allotted_cpus: float | None  # the fewer of the two: what it may use at once
    # Mean CPUs busy between this hwinfo's last two readings; None after one reading.
    busy_cpus: float | None
    # How busy its cpuset's CPUs were (their mean, its work and others', /proc/stat), in
    # seconds counted by this hwinfo since it first read the job: where cgroup v1 keeps no
    # CPU pressure, saturated CPUs tell a job starved by others' work. None: not read.
    cpuset_busy_seconds: float | None
    memory_used_bytes: int | None
    memory_peak_bytes: int | None  # the kernel's high-water mark (v2: memory.peak, 5.19+)
    memory_limit_bytes: int | None  # None: no limit (or not read: see unavailable)
    devices: list[JobDevice] = field(default_factory=list)
    # PRESSURE_RESOURCES -> its PSI; cgroup v2 only (v1 keeps none per cgroup).
    pressure: dict[str, Pressure] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def read_bytes(self) -> int | None:
        """Bytes read from every device; None where its I/O was not read."""
        return self._io_total("read_bytes")

    @property
    def written_bytes(self) -> int | None:
        return self._io_total("written_bytes")

    def _io_total(self, name: str) -> int | None:
        if "devices" in self.unavailable:
            return None
        return sum(getattr(d, name) or 0 for d in self.devices)
