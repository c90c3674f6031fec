"""Process calls of the fake libnvidia-ml: running compute/graphics/MPS process lists and
nvmlSystemGetProcessName.

The lists use NVML's two-call protocol (nvml.h; pynvml's wrappers): called with a count too
small (0 and NULL first), the call stores the needed count and answers InsufficientSize,
or Success when there is nothing to list; called with room, it fills the caller's array in
the layout of the symbol's struct version and stores the count.
"""

from __future__ import annotations

import ctypes
import time

from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.boards import DEFAULT_SAMPLING_US
from hwinfo.sim.devices import Device, GpuDevice, MigDevice
from hwinfo.sim.machine import NO_INSTANCE, Machine
from hwinfo.sim.nvml_lib_base import (
    ARGUMENT_VERSION_MISMATCH,
    INSUFFICIENT_SIZE,
    INVALID_ARGUMENT,
    NO_PERMISSION_REPLY,
    NOT_FOUND,
    NOT_SUPPORTED,
    SUCCESS,
    Impl,
    Reply,
    Symbol,
    ok,
)

MIB = 1 << 20
# NVML_VALUE_NOT_AVAILABLE as unsigned long long: pynvml turns it into None.
NOT_AVAILABLE = 2**64 - 1
# nvmlProcessDetailList_v1 (pynvml): the struct version nvmlDeviceGetRunningProcessDetailList takes.
PROCESS_DETAIL_LIST_V1 = 0x1000018
# nvmlProcessMode_t: NVML_PROCESS_MODE_COMPUTE, _GRAPHICS, _MPS.
_MODES = {0: "processes:compute", 1: "processes:graphics", 2: None}
_COMPUTE = ("compute", "compute+graphics")
_GRAPHICS = ("graphics", "compute+graphics")


