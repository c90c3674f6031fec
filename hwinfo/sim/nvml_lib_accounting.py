"""Accounting calls of the fake libnvidia-ml: the mode, the buffer's pids and each one's
statistics (nvml.h "Accounting Statistics"; the state lives in accounting.py).

Accounting belongs to the physical GPU: on a MIG-enabled GPU NVML reports it disabled and
refuses to change it. Setting the mode and clearing the buffer need root.
"""

from __future__ import annotations

import ctypes

from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.devices import Device, GpuDevice
from hwinfo.sim.machine import Machine
from hwinfo.sim.nvml_lib_base import (
    INSUFFICIENT_SIZE,
    INVALID_ARGUMENT,
    NO_PERMISSION,
    NOT_FOUND,
    NOT_SUPPORTED,
    SUCCESS,
    Symbol,
)

# NVML_VALUE_NOT_AVAILABLE in the struct's unsigned fields.
_NOT_AVAILABLE_UINT = 0xFFFFFFFF
_NOT_AVAILABLE_ULL = 2**64 - 1


def _gpu(dev: Device) -> GpuDevice | None:
    # Unknown: what a MIG device handle answers; NotSupported, as for other per-GPU modes.
    return dev if isinstance(dev, GpuDevice) else None


def _on(dev: Device) -> bool:
    gpu = _gpu(dev)
    return gpu is not None and gpu.accounting.enabled and not gpu.mig_enabled


def _mode(machine: Machine, dev: Device, ref: object) -> int:
    """nvmlDeviceGetAccountingMode: NVML_FEATURE_ENABLED (1) or _DISABLED (0)."""
    if _gpu(dev) is None:
        return NOT_SUPPORTED
    ref._obj.value = int(_on(dev))  # type: ignore[attr-defined]
    return SUCCESS


def _set_mode(machine: Machine, dev: Device, mode: object) -> int:
    gpu = _gpu(dev)
    if gpu is None or gpu.mig_enabled:
        return NOT_SUPPORTED
    value = base.as_int(mode)
    if value not in (0, 1):
        return INVALID_ARGUMENT
    if not machine.privileged:
        return NO_PERMISSION
    machine.set_accounting(gpu, bool(value))
    return SUCCESS


def _clear(machine: Machine, dev: Device) -> int:
    gpu = _gpu(dev)
    if gpu is None:
        return NOT_SUPPORTED
    if not machine.privileged:
        return NO_PERMISSION
    machine.clear_accounting(gpu)
    return SUCCESS


def _buffer_size(machine: Machine, dev: Device, ref: object) -> int:
    """Answered with accounting off too, as nvidia-smi shows "Buffer Size : 4000" then."""
    gpu = _gpu(dev)
    if gpu is None:
        return NOT_SUPPORTED
    ref._obj.value = gpu.accounting.size  # type: ignore[attr-defined]
    return SUCCESS


def _pids(machine: Machine, dev: Device, count_ref: object, pids: object) -> int:
    """nvmlDeviceGetAccountingPids(device, &count, pids): the two-call protocol."""
    if not _on(dev):
        return NOT_SUPPORTED
    records = machine.accounting_records(dev)  # type: ignore[arg-type]
    count = count_ref._obj  # type: ignore[attr-defined]
    if pids is None or count.value < len(records):
        count.value = len(records)
        return INSUFFICIENT_SIZE if records else SUCCESS
    array = (ctypes.c_uint * len(records)).from_address(base.address(pids))
    for i, record in enumerate(records):
        array[i] = record.pid
    count.value = len(records)
    return SUCCESS


def _stats(machine: Machine, dev: Device, pid: object, ref: object) -> int:
    """nvmlDeviceGetAccountingStats(device, pid, &stats); on a reused pid, the latest."""
    if not _on(dev):
        return NOT_SUPPORTED
    record = machine.accounting_record(dev, base.as_int(pid))  # type: ignore[arg-type]
    if record is None:
        return NOT_FOUND
    stats = ref._obj  # type: ignore[attr-defined]
    stats.gpuUtilization = (_NOT_AVAILABLE_UINT if record.gpu_util_percent is None
                            else record.gpu_util_percent)
    stats.memoryUtilization = (_NOT_AVAILABLE_UINT if record.memory_util_percent is None
                               else record.memory_util_percent)
    stats.maxMemoryUsage = (_NOT_AVAILABLE_ULL if record.max_memory_bytes is None
                            else record.max_memory_bytes)
    stats.time = record.time_ms
    stats.startTime = record.start_us
    stats.isRunning = int(record.running)
    return SUCCESS


SYMBOLS: tuple[Symbol, ...] = (
    Symbol("nvmlDeviceGetAccountingMode", "device", _mode),
    Symbol("nvmlDeviceSetAccountingMode", "device", _set_mode),
    Symbol("nvmlDeviceClearAccountingPids", "device", _clear),
    Symbol("nvmlDeviceGetAccountingBufferSize", "device", _buffer_size),
    Symbol("nvmlDeviceGetAccountingPids", "device", _pids),
    Symbol("nvmlDeviceGetAccountingStats", "device", _stats),
)
