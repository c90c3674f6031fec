"""Processes that hold GPU memory: NVML's lists, their owners in this machine's process
table, and the per-user rollup."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import psutil

from hwinfo.binding import function, pynvml
from hwinfo.collect.cgroup import read_attribution
from hwinfo.collect.gpu.nvml import Reader
from hwinfo.collect.gpu.owners import OwnerLookup, ProcessOwner
from hwinfo.collect.sysfs import Root
from hwinfo.model.gpu import Gpu, GpuProcess, UserUsage

_NOT_IN_MIG = 0xFFFFFFFF  # GI/CI of a process outside MIG (nvml.h)


def local_owner(pid: int) -> ProcessOwner | None:
    """The owner from this machine's process table; None when the PID is not in our namespace."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            user = proc.username()
            uid = proc.uids().real
            try:
                command = " ".join(proc.cmdline()) or proc.name()
            except psutil.AccessDenied:  # hidepid, or another user's process under hardening
                command = proc.name()
            started = proc.create_time()
            try:
                times, resident = proc.cpu_times(), proc.memory_info().rss
            except psutil.AccessDenied:
                times, resident = None, None
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        return ProcessOwner(None, None)
    attribution = read_attribution(live_root(), pid, uid)
    if times is None:
        return ProcessOwner(user, command, started_at=started, attribution=attribution)
    return ProcessOwner(user, command, None, started, times.user + times.system, resident,
                        attribution)


@cache
def live_root() -> Root:
    """This machine's /proc, where local_owner looks processes up."""
    return Root("/")


# Newest first; a driver that lacks a symbol gets the next. pynvml's unversioned
# compute call raises NVMLLibraryMismatchError there, the versioned ones FunctionNotFound.
_LISTERS: dict[str, tuple[Callable[[Any], list[Any]], ...]] = {
    "compute": (
        function("nvmlDeviceGetComputeRunningProcesses_v3"),
        function("nvmlDeviceGetComputeRunningProcesses_v2"),
    ),
    "graphics": (
        function("nvmlDeviceGetGraphicsRunningProcesses_v3"),
        function("nvmlDeviceGetGraphicsRunningProcesses_v2"),
    ),
}


def _list(kind: str, handle: Any) -> list[Any]:
    for lister in _LISTERS[kind]:
        try:
            return lister(handle)
        except pynvml.NVMLError_FunctionNotFound:
            continue
    raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)


def _instance_id(value: int) -> int | None:
    return None if value == _NOT_IN_MIG else value


def _utilization(handle: Any) -> dict[int, tuple[int, int]]:
    """pid -> (SM %, memory %) of NVML's latest per-process sample; empty where there is
    none (NotFound), on MIG (NotSupported) and on drivers or bindings without the calls."""
    for call in ("nvmlDeviceGetProcessesUtilizationInfo", "nvmlDeviceGetProcessUtilization"):
        try:
            samples = function(call)(handle, 0)  # 0: every sample NVML still holds
        except pynvml.NVMLError_FunctionNotFound:
            continue
        except pynvml.NVMLError:
            return {}
        latest: dict[int, Any] = {}
        for sample in sorted(samples, key=lambda s: s.timeStamp):
            latest[sample.pid] = sample
        return {pid: (s.smUtil, s.memUtil) for pid, s in latest.items()}
    return {}


def read_processes(
    read: Reader, handle: Any, owner_of: OwnerLookup, with_command: bool, details: bool = True
) -> list[GpuProcess]:
    """Compute and graphics processes of a GPU or MIG device, one entry per PID; `details`:
    also what each is doing (NVML's samples, the host's process table)."""
    by_pid: dict[int, GpuProcess] = {}
    samples = _utilization(handle) if details else {}
    now = time.time()
    for kind in ("compute", "graphics"):
        for info in read("processes", _list, kind, handle) or ():
            known = by_pid.get(info.pid)
            if known is not None:
                known.type = "compute+graphics"
                continue
            owner = owner_of(info.pid)
            sm, memory = samples.get(info.pid, (None, None))
            run = None if owner is None or owner.started_at is None else now - owner.started_at
            by_pid[info.pid] = GpuProcess(
                pid=info.pid,
                used_memory_bytes=info.usedGpuMemory,
                type=kind,
                gpu_instance_id=_instance_id(info.gpuInstanceId),
                compute_instance_id=_instance_id(info.computeInstanceId),
                visible=owner is not None,
                user=owner.user if owner else None,
                name=owner.name if owner else None,
                # NVML's name stands in for a command line it does not hold: a Windows
                # path (the only command a Windows dump or driver gives) keeps its folders.
                command=(owner.command or owner.executable) if owner and with_command else None,
                sm_utilization_ratio=None if sm is None else sm / 100,
                memory_utilization_ratio=None if memory is None else memory / 100,
                run_seconds=run,
                cpu_utilization_ratio=(owner.cpu_seconds / run if run and owner
                                       and owner.cpu_seconds is not None else None),
                resident_memory_bytes=owner.resident_bytes if owner else None,
                attribution=owner.attribution if owner else None,
            )
    return sorted(by_pid.values(), key=lambda p: p.pid)


def listed_processes(
    read: Reader, handle: Any, owner_of: OwnerLookup, with_processes: bool, with_command: bool
) -> tuple[list[GpuProcess] | None, int | None]:
    """The process list (None when not collected) and how many processes NVML lists (read
    either way: counting costs no owner lookups; None when NVML refused the list)."""
    procs = read_processes(read, handle, owner_of if with_processes else _unknown_owner,
                           with_command, details=with_processes)
    count = None if "processes" in read.unavailable else len(procs)
    return (procs if with_processes else None), count


def _unknown_owner(pid: int) -> ProcessOwner | None:
    return None


def user_rollup(gpus: Iterable[Gpu]) -> list[UserUsage]:
    """GPU memory, process count and jobs per charged user per GPU, biggest first within a GPU."""
    rows: list[UserUsage] = []
    for gpu in gpus:
        per_user: dict[str | None, UserUsage] = {}
        # Sorted once per user: a user may have thousands of jobs on one GPU.
        labels: dict[str | None, set[str]] = {}
        for proc in gpu.all_processes():
            user = proc.charged_user
            usage = per_user.setdefault(user, UserUsage(gpu.index, user, None, 0))
            usage.processes += 1
            if proc.used_memory_bytes is not None:
                usage.used_memory_bytes = (usage.used_memory_bytes or 0) + proc.used_memory_bytes
            if proc.attribution is not None and proc.attribution.known:
                labels.setdefault(user, set()).add(proc.attribution.label)
        for user, names in labels.items():
            per_user[user].attributions = sorted(names)
        rows.extend(sorted(per_user.values(), key=lambda u: (-(u.used_memory_bytes or 0), u.user or "")))
    return rows
