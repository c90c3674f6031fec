"""Processes that hold GPU memory: NVML's lists, their owners, and the per-user rollup."""

from __future__ import annotations

import ntpath
import os
import pwd
import time
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, NamedTuple

from hwinfo import inputs
from hwinfo.binding import function, pynvml
from hwinfo.collect.cgroup import read_attribution
from hwinfo.collect.gpu.nvml import Reader
from hwinfo.collect.sysfs import Root, RootError
from hwinfo.model.attribution import Attribution
from hwinfo.model.gpu import Gpu, GpuProcess, UserUsage

_NOT_IN_MIG = 0xFFFFFFFF  # GI/CI of a process outside MIG (nvml.h)


class ProcessOwner(NamedTuple):
    user: str | None
    command: str | None  # full command line
    # What NVML names the process (a simulated scenario's `name`): on Windows the executable's
    # path, spaces and all (`C:\Program Files\...\NVIDIA Overlay.exe`), on Linux the whole
    # command line (`/opt/microsoft/msedge/msedge --type=gpu-process ...`); None: `command`.
    executable: str | None = None
    started_at: float | None = None  # Unix time
    cpu_seconds: float | None = None  # user + system
    resident_bytes: int | None = None
    attribution: Attribution | None = None  # None: its cgroup was not read

    @property
    def name(self) -> str | None:
        """The command name, as ps shows it: the program's base name, without arguments."""
        named = self.executable or self.command or ""
        # A Windows path (a dump from a Windows host) has no arguments but may have spaces.
        if "\\" in named:
            return ntpath.basename(named)
        # Unknown: a Linux program whose path has spaces (NVML joins the arguments with them).
        program = next(iter(named.split()), None)
        return os.path.basename(program) if program else None


OwnerLookup = Callable[[int], ProcessOwner | None]


def local_owner(pid: int) -> ProcessOwner | None:
    """The owner from this machine's process table; None when the PID is not in our namespace."""
    import psutil  # here, so a simulated report does not pay for importing it

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


# A kernel's /proc/PID/status is about 1.5 KiB; a command line is bounded by ARG_MAX (2 MiB
# by default) but a GPU job's is rarely past a few KiB. A tree's larger file is not a
# process's: it costs that process its owner, read once per process, not 16 MiB each.
STATUS_MAX_BYTES = 64 * 1024
CMDLINE_MAX_BYTES = 256 * 1024


def tree_owners(root: Root, fallback: OwnerLookup) -> OwnerLookup:
    """Owners looked up below root/proc/PID/ (status, cmdline, cgroup), for a simulated
    machine whose GPU processes a fixture tree (or this machine) holds; `fallback` (the
    scenario's owners) where root/proc/PID/ is not there."""

    def owner_of(pid: int) -> ProcessOwner | None:
        try:
            status = root.read_text(f"proc/{pid}/status", STATUS_MAX_BYTES)
            cmdline = root.read_text(f"proc/{pid}/cmdline", CMDLINE_MAX_BYTES) or ""
        except RootError:  # a FIFO or device in the tree: not a process the kernel shows
            status = None
        if status is None:
            return fallback(pid)
        command = " ".join(cmdline.split("\x00")).strip() or _status_field(status, "Name")
        real = next(iter((_status_field(status, "Uid") or "").split()), "")
        user = _user_name(root, real) if real.isdigit() else None
        return ProcessOwner(user, command,
                            attribution=read_attribution(root, pid, inputs.decimal(real)))

    return owner_of


def _status_field(status: str, name: str) -> str | None:
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return value.strip() or None
    return None


def _user_name(root: Root, uid: str) -> str:
    """The account's name from the tree's /etc/passwd, else this machine's; else the number
    (as ps and psutil show a uid without a name). A tree's unreadable passwd (a FIFO, a
    directory) or a uid only Unicode calls a digit ('²') costs this name, never the GPUs."""
    try:
        passwd = root.read_text("etc/passwd") or ""
    except RootError:
        passwd = ""
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) > 2 and fields[2] == uid and fields[0]:
            return fields[0]
    try:
        return pwd.getpwuid(int(uid[:10])).pw_name
    except (KeyError, OverflowError, ValueError):
        return uid


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
