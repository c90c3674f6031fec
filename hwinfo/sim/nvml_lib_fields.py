"""nvmlDeviceGetFieldValues of the fake libnvidia-ml: the NVML_FI_* fields real NVML answers.

The call itself succeeds; each nvmlFieldValue_t carries its own return code, value type and
value (nvml.h). A field answers what the matching plain call answers on the same device, in
the same unit: ECC mode and counts, retired pages, remapped rows, energy (mJ since the driver
loaded), power (mW), NVLink link count, state and throughput counters (KiB), PCIe replays.
A field the board lacks answers NotSupported, as its plain call does.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable

from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.devices import GpuDevice, MigDevice
from hwinfo.sim.machine import Machine
from hwinfo.sim.nvml_lib_base import INVALID_ARGUMENT, NOT_SUPPORTED, SUCCESS, Symbol

# nvmlValueType_t (nvml.h): NVML_VALUE_TYPE_UNSIGNED_INT, _UNSIGNED_LONG_LONG. Each field has
# the C type of its plain call (unsigned int, or unsigned long long for ECC counts, energy and
# byte counters). Unknown: the types real NVML reports per field are not documented.
UINT, ULONGLONG = 1, 3
# NVML_POWER_SCOPE_GPU: the scopeId of the power fields that means the GPU itself.
POWER_SCOPE_GPU = 0
# The power fields (NVML_FI_DEV_POWER_*) first appear in the nvml.h of CUDA 12.2 (R535).
POWER_FIELDS_SINCE = (535,)


class Value(ctypes.Union):
    """nvmlValue_t (nvml.h)."""

    _fields_ = (
        ("dVal", ctypes.c_double),
        ("uiVal", ctypes.c_uint),
        ("ulVal", ctypes.c_ulong),
        ("ullVal", ctypes.c_ulonglong),
        ("sllVal", ctypes.c_longlong),
        ("siVal", ctypes.c_int),
        ("usVal", ctypes.c_ushort),
    )


class FieldValue(ctypes.Structure):
    """nvmlFieldValue_t (nvml.h), as the C library reads and writes it."""

    _fields_ = (
        ("fieldId", ctypes.c_uint32),
        ("scopeId", ctypes.c_uint32),
        ("timestamp", ctypes.c_int64),
        ("latencyUsec", ctypes.c_int64),
        ("valueType", ctypes.c_uint),
        ("nvmlReturn", ctypes.c_uint),
        ("value", Value),
    )


# A field's answer: (return code, value type, value).
Answer = tuple[int, int, int]
Reader = Callable[[Machine, GpuDevice, int], Answer]
UNSUPPORTED: Answer = (NOT_SUPPORTED, UINT, 0)


def _opt(value: int | None, kind: int = UINT) -> Answer:
    return UNSUPPORTED if value is None else (SUCCESS, kind, value)


def _ecc(read: Callable[[GpuDevice], int | None], volatile: bool = False) -> Reader:
    def answer(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
        ecc = gpu.spec.ecc
        # As nvmlDeviceGetTotalEccErrors: no counts with ECC off, no volatile ones in MIG mode.
        if ecc is None or not ecc.enabled or (volatile and gpu.mig_enabled):
            return UNSUPPORTED
        return _opt(read(gpu), ULONGLONG)

    return answer


def _ecc_mode(pending: bool) -> Reader:
    def answer(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
        ecc = gpu.spec.ecc
        return UNSUPPORTED if ecc is None else _opt(int(ecc.pending if pending else ecc.enabled))

    return answer


def _retired(read: Callable[[GpuDevice], int]) -> Reader:
    def answer(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
        return UNSUPPORTED if gpu.spec.retired_pages is None else _opt(read(gpu))

    return answer


def _remapped(read: Callable[[GpuDevice], int]) -> Reader:
    def answer(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
        # As nvmlDeviceGetRemappedRows: not while MIG instances exist (nvml.h).
        if gpu.spec.remapped_rows is None or gpu.gpu_instances:
            return UNSUPPORTED
        return _opt(read(gpu))

    return answer


def _energy(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
    if gpu.spec.energy_j is None:
        return UNSUPPORTED
    return SUCCESS, ULONGLONG, machine.energy_now_mj(gpu)


def _power(read: Callable[[GpuDevice], float | None]) -> Reader:
    """A power field in mW; scopeId chooses GPU, module or memory (NVML_POWER_SCOPE_*)."""

    def answer(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
        # Unknown: module and memory power (Grace Hopper modules report them); not simulated.
        if machine.driver < POWER_FIELDS_SINCE or scope != POWER_SCOPE_GPU:
            return UNSUPPORTED
        watts = read(gpu)
        return _opt(None if watts is None else round(watts * 1000))

    return answer


def _link_count(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
    # Unknown: whether disabled links count; here every link nvmlDeviceGetNvLinkState
    # answers for (the board's links), so clients query exactly those.
    s = gpu.spec
    return UNSUPPORTED if s.nvlink_links is None else _opt(s.nvlink_max_links)


def _per_link(value: Callable[[GpuDevice, int], int]) -> Reader:
    """A field whose scopeId is an NVLink link number."""

    def answer(machine: Machine, gpu: GpuDevice, link: int) -> Answer:
        s = gpu.spec
        if s.nvlink_links is None:
            return UNSUPPORTED
        if link >= s.nvlink_max_links:
            return INVALID_ARGUMENT, UINT, 0
        return SUCCESS, ULONGLONG, value(gpu, link)

    return answer


def _no_traffic(gpu: GpuDevice, link: int) -> int:
    # Unknown: scenarios hold no NVLink traffic, so the KiB counters stay at 0.
    return 0


def _link_state(gpu: GpuDevice, link: int) -> int:
    return int(link < (gpu.spec.nvlink_links or 0))


def _pcie_replays(machine: Machine, gpu: GpuDevice, scope: int) -> Answer:
    pcie = gpu.spec.pcie
    return UNSUPPORTED if pcie is None else _opt(pcie.replay_counter)


# NVML_FI_DEV_* ids (nvml.h; pynvml's constants) -> how the field is answered.
FIELDS: dict[int, Reader] = {
    1: _ecc_mode(pending=False),  # ECC_CURRENT
    2: _ecc_mode(pending=True),  # ECC_PENDING
    3: _ecc(lambda g: g.spec.ecc.volatile.corrected, volatile=True),  # ECC_SBE_VOL_TOTAL
    4: _ecc(lambda g: g.spec.ecc.volatile.uncorrected, volatile=True),  # ECC_DBE_VOL_TOTAL
    5: _ecc(lambda g: g.spec.ecc.aggregate.corrected),  # ECC_SBE_AGG_TOTAL
    6: _ecc(lambda g: g.spec.ecc.aggregate.uncorrected),  # ECC_DBE_AGG_TOTAL
    29: _retired(lambda g: g.spec.retired_pages.single_bit),  # RETIRED_SBE
    30: _retired(lambda g: g.spec.retired_pages.double_bit),  # RETIRED_DBE
    31: _retired(lambda g: int(g.spec.retired_pages.pending)),  # RETIRED_PENDING
    83: _energy,  # TOTAL_ENERGY_CONSUMPTION
    91: _link_count,  # NVLINK_LINK_COUNT
    94: _pcie_replays,  # PCIE_REPLAY_COUNTER
    138: _per_link(_no_traffic),  # NVLINK_THROUGHPUT_DATA_TX
    139: _per_link(_no_traffic),  # NVLINK_THROUGHPUT_DATA_RX
    140: _per_link(_no_traffic),  # NVLINK_THROUGHPUT_RAW_TX
    141: _per_link(_no_traffic),  # NVLINK_THROUGHPUT_RAW_RX
    142: _remapped(lambda g: g.spec.remapped_rows.correctable),  # REMAPPED_COR
    143: _remapped(lambda g: g.spec.remapped_rows.uncorrectable),  # REMAPPED_UNC
    144: _remapped(lambda g: int(g.spec.remapped_rows.pending)),  # REMAPPED_PENDING
    145: _remapped(lambda g: int(g.spec.remapped_rows.failure)),  # REMAPPED_FAILURE
    165: _per_link(_link_state),  # NVLINK_GET_STATE
    185: _power(lambda g: g.spec.power_draw_w),  # POWER_AVERAGE
    186: _power(lambda g: g.spec.power_draw_w),  # POWER_INSTANT
    187: _power(lambda g: g.spec.power_min_limit_w),  # POWER_MIN_LIMIT
    188: _power(lambda g: g.spec.power_max_limit_w),  # POWER_MAX_LIMIT
    189: _power(lambda g: g.spec.power_default_limit_w),  # POWER_DEFAULT_LIMIT
    190: _power(lambda g: g.spec.power_limit_w),  # POWER_CURRENT_LIMIT
}


def _field_values(
    machine: Machine, dev: GpuDevice | MigDevice, count: object, values: object
) -> int:
    """nvmlDeviceGetFieldValues(device, valuesCount, values): fills each entry in place."""
    n = base.as_int(count)
    if n < 0:
        return INVALID_ARGUMENT
    stamp = time.time_ns() // 1000
    for entry in (FieldValue * n).from_address(base.address(values)):
        # Unknown: fields on a MIG device handle, and ids NVML does not define; NotSupported.
        read = None if isinstance(dev, MigDevice) else FIELDS.get(entry.fieldId)
        rc, kind, value = UNSUPPORTED if read is None else read(machine, dev, entry.scopeId)
        entry.nvmlReturn, entry.valueType, entry.timestamp, entry.latencyUsec = rc, kind, stamp, 0
        entry.value.ullVal = 0
        setattr(entry.value, "uiVal" if kind == UINT else "ullVal", value)
    return SUCCESS


SYMBOLS: tuple[Symbol, ...] = (Symbol("nvmlDeviceGetFieldValues", "device", _field_values),)
