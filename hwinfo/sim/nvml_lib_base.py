"""Shared pieces of the fake libnvidia-ml: return codes, symbol records, ctypes helpers and the
generic implementations of calls that differ only by the field they answer.

Conventions follow the C ABI as pynvml drives it (pynvml.py is the ground truth): outputs
arrive as `byref(x)` (fill `ref._obj`), string buffers from create_string_buffer (set
`.value`), arrays passed directly; handles are opaque pointer values, written into the
caller's `c_nvmlDevice_t` and read back from the handles it passes in.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hwinfo.sim.devices import Device, GpuDevice, MigDevice
from hwinfo.sim.machine import Machine

# nvmlReturn_t (nvml.h).
SUCCESS = 0
UNINITIALIZED = 1
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
TIMEOUT = 10
LIBRARY_NOT_FOUND = 12
GPU_IS_LOST = 15
ARGUMENT_VERSION_MISMATCH = 25

# A reply is (return code, payload); the payload's shape depends on the call.
Reply = tuple[int, object]
UNSUPPORTED: Reply = (NOT_SUPPORTED, None)
NO_PERMISSION_REPLY: Reply = (NO_PERMISSION, None)

Impl = Callable[..., int]
# Builds part of a device's answer table: symbol -> reply.
AnswerBuilder = Callable[[Machine, Device], dict[str, Reply]]
ANSWER_BUILDERS: list[AnswerBuilder] = []


@dataclass(frozen=True)
class Symbol:
    """One C function of the fake library."""

    name: str
    # What the first argument is: "device", "gpu_instance", "compute_instance", "event_set"
    # (a handle), "lookup" (finds a device; the last argument receives its handle),
    # "system" (no handle) or "raw" (the implementation does every check itself).
    target: str
    impl: Impl


def ok(value: object) -> Reply:
    return SUCCESS, value


def opt(value: object) -> Reply:
    """The value, or NotSupported when the scenario has none."""
    return UNSUPPORTED if value is None else (SUCCESS, value)


def answers(machine: Machine, dev: Device) -> dict[str, Reply]:
    """The device's answer table, built on first use after each change of the machine."""
    table = dev.answers
    if table is None:
        gpu = dev.gpu
        generation = gpu.generation
        table = {}
        for build in ANSWER_BUILDERS:
            table.update(build(machine, dev))
        # Keep it only if the GPU did not change meanwhile; the second check catches a change
        # that lands between the first check and the store (its writer then clears it too).
        if gpu.generation == generation:
            dev.answers = table
            if gpu.generation != generation:
                dev.answers = None
    return table  # type: ignore[return-value]


def as_int(value: object) -> int:
    """A C integer argument, passed either as a Python int or as a ctypes scalar.

    Anything else ctypes cannot pass to C, and says so before the call: nvidia-ml-py's
    NVML_P2P_CAPS_INDEX_READ is `0,` (a tuple), which fails so on a real library too.
    """
    if value.__class__ is int:
        return value  # type: ignore[return-value]
    if not isinstance(value, ctypes._SimpleCData):
        raise ctypes.ArgumentError(f"Don't know how to convert parameter {value!r}")
    return value.value  # type: ignore[no-any-return]


def address(buffer: object) -> int:
    """Address of an array or pointer argument (None for NULL)."""
    if isinstance(buffer, ctypes._Pointer):
        return ctypes.cast(buffer, ctypes.c_void_p).value or 0
    if hasattr(buffer, "_obj"):  # byref(array)
        buffer = buffer._obj  # type: ignore[attr-defined]
    return ctypes.addressof(buffer)  # type: ignore[arg-type]


_VOID_P = ctypes.c_void_p.from_buffer


def handle_value(handle: object) -> int:
    """The opaque value of a handle argument (a ctypes pointer); 0 for NULL or a non-handle."""
    try:
        return ctypes.addressof(handle.contents)  # type: ignore[attr-defined]
    except (ValueError, AttributeError, TypeError):
        return 0


def write_handle(ref: object, handle: int) -> None:
    """Store an opaque handle value through a `byref(c_nvmlDevice_t())`-style argument."""
    _VOID_P(ref._obj).value = handle  # type: ignore[attr-defined]


def write_handles(buffer: object, handles: list[int]) -> None:
    """Store handle values into a caller-allocated array of handles."""
    base = address(buffer)
    array = (ctypes.c_void_p * len(handles)).from_address(base)
    for i, handle in enumerate(handles):
        array[i] = handle


