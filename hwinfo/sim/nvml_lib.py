"""The fake libnvidia-ml.so.1: FakeLib answers the C calls of the real pynvml module.

`pynvml.nvmlLib = FakeLib(machine)` puts it below pynvml, which then calls
`getattr(nvmlLib, "nvmlDeviceGetName")(handle, buf, length)` exactly as it calls the C library.
Each attribute is a plain function (pynvml may set `.restype` on it) that takes the ctypes
arguments, fills the outputs through them and returns an NVML return code. A function the
scenario's driver does not export is simply absent, so pynvml raises FunctionNotFound.

The library exports what the real one of the scenario's driver branch exports
(nvml_symbols.py). A function the simulator does not implement answers NotSupported, the
answer real NVML gives for a feature the machine lacks, after the same gate as the others.

Every call passes the same gate before its implementation: NVML initialised, handle valid,
scenario faults (delay, error), GPU not lost. The area modules (device, mig, processes,
events) hold the implementations.
"""

from __future__ import annotations

from collections.abc import Callable
from ctypes import addressof

from hwinfo.sim import (
    nvml_lib_accounting,
    nvml_lib_device,
    nvml_lib_events,
    nvml_lib_fields,
    nvml_lib_gpm,
    nvml_lib_mig,
    nvml_lib_processes,
    nvml_lib_topology,
)
from hwinfo.sim.machine import Machine
from hwinfo.sim.nvml_lib_base import (
    GPU_IS_LOST,
    INVALID_ARGUMENT,
    LIBRARY_NOT_FOUND,
    NOT_SUPPORTED,
    SUCCESS,
    UNINITIALIZED,
    Symbol,
    as_int,
    write_handle,
)
from hwinfo.sim.nvml_symbols import exported, fault_name

# nvmlErrorString texts. Codes pynvml knows carry pynvml's copies of NVML's own strings.
# Unknown: the texts from 19 on (except 20 and 999) come from a third-party NVML stand-in and
# are not checked against libnvidia-ml.
ERROR_STRINGS: dict[int, bytes] = {
    0: b"Success",
    1: b"Uninitialized",
    2: b"Invalid Argument",
    3: b"Not Supported",
    4: b"Insufficient Permissions",
    5: b"Already Initialized",
    6: b"Not Found",
    7: b"Insufficient Size",
    8: b"Insufficient External Power",
    9: b"Driver Not Loaded",
    10: b"Timeout",
    11: b"Interrupt Request Issue",
    12: b"NVML Shared Library Not Found",
    13: b"Function Not Found",
    14: b"Corrupted infoROM",
    15: b"GPU is lost",
    16: b"GPU requires restart",
    17: b"The operating system has blocked the request.",
    18: b"RM has detected an NVML/RM version mismatch.",
    19: b"In use by another client",
    20: b"Insufficient Memory",
    21: b"No data",
    22: b"The requested vgpu operation is not available on target device, because ECC is enabled",
    23: b"Insufficient Resources",
    24: b"Frequency not supported",
    25: b"Argument version mismatch",
    26: b"Deprecated",
    27: b"Not Ready",
    28: b"GPU not found",
    29: b"Invalid state",
    30: b"Reset type not supported",
    999: b"Unknown Error",
}

def _core_symbols() -> tuple[Symbol, ...]:
    """Init, shutdown, error strings and the device count: calls with their own gating."""

    def init(machine: Machine, *flags: object) -> int:
        machine.catch_up()
        faults = machine.active_faults.get("nvmlInit")
        if faults and (rc := machine.apply_faults(faults, -1)):
            return rc
        if machine.scenario.library_missing:
            return LIBRARY_NOT_FOUND
        return machine.init()

    def shutdown(machine: Machine) -> int:
        return SUCCESS if machine.shutdown() else UNINITIALIZED

    def error_string(machine: Machine, result: object) -> bytes:
        # pynvml sets restype = c_char_p, so this returns the bytes a char * would point at.
        return ERROR_STRINGS.get(as_int(result), ERROR_STRINGS[999])

    def count(machine: Machine, ref: object) -> int:
        if not machine.initialized:
            return UNINITIALIZED
        machine.catch_up()
        faults = machine.active_faults.get("nvmlDeviceGetCount")
        if faults and (rc := machine.apply_faults(faults, -1)):
            return rc
        ref._obj.value = len(machine.gpus)  # type: ignore[attr-defined]
        return SUCCESS

    return (
        Symbol("nvmlInit", "raw", init),
        Symbol("nvmlInit_v2", "raw", init),
        Symbol("nvmlInitWithFlags", "raw", init),
        Symbol("nvmlShutdown", "raw", shutdown),
        Symbol("nvmlErrorString", "raw", error_string),  # type: ignore[arg-type]
        # The unversioned form counts devices the caller may not use too; no scenario has any.
        Symbol("nvmlDeviceGetCount", "raw", count),
        Symbol("nvmlDeviceGetCount_v2", "raw", count),
    )


