"""What the jobs, pods and containers on the GPUs use of the rest of the machine, from their
own cgroups (model/jobs.py), labelled as their GPU series are (metrics_users.py's
hwinfo_gpu_attributed_memory_used_bytes), so that the ledger joins the two."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hwinfo.exporter.metric import Metric, Sample
from hwinfo.exporter.metrics_users import ATTRIBUTED_SERIES_LIMIT, UNKNOWN_USER
from hwinfo.model.jobs import MAX_DEVICES, PRESSURE_RESOURCES, JobResources
from hwinfo.model.snapshot import Snapshot

JOB_LABELS = ("user", "slurm_job", "pod_uid", "container_id")


def _labels(job: JobResources) -> tuple[str, ...]:
    return (job.user or UNKNOWN_USER, job.slurm_job or "", job.pod_uid or "",
            job.container_id or "")


def _jobs(value: Callable[[JobResources], Any]) -> Callable[[Snapshot], Iterator[Sample]]:
    def read(s: Snapshot) -> Iterator[Sample]:
        for job in s.jobs or ():
            v = value(job)
            if v is not None:
                yield _labels(job), float(v)
    return read


def _devices(field: str) -> Callable[[Snapshot], Iterator[Sample]]:
    def read(s: Snapshot) -> Iterator[Sample]:
        for job in s.jobs or ():
            for device in job.devices:
                v = getattr(device, field)
                if v is not None:
                    yield (*_labels(job), device.device), float(v)
    return read


def _pressure(field: str) -> Callable[[Snapshot], Iterator[Sample]]:
    def read(s: Snapshot) -> Iterator[Sample]:
        for job in s.jobs or ():
            for resource in PRESSURE_RESOURCES:
                v = getattr(job.pressure[resource], field) if resource in job.pressure else None
                if v is not None:
                    yield (*_labels(job), resource), float(v)
    return read


def _job_metric(name: str, type_: str, help_: str, json: str,
                read: Callable[[Snapshot], Iterator[Sample]], extra: tuple[str, ...] = (),
                per_job: int = 1) -> Metric:
    """A series per job (and per `extra` label value, at most `per_job` of them): the
    collector reads at most ATTRIBUTED_SERIES_LIMIT jobs, those holding the most GPU memory,
    so the exporter's fold past the bound never meets these counters."""
    return Metric(name, type_, help_, (*JOB_LABELS, *extra), json, read,
                  limit=ATTRIBUTED_SERIES_LIMIT * per_job, folded=JOB_LABELS)


METRICS: tuple[Metric, ...] = (
    _job_metric(
        "job_cpu_seconds_total", "counter",
        "CPU time of a Slurm job, pod or container with a process on a GPU, from its own "
        "cgroup (cpuacct.usage, v2 cpu.stat usage_usec); its series ends with the job.",
        "jobs[].cpu_seconds", _jobs(lambda j: j.cpu_seconds)),
    _job_metric(
        "job_allotted_cpus", "gauge",
        "CPUs the job may use at once: its cpuset's CPUs, or its CFS quota over its period "
        "(cpu.max, cpu.cfs_quota_us) where that is fewer.",
        "jobs[].allotted_cpus", _jobs(lambda j: j.allotted_cpus)),
    _job_metric(
        "job_cpuset_busy_seconds_total", "counter",
        "How busy the CPUs of the job's cpuset were, with its work and anyone else's (their "
        "mean, from /proc/stat), counted by this daemon: saturated CPUs it used less than its "
        "allotment of tell a job starved by others' work where cgroup v1 keeps no pressure.",
        "jobs[].cpuset_busy_seconds", _jobs(lambda j: j.cpuset_busy_seconds)),
    _job_metric(
        "job_memory_used_bytes", "gauge",
        "Host memory the job's cgroup holds, page cache included (memory.current, v1 "
        "memory.usage_in_bytes).",
        "jobs[].memory_used_bytes", _jobs(lambda j: j.memory_used_bytes)),
    _job_metric(
        "job_memory_peak_bytes", "gauge",
        "The kernel's high-water mark of that memory (memory.peak, Linux 5.19+; v1 "
        "memory.max_usage_in_bytes).",
        "jobs[].memory_peak_bytes", _jobs(lambda j: j.memory_peak_bytes)),
    _job_metric(
        "job_memory_limit_bytes", "gauge",
        "The job's memory limit (memory.max, v1 memory.limit_in_bytes); absent where it has none.",
        "jobs[].memory_limit_bytes", _jobs(lambda j: j.memory_limit_bytes)),
    _job_metric(
        "job_io_read_bytes_total", "counter",
        "Bytes the job read from a block device (io.stat rbytes, v1 "
        "blkio.throttle.io_service_bytes_recursive Read).",
        "jobs[].devices[].read_bytes", _devices("read_bytes"), ("device",), MAX_DEVICES),
    _job_metric(
        "job_io_written_bytes_total", "counter",
        "Bytes the job wrote to a block device (cgroup v1 counts only writes it issued "
        "itself, not the page cache's write-back).",
        "jobs[].devices[].written_bytes", _devices("written_bytes"), ("device",), MAX_DEVICES),
    _job_metric(
        "job_io_busy_seconds_total", "counter",
        "How long the device worked for the job: its busy time (/proc/diskstats io_ticks, "
        "iostat's %util) times the job's share of the bytes it moved, counted by this daemon.",
        "jobs[].devices[].busy_seconds", _devices("busy_seconds"), ("device",), MAX_DEVICES),
    _job_metric(
        "job_pressure_waiting_seconds_total", "counter",
        "Time some of the job's tasks were stalled waiting for the resource (cgroup v2 PSI "
        "`some` of cpu.pressure, memory.pressure, io.pressure).",
        "jobs[].pressure.*.some_seconds", _pressure("some_seconds"), ("resource",),
        len(PRESSURE_RESOURCES)),
    _job_metric(
        "job_pressure_stalled_seconds_total", "counter",
        "Time all of the job's non-idle tasks were stalled on the resource at once (PSI `full`).",
        "jobs[].pressure.*.full_seconds", _pressure("full_seconds"), ("resource",),
        len(PRESSURE_RESOURCES)),
)