def fill_bits(size: object, buffer: object, members: Iterable[int]) -> int:
    """Fill a caller's array of `size` unsigned longs as a bit mask (a CPU or NUMA node set);
    members past its end are left out, as NVML fills what the caller made room for."""
    words = (ctypes.c_ulong * as_int(size)).from_address(address(buffer))
    width = ctypes.sizeof(ctypes.c_ulong) * 8
    for i in range(len(words)):
        words[i] = 0
    for member in members:
        if member // width < len(words):
            words[member // width] |= 1 << (member % width)
    return SUCCESS


# ---------------------------------------------------------------------------------------------
# Generic implementations: `factory(symbol)` returns an impl that answers from the device's
# answer table entry for that symbol.


def scalar(sym: str) -> Impl:
    """fn(handle, byref(x)): one number."""

    def impl(machine: Machine, dev: Device, ref: object) -> int:
        rc, value = (dev.answers or answers(machine, dev))[sym]
        if rc:
            return rc
        ref._obj.value = value  # type: ignore[attr-defined]
        return SUCCESS

    return impl


def multi(sym: str) -> Impl:
    """fn(handle, byref(a), byref(b), ...): several numbers."""

    def impl(machine: Machine, dev: Device, *refs: object) -> int:
        rc, values = (dev.answers or answers(machine, dev))[sym]
        if rc:
            return rc
        for ref, value in zip(refs, values):  # type: ignore[call-overload]
            ref._obj.value = value  # type: ignore[attr-defined]
        return SUCCESS

    return impl


def indexed(sym: str) -> Impl:
    """fn(handle, key..., byref(x)): a number chosen by enum arguments (clock type, sensor)."""

    def impl(machine: Machine, dev: Device, *args: object) -> int:
        rc, table = (dev.answers or answers(machine, dev))[sym]
        if rc:
            return rc
        *keys, ref = args
        key = as_int(keys[0]) if len(keys) == 1 else tuple(as_int(k) for k in keys)
        rc, value = table.get(key, (INVALID_ARGUMENT, None))  # type: ignore[attr-defined]
        if rc:
            return rc
        ref._obj.value = value  # type: ignore[attr-defined]
        return SUCCESS

    return impl


def string(sym: str) -> Impl:
    """fn(handle, char *buf, unsigned int length): a NUL-terminated string."""

    def impl(machine: Machine, dev: Device, buf: object, length: object) -> int:
        rc, value = (dev.answers or answers(machine, dev))[sym]
        if rc:
            return rc
        return put_string(buf, length, value)  # type: ignore[arg-type]

    return impl


def put_string(buf: object, length: object, value: bytes) -> int:
    if len(value) + 1 > as_int(length):
        return INSUFFICIENT_SIZE
    buf.value = value  # type: ignore[attr-defined]
    return SUCCESS


def struct(sym: str, version: int | None = None) -> Impl:
    """fn(handle, byref(struct)): fields set from (name, value) pairs.

    With `version`, the caller must have set struct.version to it (nvml.h versioned structs),
    else NVML_ERROR_ARGUMENT_VERSION_MISMATCH.
    """

    def impl(machine: Machine, dev: Device, ref: object) -> int:
        rc, fields = (dev.answers or answers(machine, dev))[sym]
        if rc:
            return rc
        obj = ref._obj  # type: ignore[attr-defined]
        if version is not None and obj.version != version:
            return ARGUMENT_VERSION_MISMATCH
        for name, value in fields:  # type: ignore[attr-defined]
            setattr(obj, name, value)
        return SUCCESS

    return impl


# ---------------------------------------------------------------------------------------------
# Table rows: calls answered from precomputed per-device replies.


@dataclass(frozen=True)
class Field:
    """One device call: how it is shaped, and its reply on a GPU and on a MIG device."""

    symbol: str
    kind: Callable[[str], Impl]  # scalar, multi, indexed, string, struct
    physical: Callable[[Machine, GpuDevice], Reply]
    mig: Callable[[Machine, MigDevice], Reply] | None = None  # None: NotSupported on MIG devices


def field_symbols(fields: tuple[Field, ...]) -> tuple[Symbol, ...]:
    """Register the rows' replies with the answer tables; return their symbols."""

    def build(machine: Machine, dev: Device) -> dict[str, Reply]:
        if isinstance(dev, MigDevice):
            return {f.symbol: f.mig(machine, dev) if f.mig else UNSUPPORTED for f in fields}
        return {f.symbol: f.physical(machine, dev) for f in fields}  # type: ignore[arg-type]

    ANSWER_BUILDERS.append(build)
    return tuple(Symbol(f.symbol, "device", f.kind(f.symbol)) for f in fields)
