"""Health rules of the NVIDIA driver and of each GPU: one function per rule, named as findings name it.

A rule reads only the model and yields a Problem for each thing wrong; a field NVML did not
give (None) is never a finding here: what cannot be read is reported once, by the rules
about the GPU or the driver being unreadable.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from hwinfo.health.findings import Problem, Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.gpu import Gpu, GpuSystem
from hwinfo.units import percent, size

MIB = 1 << 20

# GpuSystem.status values under which the GPU list is complete: no driver means no GPUs.
_LISTED = ("ok", "no_library", "no_driver")


def lists_gpus(system: GpuSystem) -> bool:
    """Whether `system.gpus` is every GPU there is (not a driver that cannot tell)."""
    return system.status in _LISTED


# The driver and the set of GPUs (subject "gpus").


def driver_mismatch(system: GpuSystem, limits: Thresholds) -> Iterator[Problem]:
    """The kernel driver and the NVML library differ: nothing can use the GPUs until a reboot."""
    if system.status == "driver_mismatch":
        yield Problem(Severity.CRITICAL, system.message or "NVIDIA driver and library versions differ",
                      {"status": system.status})


def nvml_unavailable(system: GpuSystem, limits: Thresholds) -> Iterator[Problem]:
    """NVML answers, but not enough to judge the GPUs (no permission, an error)."""
    if system.status in (*_LISTED, "driver_mismatch"):
        return
    yield Problem(Severity.UNKNOWN, system.message or f"NVML status {system.status}",
                  {"status": system.status})


def gpu_count(system: GpuSystem, limits: Thresholds) -> Iterator[Problem]:
    """Fewer GPUs than the machine should have (--expect-gpus, or expect_gpus in the config)."""
    expected = limits.expect_gpus
    if expected is None or not lists_gpus(system) or len(system.gpus) >= expected:
        return
    found = f"{len(system.gpus)} of {expected} expected GPUs present"
    yield Problem(Severity.CRITICAL, f"{found}: {system.message}" if system.message else found,
                  {"gpus": len(system.gpus), "expected": expected, "status": system.status})


SYSTEM_RULES = (driver_mismatch, nvml_unavailable, gpu_count)


# One GPU (subject "gpu N").


def gpu_lost(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    if gpu.lost:
        yield Problem(Severity.CRITICAL, "NVML reports the GPU fell off the bus (GpuIsLost)",
                      {"lost": True})


def gpu_unreadable(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    """NVML gives no handle for a GPU that is not lost (no permission on its device node)."""
    reason = gpu.unavailable.get("gpu")
    if reason and not gpu.lost:
        yield Problem(Severity.UNKNOWN, f"NVML cannot read the GPU: {reason}", {"reason": reason})


def xid_errors(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    """XID events a listening `hwinfo serve` heard (a one-shot check does not listen)."""
    for event in gpu.xid_errors:
        if event.xid in limits.xid_ignore:
            continue
        severity = Severity.CRITICAL if event.xid in limits.xid_critical else Severity.WARNING
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(event.last_timestamp_seconds))
        times = "once" if event.count == 1 else f"{event.count} times"
        yield Problem(severity, f"XID {event.xid} {times}, last at {when}", {
            "xid": event.xid,
            "count": event.count,
            "last_timestamp_seconds": event.last_timestamp_seconds,
            "gpu_instance_id": event.gpu_instance_id,
            "compute_instance_id": event.compute_instance_id,
        })


def ecc_uncorrected(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    """Uncorrectable ECC errors since the driver loaded (the lifetime count alone is history)."""
    ecc = gpu.ecc
    if ecc is None or not ecc.volatile_uncorrected:
        return
    yield Problem(
        Severity.CRITICAL,
        f"{ecc.volatile_uncorrected} uncorrectable ECC error(s) since the driver loaded",
        {"volatile_uncorrected": ecc.volatile_uncorrected,
         "aggregate_uncorrected": ecc.aggregate_uncorrected},
    )


def row_remap_failed(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    rows = gpu.remapped_rows
    if rows is not None and rows.failure:
        yield Problem(Severity.CRITICAL, "a row remap failed: the GPU needs service",
                      {"correctable": rows.correctable, "uncorrectable": rows.uncorrectable})


def row_remap_pending(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    rows = gpu.remapped_rows
    if rows is not None and rows.pending:
        yield Problem(Severity.WARNING, "a row remap waits for a GPU reset",
                      {"correctable": rows.correctable, "uncorrectable": rows.uncorrectable})


def retired_pages_pending(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    pages = gpu.retired_pages
    if pages is not None and pages.pending:
        yield Problem(Severity.WARNING, "a page retirement waits for a GPU reset",
                      {"single_bit": pages.single_bit, "double_bit": pages.double_bit})


def _held_down(gpu: Gpu, reasons: frozenset[str], cause: str) -> Iterator[Problem]:
    active = [r for r in gpu.clock_event_reasons or () if r in reasons]
    if active:
        yield Problem(Severity.WARNING, f"clocks held down by {cause}: {', '.join(active)}",
                      {"reasons": active})


def thermal_throttling(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    return _held_down(gpu, frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"}),
                      "temperature")


def power_throttling(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    """The power cap or the board's power brake holds the clocks down.

    At rest the power cap is power management, not a fault: idle boards report sw_power_cap
    while their clocks are low for want of work. The power brake is a fault always.
    """
    reasons = {"hw_power_brake_slowdown"} if gpu.at_rest() else {"sw_power_cap", "hw_power_brake_slowdown"}
    return _held_down(gpu, frozenset(reasons), "power")


_SPECIFIC_HW_SLOWDOWN = frozenset({"hw_thermal_slowdown", "hw_power_brake_slowdown"})


def hardware_slowdown(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    """HW slowdown (clocks halved or worse) that NVML does not attribute to heat or power brake.

    Drivers set hw_slowdown beside the specific reason when they know it; the thermal and
    power rules report those, so the umbrella reason alone is what is left to say here.
    """
    reasons = set(gpu.clock_event_reasons or ())
    if "hw_slowdown" in reasons and not reasons & _SPECIFIC_HW_SLOWDOWN:
        yield from _held_down(gpu, frozenset({"hw_slowdown"}), "a hardware slowdown")


def temperature_near_slowdown(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    temp, slowdown = gpu.temperature_celsius, gpu.temperature_slowdown_celsius
    if temp is None or slowdown is None:
        return
    facts = {"temperature_celsius": temp, "temperature_slowdown_celsius": slowdown}
    if temp >= slowdown:
        yield Problem(Severity.CRITICAL,
                      f"{temp:.0f}°C, at or above its slowdown temperature {slowdown:.0f}°C", facts)
    elif temp >= slowdown - limits.temperature_margin_celsius:
        yield Problem(Severity.WARNING,
                      f"{temp:.0f}°C, {slowdown - temp:.0f}°C below its slowdown temperature "
                      f"{slowdown:.0f}°C", facts)


def pcie_link_below_max(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    """The link trained below what the GPU and slot allow: fewer lanes, or a slower generation."""
    link = gpu.pcie
    narrow, slow = gpu.pcie_below_max()
    if link is None or not (narrow or slow):
        return
    below = []
    if narrow:
        below.append(f"x{link.width} of x{link.max_width} lanes")
    if slow:
        below.append(f"gen{link.generation} of gen{link.max_generation}")
    if below:
        yield Problem(Severity.WARNING, f"PCIe link below its maximum: {', '.join(below)}", {
            "generation": link.generation, "max_generation": link.max_generation,
            "width": link.width, "max_width": link.max_width,
        })


def mig_mode_change_pending(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    mig = gpu.mig
    if mig is not None and mig.change_pending:
        to = "enabled" if mig.pending_enabled else "disabled"
        yield Problem(Severity.WARNING, f"MIG mode changes to {to} at the next GPU reset",
                      {"enabled": mig.enabled, "pending_enabled": mig.pending_enabled})


def mig_without_instances(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    mig = gpu.mig
    if mig is not None and mig.enabled and not mig.devices:
        yield Problem(Severity.WARNING, "MIG is enabled but no instances exist: the GPU runs no work",
                      {"enabled": True, "devices": 0})


def idle_gpu_memory(gpu: Gpu, limits: Thresholds) -> Iterator[Problem]:
    """Memory held on a GPU that computes nothing: a job that hangs, or one left behind."""
    busy, used = gpu.utilization_gpu_ratio, gpu.memory_used_bytes
    if busy is None or used is None:  # MIG mode has no utilization
        return
    if busy > limits.idle_gpu_utilization_percent / 100 or used < limits.idle_gpu_memory_mib * MIB:
        return
    processes = gpu.all_processes()
    users = sorted({p.user or "(unknown)" for p in processes})
    held = f"{size(used)} held while the GPU is idle ({percent(busy)} busy)"
    if processes:
        held += f" by {len(processes)} process(es) of {', '.join(users)}"
    yield Problem(Severity.WARNING, held, {
        "memory_used_bytes": used, "utilization_gpu_ratio": busy,
        "processes": len(processes), "users": users,
    })


GPU_RULES = (
    gpu_lost,
    gpu_unreadable,
    xid_errors,
    ecc_uncorrected,
    row_remap_failed,
    row_remap_pending,
    retired_pages_pending,
    thermal_throttling,
    power_throttling,
    hardware_slowdown,
    temperature_near_slowdown,
    pcie_link_below_max,
    mig_mode_change_pending,
    mig_without_instances,
    idle_gpu_memory,
)
