"""Who uses the GPUs: per-user rollups always, per-process series only when asked for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hwinfo.exporter.metric import Metric, Sample
from hwinfo.exporter.metrics_gpu import GPU_LABELS, gpus
from hwinfo.model.attribution import ATTRIBUTED_LIMIT
from hwinfo.model.snapshot import Snapshot

# The user of processes whose owner hwinfo cannot name (another PID namespace, exited).
UNKNOWN_USER = "(unknown)"
# Jobs, pods and containers on a host's devices at once (model/attribution.py); past that
# (containers churned by the hundred) the rest is summed per device, so a host adds at most
# this and one per device.
ATTRIBUTED_SERIES_LIMIT = ATTRIBUTED_LIMIT


def _users(s: Snapshot, field: str, rows: str = "users") -> Iterator[Sample]:
    """One sample per (GPU, user) row of `s.gpu.<rows>`: `users` now, or `accounted`."""
    if s.gpu is None:
        return
    uuids = {g.index: g.uuid or "" for g in s.gpu.gpus}
    for usage in getattr(s.gpu, rows) or ():
        value = getattr(usage, field)
        if value is not None:
            yield (
                (str(usage.gpu_index), uuids.get(usage.gpu_index, ""), usage.user or UNKNOWN_USER),
                float(value),
            )


def _user_sm_utilization(s: Snapshot) -> Iterator[Sample]:
    """Per user and whole GPU, the sum of NVML's latest per-process SM samples: each user's own
    activity on a shared GPU. Absent for a user none of whose processes has a sample (MIG,
    vGPU, old boards, an empty sample buffer): the ledger then falls back to the device's."""
    for gpu in gpus(s):
        if gpu.lost or (gpu.mig is not None and gpu.mig.enabled):
            continue
        busy: dict[str, float] = {}
        for proc in gpu.processes or ():
            if proc.sm_utilization_ratio is not None:
                user = proc.charged_user or UNKNOWN_USER
                busy[user] = busy.get(user, 0.0) + proc.sm_utilization_ratio
        for user, ratio in sorted(busy.items()):
            yield (str(gpu.index), gpu.uuid or "", user), ratio


def _mig_device_users(s: Snapshot, count: bool = False) -> Iterator[Sample]:
    """Per user on each MIG device: GPU memory (of processes that report it), or with `count`
    the number of processes, memory reported or not: who holds which slice of a GPU."""
    for gpu in gpus(s):
        if gpu.lost or gpu.mig is None:
            continue
        for device in gpu.mig.devices:
            held: dict[str, float] = {}
            for proc in device.processes or ():
                if count or proc.used_memory_bytes is not None:
                    user = proc.charged_user or UNKNOWN_USER
                    held[user] = held.get(user, 0.0) + (1 if count else proc.used_memory_bytes or 0)
            ids = tuple("" if v is None else str(v)
                        for v in (device.gpu_instance_id, device.compute_instance_id))
            for user, value in sorted(held.items()):
                yield (str(gpu.index), gpu.uuid or "", *ids, user), value


def _attributed(s: Snapshot, count: bool = False, ranked: bool = False) -> Iterator[Sample]:
    """GPU memory per Slurm job, pod and container on each GPU or MIG device (the ids empty
    for a whole GPU), of the processes that report it; or with `count` the number of its
    processes, memory reported or not: one series per job on a device while it is there.
    `ranked`: every job with its memory (0 where none is reported), the order both metrics
    keep jobs by within their limit."""
    for gpu in gpus(s):
        if gpu.lost:
            continue
        devices = [(("", ""), gpu.processes or ())]
        if gpu.mig is not None:
            devices += [(tuple("" if v is None else str(v)
                               for v in (d.gpu_instance_id, d.compute_instance_id)),
                         d.processes or ()) for d in gpu.mig.devices]
        for ids, procs in devices:
            held: dict[tuple[str, ...], float] = {}
            for proc in procs:
                who = proc.attribution
                if who is None or not who.known or not (
                        count or ranked or proc.used_memory_bytes is not None):
                    continue
                key = (proc.charged_user or UNKNOWN_USER, who.slurm_job or "",
                       who.pod_uid or "", who.container_id or "")
                held[key] = held.get(key, 0.0) + (1 if count else proc.used_memory_bytes or 0)
            for key, used in sorted(held.items()):
                yield (str(gpu.index), gpu.uuid or "", *ids, *key), used


# The attributed series keep the same jobs: those holding the most GPU memory.
_ATTRIBUTED_BOUND: dict[str, Any] = {
    "limit": ATTRIBUTED_SERIES_LIMIT, "folded": ("user", "slurm_job", "pod_uid", "container_id"),
    "rank": lambda s: _attributed(s, ranked=True)}