class ProcessInfoV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t: the unversioned symbol's layout."""

    _fields_ = (("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong))


class ProcessInfoV2(ctypes.Structure):
    """nvmlProcessInfo_v2_t, also what _v3 fills (nvml.h; pynvml c_nvmlProcessInfo_v3_t)."""

    _fields_ = (
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    )


class ProcessDetailV1(ctypes.Structure):
    """nvmlProcessDetail_v1_t: a v2 row plus the confidential-computing protected memory."""

    _fields_ = (
        *ProcessInfoV2._fields_,
        ("usedGpuCcProtectedMemory", ctypes.c_ulonglong),
    )


Row = tuple[int, int, int, int]  # pid, usedGpuMemory (bytes), gpuInstanceId, computeInstanceId


def _lists(machine: Machine, dev: Device) -> dict[str, Reply]:
    """Per device: the compute and graphics rows NVML would list."""
    if isinstance(dev, MigDevice):
        # Only the MIG device's own compute instance.
        # Unknown: whether processes of sibling compute instances in its GPU instance are
        # listed too.
        gi, ci = dev.gpu_instance.spec.id, dev.compute_instance.spec.id
        procs = [
            p for p in dev.gpu.processes if p.gpu_instance_id == gi and p.compute_instance_id == ci
        ]
    else:
        assert isinstance(dev, GpuDevice)
        # nvml.h: in MIG mode the parent lists every instance's processes "only if the caller
        # has appropriate privileges".
        if dev.mig_enabled and not machine.privileged:
            return {
                "processes:compute": NO_PERMISSION_REPLY,
                "processes:graphics": NO_PERMISSION_REPLY,
            }
        procs = list(dev.processes)

    def rows(types: tuple[str, ...]) -> tuple[Row, ...]:
        return tuple(
            (
                p.pid,
                NOT_AVAILABLE if p.used_memory_mib is None else p.used_memory_mib * MIB,
                NO_INSTANCE if p.gpu_instance_id is None else p.gpu_instance_id,
                NO_INSTANCE if p.compute_instance_id is None else p.compute_instance_id,
            )
            for p in procs
            if p.type in types
        )

    return {"processes:compute": ok(rows(_COMPUTE)), "processes:graphics": ok(rows(_GRAPHICS))}


base.ANSWER_BUILDERS.append(_lists)


def _running(kind: str, layout: type[ctypes.Structure]) -> Impl:
    """nvmlDeviceGet{Compute,Graphics}RunningProcesses[_v2|_v3](handle, byref(count), infos)."""
    key = f"processes:{kind}"
    size = ctypes.sizeof(layout)
    with_instances = layout is ProcessInfoV2

    def impl(machine: Machine, dev: Device, count_ref: object, infos: object) -> int:
        rc, rows = (dev.answers or base.answers(machine, dev))[key]
        if rc:
            return rc
        n = len(rows)  # type: ignore[arg-type]
        count = count_ref._obj  # type: ignore[attr-defined]
        if infos is None or count.value < n:
            count.value = n
            return INSUFFICIENT_SIZE if n else SUCCESS
        if n:
            # The C library writes its own struct layout whatever the caller allocated; the
            # bound keeps a mismatched caller's buffer from being overrun.
            room = ctypes.sizeof(infos) // size if isinstance(infos, ctypes.Array) else n
            array = (layout * min(n, room)).from_address(base.address(infos))
            for entry, (pid, memory, gi, ci) in zip(array, rows):  # type: ignore[call-overload]
                entry.pid = pid
                entry.usedGpuMemory = memory
                if with_instances:
                    entry.gpuInstanceId = gi
                    entry.computeInstanceId = ci
        count.value = n
        return SUCCESS

    return impl


def _detail_list(machine: Machine, dev: Device, ref: object) -> int:
    """nvmlDeviceGetRunningProcessDetailList(handle, byref(nvmlProcessDetailList_v1_t)): the
    two-call protocol through the struct's numProcArrayEntries and procArray."""
    detail = ref._obj  # type: ignore[attr-defined]
    if detail.version != PROCESS_DETAIL_LIST_V1:
        return ARGUMENT_VERSION_MISMATCH
    if detail.mode not in _MODES:
        return INVALID_ARGUMENT
    key = _MODES[detail.mode]
    rc, rows = (SUCCESS, ()) if key is None else (dev.answers or base.answers(machine, dev))[key]
    if rc:
        return rc
    n = len(rows)  # type: ignore[arg-type]
    if not detail.procArray or detail.numProcArrayEntries < n:
        detail.numProcArrayEntries = n
        return INSUFFICIENT_SIZE if n else SUCCESS
    start = ctypes.cast(detail.procArray, ctypes.c_void_p).value
    for entry, (pid, memory, gi, ci) in zip((ProcessDetailV1 * n).from_address(start), rows):  # type: ignore[call-overload]
        entry.pid, entry.usedGpuMemory = pid, memory
        entry.gpuInstanceId, entry.computeInstanceId = gi, ci
        entry.usedGpuCcProtectedMemory = 0  # confidential computing is off in every scenario
    detail.numProcArrayEntries = n
    return SUCCESS


def _mps(machine: Machine, dev: Device, count_ref: object, infos: object) -> int:
    """MPS server clients: no scenario runs MPS, so the list is always empty."""
    count_ref._obj.value = 0  # type: ignore[attr-defined]
    return SUCCESS


class ProcessUtilizationInfoV1(ctypes.Structure):
    """nvmlProcessUtilizationInfo_v1_t (nvml.h)."""

    _fields_ = [
        ("timeStamp", ctypes.c_ulonglong),
        ("pid", ctypes.c_uint),
        ("smUtil", ctypes.c_uint),
        ("memUtil", ctypes.c_uint),
        ("encUtil", ctypes.c_uint),
        ("decUtil", ctypes.c_uint),
        ("jpgUtil", ctypes.c_uint),
        ("ofaUtil", ctypes.c_uint),
    ]


class ProcessUtilizationSample(ctypes.Structure):
    """nvmlProcessUtilizationSample_t (nvml.h)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("timeStamp", ctypes.c_ulonglong),
        ("smUtil", ctypes.c_uint),
        ("memUtil", ctypes.c_uint),
        ("encUtil", ctypes.c_uint),
        ("decUtil", ctypes.c_uint),
    ]


PROCESSES_UTILIZATION_INFO_V1 = 0x01000018


def _utilization_samples(dev: Device, last_seen_us: int) -> list[tuple[int, int, int, int]] | int:
    """(pid, timestamp in µs, SM %, memory %) of the processes the scenario gives samples for,
    newer than last_seen_us; NotSupported in MIG mode (nvml.h)."""
    if isinstance(dev, MigDevice) or dev.gpu.mig_enabled:
        return NOT_SUPPORTED
    # Unknown: the real period and buffer depth of per-process samples; one sample per
    # process, taken at the start of the current period of the board's sampling period.
    now_us = int(time.time() * 1_000_000)
    now_us -= now_us % DEFAULT_SAMPLING_US
    if now_us <= last_seen_us:
        return []
    return [
        (p.pid, now_us, p.sm_percent, p.memory_percent or 0)
        for p in dev.gpu.processes
        if p.sm_percent is not None
    ]


def _process_utilization(
    machine: Machine, dev: Device, samples: object, count_ref: object, last_seen: object
) -> int:
    """nvmlDeviceGetProcessUtilization(device, samples, &count, lastSeenTimeStamp): the
    two-call protocol; NotFound when there are no samples ("sample entries are not found")."""
    rows = _utilization_samples(dev, base.as_int(last_seen))
    if isinstance(rows, int):
        return rows
    count = count_ref._obj  # type: ignore[attr-defined]
    if not rows:
        count.value = 0
        return NOT_FOUND
    if samples is None or count.value < len(rows):
        count.value = len(rows)
        return INSUFFICIENT_SIZE
    array = (ProcessUtilizationSample * len(rows)).from_address(base.address(samples))
    for entry, (pid, stamp, sm, memory) in zip(array, rows):
        entry.pid, entry.timeStamp, entry.smUtil, entry.memUtil = pid, stamp, sm, memory
    count.value = len(rows)
    return SUCCESS


def _processes_utilization_info(machine: Machine, dev: Device, ref: object) -> int:
    """nvmlDeviceGetProcessesUtilizationInfo(device, &info_v1): the same samples through the
    versioned struct's processSamplesCount and procUtilArray."""
    info = ref._obj  # type: ignore[attr-defined]
    if info.version != PROCESSES_UTILIZATION_INFO_V1:
        return ARGUMENT_VERSION_MISMATCH
    rows = _utilization_samples(dev, info.lastSeenTimeStamp)
    if isinstance(rows, int):
        return rows
    if not rows:
        info.processSamplesCount = 0
        return NOT_FOUND
    if not info.procUtilArray or info.processSamplesCount < len(rows):
        info.processSamplesCount = len(rows)
        return INSUFFICIENT_SIZE
    start = ctypes.cast(info.procUtilArray, ctypes.c_void_p).value
    for entry, (pid, stamp, sm, memory) in zip(
        (ProcessUtilizationInfoV1 * len(rows)).from_address(start), rows  # type: ignore[call-overload]
    ):
        entry.timeStamp, entry.pid, entry.smUtil, entry.memUtil = stamp, pid, sm, memory
    info.processSamplesCount = len(rows)
    return SUCCESS


def _process_name(machine: Machine, pid: object, buf: object, length: object) -> int:
    """nvmlSystemGetProcessName: the scenario's process name, or its command line's first word.

    NotFound for a pid on no GPU, or one outside this PID namespace (`visible: false`).
    """
    name = machine.process_name(base.as_int(pid))
    if name is None:
        return NOT_FOUND
    return base.put_string(buf, length, name.encode(errors="surrogateescape"))


SYMBOLS: tuple[Symbol, ...] = (
    Symbol("nvmlDeviceGetComputeRunningProcesses", "device", _running("compute", ProcessInfoV1)),
    Symbol(
        "nvmlDeviceGetComputeRunningProcesses_v2",
        "device",
        _running("compute", ProcessInfoV2),
    ),
    Symbol(
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "device",
        _running("compute", ProcessInfoV2),
    ),
    Symbol("nvmlDeviceGetGraphicsRunningProcesses", "device", _running("graphics", ProcessInfoV1)),
    Symbol(
        "nvmlDeviceGetGraphicsRunningProcesses_v2",
        "device",
        _running("graphics", ProcessInfoV2),
    ),
    Symbol(
        "nvmlDeviceGetGraphicsRunningProcesses_v3",
        "device",
        _running("graphics", ProcessInfoV2),
    ),
    Symbol("nvmlDeviceGetMPSComputeRunningProcesses", "device", _mps),
    Symbol("nvmlDeviceGetMPSComputeRunningProcesses_v2", "device", _mps),
    Symbol("nvmlDeviceGetMPSComputeRunningProcesses_v3", "device", _mps),
    Symbol("nvmlDeviceGetRunningProcessDetailList", "device", _detail_list),
    Symbol("nvmlDeviceGetProcessUtilization", "device", _process_utilization),
    Symbol("nvmlDeviceGetProcessesUtilizationInfo", "device", _processes_utilization_info),
    Symbol("nvmlSystemGetProcessName", "system", _process_name),
)
