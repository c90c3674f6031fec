"""Processes that hold GPU memory: NVML's lists, their owners, and the per-user rollup."""

from __future__ import annotations

import ntpath
import os
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from hwinfo.binding import function, pynvml
from hwinfo.collect.gpu.nvml import Reader
from hwinfo.model.gpu import Gpu, GpuProcess, UserUsage

_NOT_IN_MIG = 0xFFFFFFFF  # GI/CI of a process outside MIG (nvml.h)


class ProcessOwner(NamedTuple):
    user: str | None
    command: str | None  # full command line
    # The executable as the process table (or a simulated scenario) names it, spaces and all
    # (`C:\Program Files\...\NVIDIA Overlay.exe`); None: the command line's first word.
    executable: str | None = None

    @property
    def name(self) -> str | None:
        """The command name: the executable's base name, as ps shows it."""
        executable = self.executable or (self.command.split()[0] if self.command else None)
        if not executable:
            return None
        # Windows paths (a dump from a Windows host) separate with backslashes.
        return ntpath.basename(executable) if "\\" in executable else os.path.basename(executable)


OwnerLookup = Callable[[int], ProcessOwner | None]


def local_owner(pid: int) -> ProcessOwner | None:
    """The owner from this machine's process table; None when the PID is not in our namespace."""
    import psutil  # here, so a simulated report does not pay for importing it

    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            user = proc.username()
            try:
                command = " ".join(proc.cmdline()) or proc.name()
            except psutil.AccessDenied:  # hidepid, or another user's process under hardening
                command = proc.name()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        return ProcessOwner(None, None)
    return ProcessOwner(user, command)


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


def read_processes(
    read: Reader, handle: Any, owner_of: OwnerLookup, with_command: bool
) -> list[GpuProcess]:
    """Compute and graphics processes of a GPU or MIG device, one entry per PID."""
    by_pid: dict[int, GpuProcess] = {}
    for kind in ("compute", "graphics"):
        for info in read("processes", _list, kind, handle) or ():
            known = by_pid.get(info.pid)
            if known is not None:
                known.type = "compute+graphics"
                continue
            owner = owner_of(info.pid)
            by_pid[info.pid] = GpuProcess(
                pid=info.pid,
                used_memory_bytes=info.usedGpuMemory,
                type=kind,
                gpu_instance_id=_instance_id(info.gpuInstanceId),
                compute_instance_id=_instance_id(info.computeInstanceId),
                visible=owner is not None,
                user=owner.user if owner else None,
                name=owner.name if owner else None,
                command=owner.command if owner and with_command else None,
            )
    return sorted(by_pid.values(), key=lambda p: p.pid)


def listed_processes(
    read: Reader, handle: Any, owner_of: OwnerLookup, with_processes: bool, with_command: bool
) -> tuple[list[GpuProcess] | None, int | None]:
    """The process list (None when not collected) and how many processes NVML lists (read
    either way: counting costs no owner lookups; None when NVML refused the list)."""
    procs = read_processes(read, handle, owner_of if with_processes else _unknown_owner,
                           with_command)
    count = None if "processes" in read.unavailable else len(procs)
    return (procs if with_processes else None), count


def _unknown_owner(pid: int) -> ProcessOwner | None:
    return None


def user_rollup(gpus: Iterable[Gpu]) -> list[UserUsage]:
    """GPU memory and process count per user per GPU, biggest users first within a GPU."""
    rows: list[UserUsage] = []
    for gpu in gpus:
        per_user: dict[str | None, UserUsage] = {}
        for proc in gpu.all_processes():
            usage = per_user.setdefault(proc.user, UserUsage(gpu.index, proc.user, None, 0))
            usage.processes += 1
            if proc.used_memory_bytes is not None:
                usage.used_memory_bytes = (usage.used_memory_bytes or 0) + proc.used_memory_bytes
        rows.extend(sorted(per_user.values(), key=lambda u: (-(u.used_memory_bytes or 0), u.user or "")))
    return rows
