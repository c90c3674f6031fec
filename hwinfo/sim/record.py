"""`hwinfo sim record`: this machine's NVML state as a scenario, to attach to a bug report.

The GPU collector reads the machine (the real library, or a simulated one) as it does for
every report; this module writes what it read in the scenario format, in the units
scenarios use. The scenario is marked `imported` (kind "record"), so nothing the snapshot
lacks is filled from the board catalogue: a fact NVML did not give stays absent, and
replaying the scenario gives the same report. The driver's exported functions are
recorded too, so the replay offers exactly the calls the real library did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwinfo.cpulist import format_cpulist
from hwinfo.model.gpu import Activity, Clocks, Gpu, GpuProcess, GpuSystem, Mig, MigDevice
from hwinfo.sim.importer import board_of
from hwinfo.sim.importer_capture import MigPlacement
from hwinfo.sim.importer_mig import gpu_instances_of

MIB = 1 << 20
# GpuSystem.status -> the scenario keys that make nvmlInit fail the same way.
_STATUS = {
    "no_library": {"library": "missing"},
    "no_driver": {"init_error": "DriverNotLoaded"},
    "driver_mismatch": {"init_error": "LibRmVersionMismatch"},
    "no_permission": {"init_error": "NoPermission"},
    "error": {"init_error": "Unknown"},
}


def _mib(n: int | None) -> int | None:
    return None if n is None else round(n / MIB)


def _percent(ratio: float | None) -> int | None:
    return None if ratio is None else round(ratio * 100)


def _number(value: float | None) -> int | None:
    return None if value is None else round(value)


def _mhz(clocks: Clocks | None) -> dict[str, int] | None:
    if clocks is None:
        return None
    values = {
        "graphics": clocks.graphics_hertz, "sm": clocks.sm_hertz,
        "memory": clocks.memory_hertz, "video": clocks.video_hertz,
    }
    return {key: round(hz / 1e6) for key, hz in values.items() if hz is not None} or None


def _bus_width(gpu: Gpu) -> int | None:
    """The memory bus width, which the snapshot keeps only inside the peak bandwidth
    (bus width / 8 x max memory clock x 2, see collect/gpu/peak.py)."""
    peak, clocks = gpu.peak, gpu.max_clocks
    if peak is None or peak.memory_bandwidth_bytes_per_second is None or clocks is None \
            or not clocks.memory_hertz:
        return None
    return round(peak.memory_bandwidth_bytes_per_second * 8 / (2 * clocks.memory_hertz))


def _gpm(activity: Activity | None) -> dict[str, float] | None:
    if activity is None:
        return None
    values = {
        "graphics_active_percent": activity.graphics_active_ratio,
        "sm_active_percent": activity.sm_active_ratio,
        "sm_occupancy_percent": activity.sm_occupancy_ratio,
        "tensor_active_percent": activity.tensor_active_ratio,
        "dram_bandwidth_percent": activity.dram_bandwidth_ratio,
    }
    return {key: round(r * 100, 3) for key, r in values.items() if r is not None}


def _cuda(version: str | None) -> int | None:
    """"12.4" -> 12040, as nvmlSystemGetCudaDriverVersion gives it."""
    if version is None:
        return None
    major, _, minor = version.partition(".")
    return int(major) * 1000 + int(minor or 0) * 10


def _wiring(gpu: Gpu) -> list[dict[str, Any]] | None:
    """The far ends of the GPU's enabled links, in link order, as runs of one target; None
    where NVML named none (a replay then answers NotSupported for them, as it did)."""
    wires: list[dict[str, Any]] = []
    for link in gpu.nvlinks or ():
        if link.remote_pci_bus_id is None:
            break  # a scenario wires its first links only
        if wires and wires[-1]["to"] == link.remote_pci_bus_id:
            wires[-1]["links"] += 1
        else:
            wires.append({"to": link.remote_pci_bus_id, "links": 1})
    return wires or None


def _nvswitches(system: GpuSystem) -> list[str]:
    """The NVSwitches the GPUs' links reach, for the scenario's topology.nvswitches."""
    return sorted({link.remote_pci_bus_id for gpu in system.gpus for link in gpu.nvlinks or ()
                   if link.remote_type == "switch" and link.remote_pci_bus_id is not None})


def _present(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None}


# Scenario key -> how to read it from a Gpu; None values are left out (not supported).
_FIELDS: dict[str, Callable[[Gpu], Any]] = {
    "name": lambda g: g.name,
    "uuid": lambda g: g.uuid,
    "serial": lambda g: g.serial,
    "vbios_version": lambda g: g.vbios_version,
    "board_part_number": lambda g: g.board_part_number,
    "pci_bus_id": lambda g: g.pci_bus_id,
    "pci_device_id": lambda g: None if g.pci_device_id is None else f"0x{g.pci_device_id:08X}",
    "architecture": lambda g: g.architecture,
    "cuda_compute_capability": lambda g: (
        None if g.cuda_compute_capability is None
        else [int(part) for part in g.cuda_compute_capability.split(".")]
    ),
    "cuda_cores": lambda g: g.cuda_cores,
    "memory_bus_width_bits": lambda g: _bus_width(g),
    "persistence_mode": lambda g: g.persistence_mode,
    "compute_mode": lambda g: g.compute_mode,
    "memory_total_mib": lambda g: _mib(g.memory_total_bytes),
    "memory_reserved_mib": lambda g: _mib(g.memory_reserved_bytes),
    "memory_used_mib": lambda g: _mib(g.memory_used_bytes),
    "memory_free_mib": lambda g: _mib(g.memory_free_bytes),
    "bar1_total_mib": lambda g: _mib(g.bar1_total_bytes),
    "bar1_used_mib": lambda g: _mib(g.bar1_used_bytes),
    "utilization_gpu_percent": lambda g: _percent(g.utilization_gpu_ratio),
    "utilization_memory_percent": lambda g: _percent(g.utilization_memory_ratio),
    "encoder_percent": lambda g: _percent(g.utilization_encoder_ratio),
    "decoder_percent": lambda g: _percent(g.utilization_decoder_ratio),
    "temperature_c": lambda g: _number(g.temperature_celsius),
    "temperature_slowdown_c": lambda g: _number(g.temperature_slowdown_celsius),
    "temperature_shutdown_c": lambda g: _number(g.temperature_shutdown_celsius),
    "fan_percent": lambda g: _percent(g.fan_speed_ratio),
    "power_draw_w": lambda g: g.power_draw_watts,
    "power_limit_w": lambda g: g.power_limit_watts,
    "power_default_limit_w": lambda g: g.power_default_limit_watts,
    "power_min_limit_w": lambda g: g.power_min_limit_watts,
    "power_max_limit_w": lambda g: g.power_max_limit_watts,
    "energy_j": lambda g: g.energy_joules,
    "clocks_mhz": lambda g: _mhz(g.clocks),
    "max_clocks_mhz": lambda g: _mhz(g.max_clocks),
    "pstate": lambda g: g.performance_state,
    "pcie": lambda g: None if g.pcie is None else _present({
        "gen": g.pcie.generation, "max_gen": g.pcie.max_generation,
        "gpu_max_gen": g.pcie.gpu_max_generation, "width": g.pcie.width,
        "max_width": g.pcie.max_width,
        # NVML's throughput is in KB/s of 1024 bytes (nvml.h); the collector multiplied.
        "tx_kbps": _number(None if g.pcie.tx_bytes_per_second is None
                           else g.pcie.tx_bytes_per_second / 1024),
        "rx_kbps": _number(None if g.pcie.rx_bytes_per_second is None
                           else g.pcie.rx_bytes_per_second / 1024),
        "replay_counter": g.pcie.replay_errors,
    }),
    "clock_event_reasons": lambda g: g.clock_event_reasons,
    "ecc": lambda g: None if g.ecc is None else _present({
        "enabled": g.ecc.enabled, "pending": g.ecc.pending_enabled,
        "volatile": {"corrected": g.ecc.volatile_corrected,
                     "uncorrected": g.ecc.volatile_uncorrected},
        "aggregate": {"corrected": g.ecc.aggregate_corrected,
                      "uncorrected": g.ecc.aggregate_uncorrected},
    }),
    "retired_pages": lambda g: None if g.retired_pages is None else _present({
        "single_bit": g.retired_pages.single_bit, "double_bit": g.retired_pages.double_bit,
        "pending": g.retired_pages.pending,
    }),
    "remapped_rows": lambda g: None if g.remapped_rows is None else {
        "correctable": g.remapped_rows.correctable,
        "uncorrectable": g.remapped_rows.uncorrectable,
        "pending": g.remapped_rows.pending, "failure": g.remapped_rows.failure,
    },
    "nvlink_links": lambda g: g.nvlink_links_active,
    "numa_node": lambda g: g.numa_node,
    "cpu_affinity": lambda g: None if not g.cpu_affinity else format_cpulist(g.cpu_affinity),
    "numa_affinity": lambda g: None if not g.numa_affinity else format_cpulist(g.numa_affinity),
    "nvlink_remote": lambda g: _wiring(g),
    "addressing_mode": lambda g: g.addressing_mode,
    # Only the current model is in the report; the replay's pending one equals it.
    "driver_model": lambda g: None if g.driver_model is None else {"current": g.driver_model},
    "gpm": lambda g: _gpm(g.activity),
}


def _process(proc: GpuProcess, device: MigDevice | None) -> dict[str, Any]:
    return _present({
        "pid": proc.pid,
        "used_memory_mib": _mib(proc.used_memory_bytes),
        "type": proc.type,
        "gpu_instance_id": None if device is None else device.gpu_instance_id,
        "compute_instance_id": None if device is None else device.compute_instance_id,
        "user": proc.user,
        # A full command line only when the recording was asked for one (it can hold secrets).
        "command": proc.command,
        "name": None if proc.command else proc.name,
        "visible": None if proc.visible else False,
        "sm_percent": _percent(proc.sm_utilization_ratio),
        "memory_percent": _percent(proc.memory_utilization_ratio),
    })


def _gi_profile(profile: str | None) -> str | None:
    """A MIG device's GPU-instance profile: "1c.3g.40gb" -> "3g.40gb"."""
    if not profile:
        return None
    head, _, rest = profile.partition(".")
    return rest if head.endswith("c") and rest else profile


