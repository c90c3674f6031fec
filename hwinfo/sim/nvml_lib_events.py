"""Event calls of the fake libnvidia-ml: event sets, registration, and waiting for the XID
events a scenario queues (`xid_events`) or a test injects (Machine.inject_xid).
"""

from __future__ import annotations

import ctypes
import time

from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.devices import Device, EventSet, GpuDevice, MigDevice
from hwinfo.sim.machine import EVENT_XID, NO_INSTANCE, Machine
from hwinfo.sim.nvml_lib_base import (
    INVALID_ARGUMENT,
    NOT_SUPPORTED,
    SUCCESS,
    TIMEOUT,
    Field,
    Reply,
    Symbol,
    ok,
)

# nvmlEventType* bits (nvml.h).
EVENT_SINGLE_BIT_ECC = 0x1
EVENT_DOUBLE_BIT_ECC = 0x2
EVENT_PSTATE = 0x4
EVENT_CLOCK = 0x10
EVENT_MIG_CONFIG_CHANGE = 0x100
# How often a waiting call looks for new events: short, so a wait ends soon after an event is
# queued by another thread, and a caller's timeout stays accurate.
POLL_SECONDS = 0.005


def _supported_events(gpu: GpuDevice) -> Reply:
    """nvmlDeviceGetSupportedEventTypes."""
    # Unknown: the exact mask per board; XID, P-state and clock events everywhere, ECC events
    # where ECC is on, MIG configuration changes on MIG boards.
    mask = EVENT_XID | EVENT_PSTATE | EVENT_CLOCK
    if gpu.spec.ecc is not None and gpu.spec.ecc.enabled:
        mask |= EVENT_SINGLE_BIT_ECC | EVENT_DOUBLE_BIT_ECC
    if gpu.spec.mig is not None:
        mask |= EVENT_MIG_CONFIG_CHANGE
    return ok(mask)


# Unknown: the answer on a MIG device handle; nvml.h only says events are not reported per
# MIG device, so NotSupported.
FIELDS: tuple[Field, ...] = (
    Field("nvmlDeviceGetSupportedEventTypes", base.scalar, lambda m, g: _supported_events(g)),
)


def _create(machine: Machine, ref: object) -> int:
    base.write_handle(ref, machine.new_event_set().handle)
    return SUCCESS


def _register(machine: Machine, dev: Device, event_types: object, event_set: object) -> int:
    """nvmlDeviceRegisterEvents(device, eventTypes, set)."""
    # nvml.h: "does not currently support per-instance event reporting using MIG device handles".
    if isinstance(dev, MigDevice):
        return NOT_SUPPORTED
    assert isinstance(dev, GpuDevice)
    target = machine.event_sets.get(base.handle_value(event_set))
    if target is None:
        return INVALID_ARGUMENT
    mask = base.as_int(event_types)
    rc, supported = base.answers(machine, dev)["nvmlDeviceGetSupportedEventTypes"]
    # nvml.h: NotSupported "if the platform does not support ... some of requested event types";
    # then none of them is registered.
    if rc or mask & ~supported:  # type: ignore[operator]
        return NOT_SUPPORTED
    machine.register_events(target, dev, mask)
    return SUCCESS


def _wait(machine: Machine, event_set: EventSet, ref: object, timeout_ms: object) -> int:
    """nvmlEventSetWait_v2(set, byref(data), timeoutms): the next event, or Timeout.

    Sleeps in short steps without holding any lock, so other threads keep calling and can
    inject events meanwhile; events whose scenario time comes during the wait arrive.
    """
    deadline = time.monotonic() + base.as_int(timeout_ms) / 1000
    queue = event_set.queue
    while True:
        machine.catch_up()  # events due while this call waits
        try:
            gpu, event = queue.popleft()
            break
        except IndexError:
            left = deadline - time.monotonic()
            if left <= 0:
                return TIMEOUT
            time.sleep(min(POLL_SECONDS, left))
    data = ref._obj  # type: ignore[attr-defined]
    ctypes.c_void_p.from_buffer(data, type(data).device.offset).value = gpu.handle
    data.eventType = EVENT_XID
    data.eventData = event.xid
    data.gpuInstanceId = NO_INSTANCE if event.gpu_instance_id is None else event.gpu_instance_id
    data.computeInstanceId = (
        NO_INSTANCE if event.compute_instance_id is None else event.compute_instance_id
    )
    return SUCCESS


def _free(machine: Machine, event_set: EventSet) -> int:
    machine.free_event_set(event_set)
    return SUCCESS


SYMBOLS: tuple[Symbol, ...] = (
    *base.field_symbols(FIELDS),
    Symbol("nvmlEventSetCreate", "system", _create),
    Symbol("nvmlDeviceRegisterEvents", "device", _register),
    Symbol("nvmlEventSetWait_v2", "event_set", _wait),
    Symbol("nvmlEventSetFree", "event_set", _free),
)