SYMBOLS: tuple[Symbol, ...] = (
    *_core_symbols(),
    *nvml_lib_device.SYMBOLS,
    *nvml_lib_fields.SYMBOLS,
    *nvml_lib_mig.SYMBOLS,
    *nvml_lib_processes.SYMBOLS,
    *nvml_lib_events.SYMBOLS,
    *nvml_lib_gpm.SYMBOLS,
    *nvml_lib_accounting.SYMBOLS,
    *nvml_lib_topology.SYMBOLS,
)


IMPLEMENTED: dict[str, Symbol] = {s.name: s for s in SYMBOLS}

# Functions taking no handle although their names start with nvmlDevice, and functions
# taking a device handle although theirs do not (nvml.h).
_NO_HANDLE = frozenset(
    {
        "nvmlDeviceDiscoverGpus",
        "nvmlDeviceGetHandleBySerial",
        "nvmlDeviceGetHandleByUUIDV",
        "nvmlDeviceGetHandles",
        "nvmlDeviceModifyDrainState",
        "nvmlDeviceQueryDrainState",
        "nvmlDeviceRemoveGpu",
        "nvmlDeviceRemoveGpu_v2",
    }
)
_DEVICE_HANDLE = frozenset(
    {
        "nvmlGpmMigSampleGet",
        "nvmlGpmQueryDeviceSupport",
        "nvmlGpmQueryIfStreamingEnabled",
        "nvmlGpmSampleGet",
        "nvmlGpmSetStreamingEnabled",
        "nvmlVgpuTypeGetMaxInstances",
    }
)
_HANDLE_PREFIXES = (
    ("nvmlDevice", "device"),
    ("nvmlGpuInstance", "gpu_instance"),
    ("nvmlComputeInstance", "compute_instance"),
)


def _not_supported(machine: Machine, *args: object) -> int:
    return NOT_SUPPORTED


def unimplemented(name: str) -> Symbol:
    """An exported function the simulator does not implement: gate, then NotSupported."""
    target = "device" if name in _DEVICE_HANDLE else "system"
    if name not in _NO_HANDLE:
        target = next((t for prefix, t in _HANDLE_PREFIXES if name.startswith(prefix)), target)
    return Symbol(name, target, _not_supported)


def _bind(machine: Machine, sym: Symbol) -> Callable[..., object]:
    """The exported function for one symbol: the common gate, then the implementation."""
    impl, call, m = sym.impl, fault_name(sym.name), machine
    if sym.target == "raw":
        return lambda *args: impl(m, *args)

    if sym.target == "system":

        def system(*args: object) -> int:
            if not m.initialized:
                return UNINITIALIZED
            m.catch_up()
            faults = m.active_faults.get(call)
            if faults and (rc := m.apply_faults(faults, -1)):
                return rc
            return impl(m, *args)

        return system

    if sym.target == "lookup":

        def lookup(*args: object) -> int:
            if not m.initialized:
                return UNINITIALIZED
            m.catch_up()
            *keys, ref = args
            found = impl(m, *keys)
            if found.__class__ is int:
                return found  # type: ignore[return-value]
            faults = m.active_faults.get(call)
            if faults and (rc := m.apply_faults(faults, found.gpu.index)):
                return rc
            if found.gpu.lost:
                return GPU_IS_LOST
            write_handle(ref, found.handle)
            return SUCCESS

        return lookup

    registry = {
        "device": m.devices,
        "gpu_instance": m.gpu_instances,
        "compute_instance": m.compute_instances,
        "event_set": m.event_sets,
        "gpm_sample": m.gpm_samples,
    }[sym.target]

    def on_handle(handle: object, *args: object) -> int:
        if not m.initialized:
            return UNINITIALIZED
        m.catch_up()
        try:  # handle_value(), inlined: this runs on every call
            obj = registry.get(addressof(handle.contents))  # type: ignore[attr-defined]
        except (ValueError, AttributeError, TypeError):
            obj = None
        if obj is None:
            return INVALID_ARGUMENT
        gpu = obj.gpu
        faults = m.active_faults.get(call)
        if faults and (rc := m.apply_faults(faults, gpu.index)):
            return rc
        if gpu.lost:
            return GPU_IS_LOST
        try:
            return impl(m, obj, *args)
        except AttributeError:
            if None in args:  # a NULL output pointer: what NVML answers it (nvml.h)
                return INVALID_ARGUMENT
            raise

    return on_handle


class FakeLib:
    """Stands in for the CDLL of libnvidia-ml.so.1; exports what the scenario's driver has."""

    def __init__(self, machine: Machine) -> None:
        self._machine = machine
        recorded = machine.scenario.driver.symbols
        for name in exported(machine.driver) if recorded is None else recorded:
            setattr(self, name, _bind(machine, IMPLEMENTED.get(name) or unimplemented(name)))

    @property
    def machine(self) -> Machine:
        return self._machine