def _mig(gpu: Gpu, mig: Mig, guesses: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = {"enabled": mig.enabled}
    if mig.pending_enabled is not None and mig.pending_enabled != mig.enabled:
        data["pending"] = mig.pending_enabled
    if not mig.enabled:
        return data
    devices = [
        _present({
            "index": d.index, "gpu_instance_id": d.gpu_instance_id,
            "compute_instance_id": d.compute_instance_id, "sm_count": d.multiprocessor_count,
            "memory_total_mib": _mib(d.memory_total_bytes),
            "memory_used_mib": _mib(d.memory_used_bytes),
            "name": _gi_profile(d.profile),
            "uuid": d.uuid,
        })
        for d in mig.devices
    ]
    # Placements need privileges to list; without them the scenario's loader picks ones
    # that fit, and the scenario says so in imported.guessed.
    placements = {
        gi.id: MigPlacement(gi.profile or "", gi.profile_id, gi.placement_start, gi.placement_size)
        for gi in mig.gpu_instances or []
    }
    where = f"gpu {gpu.index}"
    data["gpu_instances"] = gpu_instances_of(
        board_of(gpu.name or ""), devices, placements, _mib(gpu.memory_total_bytes) or 0,
        where, guesses,
    )
    activity = {d.gpu_instance_id: d.activity for d in mig.devices if d.activity is not None}
    for instance in data["gpu_instances"]:
        if (gpm := _gpm(activity.get(instance["id"]))) is not None:
            instance["gpm"] = gpm
    return data


def _gpu(gpu: Gpu, guesses: list[str]) -> dict[str, Any]:
    data = _present({key: read(gpu) for key, read in _FIELDS.items()})
    board = board_of(gpu.name or "")
    if board is not None:
        data = {"board": board.key, **data}  # for its MIG table only: the scenario is imported
    if "memory_total_mib" not in data and "memory" not in gpu.unavailable:
        data["memory_total_mib"] = None  # not supported: a GPU sharing the CPU's memory
    elif "memory_total_mib" not in data:
        # NVML refused it (an unprivileged MIG parent), and a scenario needs one; the replay
        # refuses it the same way, so this figure is never shown.
        devices = [] if gpu.mig is None else gpu.mig.devices
        total = board.defaults.get("memory_total_mib") if board is not None else None
        data["memory_total_mib"] = total or sum(
            _mib(d.memory_total_bytes) or 0 for d in {d.gpu_instance_id: d for d in devices}.values())
        guesses.append(f"gpu {gpu.index}: memory_total_mib (NVML refused it)")
    if gpu.lost:
        data["lost"] = True
    if gpu.accounting is not None and gpu.accounting.enabled:
        # The mode and buffer size; the statistics of ended processes stay on the machine.
        data["accounting"] = _present({"enabled": True, "buffer_size": gpu.accounting.buffer_size})
    if gpu.mig is not None:
        data["mig"] = _mig(gpu, gpu.mig, guesses)
    devices = [] if gpu.mig is None else gpu.mig.devices
    data["processes"] = [_process(p, None) for p in gpu.processes or ()] + [
        _process(p, d) for d in devices for p in d.processes or ()
    ]
    return data


def scenario_of(system: GpuSystem, symbols: list[str] | None, source: str) -> dict[str, Any]:
    """The scenario that replays this GpuSystem (and these exported functions)."""
    guesses: list[str] = []
    driver = _present({
        "version": system.driver_version,
        "cuda_version": _cuda(system.cuda_driver_version),
        "nvml_version": system.nvml_version,
        "symbols": sorted(symbols) if symbols else None,
    })
    scenario: dict[str, Any] = {
        "format": 1,
        "description": f"Recorded by hwinfo sim record from {source}",
        "driver": driver,
        **_STATUS.get(system.status, {}),
        # Unprivileged recordings list no GPU instances; the replay refuses them the same way.
        "privileged": all(
            g.mig is None or not g.mig.enabled or g.mig.gpu_instances is not None
            for g in system.gpus
        ),
        "gpus": [_gpu(gpu, guesses) for gpu in system.gpus],
    }
    if switches := _nvswitches(system):
        scenario["topology"] = {"nvswitches": switches}
    imported: dict[str, Any] = {"source": source, "kind": "record"}
    if guesses:
        imported["guessed"] = guesses
    return {**scenario, "imported": imported}