def _processes(s: Snapshot) -> Iterator[Sample]:
    for gpu in gpus(s):
        mig_of = {}
        if gpu.mig is not None:
            mig_of = {id(p): str(d.index) for d in gpu.mig.devices for p in d.processes or ()}
        for proc in gpu.all_processes():
            if proc.used_memory_bytes is None:
                continue
            yield (
                (
                    str(gpu.index),
                    gpu.uuid or "",
                    str(proc.pid),
                    proc.user or UNKNOWN_USER,
                    proc.name or "",
                    mig_of.get(id(proc), ""),
                ),
                float(proc.used_memory_bytes),
            )


METRICS: tuple[Metric, ...] = (
    Metric(
        "gpu_user_memory_used_bytes",
        "gauge",
        "GPU memory held by a user's processes.",
        (*GPU_LABELS, "user"),
        "gpu.users[].used_memory_bytes",
        lambda s: _users(s, "used_memory_bytes"),
    ),
    Metric(
        "gpu_user_processes",
        "gauge",
        "A user's processes on a GPU.",
        (*GPU_LABELS, "user"),
        "gpu.users[].processes",
        lambda s: _users(s, "processes"),
    ),
    Metric(
        "gpu_user_sm_utilization_ratio",
        "gauge",
        "Sum of NVML's latest SM utilization samples of a user's processes on a whole GPU "
        "(absent where none of them has a sample).",
        (*GPU_LABELS, "user"),
        "gpu.gpus[].processes[].sm_utilization_ratio",
        _user_sm_utilization,
    ),
    Metric(
        "gpu_user_accounted_processes_total",
        "counter",
        "A user's processes that NVML accounting saw start and end between two samples "
        "(accounting on, hwinfo serve only; owner gone: user \"(unknown)\").",
        (*GPU_LABELS, "user"),
        "gpu.accounted[].processes",
        lambda s: _users(s, "processes", "accounted"),
    ),
    Metric(
        "gpu_user_accounted_seconds_total",
        "counter",
        "Run time of those processes, from NVML accounting.",
        (*GPU_LABELS, "user"),
        "gpu.accounted[].run_seconds",
        lambda s: _users(s, "run_seconds", "accounted"),
    ),
    Metric(
        "gpu_user_accounted_busy_seconds_total",
        "counter",
        "Their run time times each one's lifetime GPU utilization, from NVML accounting.",
        (*GPU_LABELS, "user"),
        "gpu.accounted[].busy_seconds",
        lambda s: _users(s, "busy_seconds", "accounted"),
    ),
    Metric(
        "mig_device_user_memory_used_bytes",
        "gauge",
        "GPU memory held by a user's processes on one MIG device.",
        (*GPU_LABELS, "gpu_instance_id", "compute_instance_id", "user"),
        "gpu.gpus[].mig.devices[].processes[].used_memory_bytes",
        _mig_device_users,
    ),
    Metric(
        "mig_device_user_processes",
        "gauge",
        "A user's processes on one MIG device (with or without a memory figure).",
        (*GPU_LABELS, "gpu_instance_id", "compute_instance_id", "user"),
        "gpu.gpus[].mig.devices[].processes[]",
        lambda s: _mig_device_users(s, count=True),
    ),
    Metric(
        "gpu_attributed_memory_used_bytes",
        "gauge",
        "GPU memory held by the processes of one Slurm job, pod or container on a GPU (MIG "
        "ids empty) or MIG device; its series ends with the job.",
        (*GPU_LABELS, "gpu_instance_id", "compute_instance_id", "user", "slurm_job", "pod_uid",
         "container_id"),
        "gpu.gpus[].processes[].attribution",
        _attributed,
        **_ATTRIBUTED_BOUND,
    ),
    Metric(
        "gpu_attributed_processes",
        "gauge",
        "Processes of one Slurm job, pod or container on a GPU (MIG ids empty) or MIG device, "
        "with or without a memory figure; its series ends with the job.",
        (*GPU_LABELS, "gpu_instance_id", "compute_instance_id", "user", "slurm_job", "pod_uid",
         "container_id"),
        "gpu.gpus[].processes[].attribution",
        lambda s: _attributed(s, count=True),
        **_ATTRIBUTED_BOUND,
    ),
    Metric(
        "gpu_process_memory_used_bytes",
        "gauge",
        "GPU memory held by one process (--process-metrics; series of exited processes disappear).",
        (*GPU_LABELS, "pid", "user", "command", "mig_index"),
        "gpu.gpus[].processes[].used_memory_bytes",
        _processes,
        optional=True,
    ),
)
