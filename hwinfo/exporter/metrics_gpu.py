"""GPU metrics: one series per GPU, labelled with its index and UUID."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hwinfo.exporter.metric import Metric, Sample, each, flag
from hwinfo.model.gpu import CLOCK_EVENT_REASONS, Gpu
from hwinfo.model.snapshot import Snapshot

GPU_LABELS = ("gpu", "uuid")
_CLOCKS = ("graphics", "sm", "memory", "video")
_PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16")


def gpus(s: Snapshot) -> list[Gpu]:
    return s.gpu.gpus if s.gpu is not None else []


def gpu_labels(gpu: Gpu) -> tuple[str, str]:
    return str(gpu.index), gpu.uuid or ""


def per_gpu(
    value: Callable[[Gpu], Any], live_only: bool = True
) -> Callable[[Snapshot], Iterator[Sample]]:
    """A reader of one value per GPU; a lost GPU exports nothing but its lost flag."""

    def read(s: Snapshot) -> Iterator[Sample]:
        return each((g for g in gpus(s) if not (live_only and g.lost)), gpu_labels, value)

    return read


def _nested(gpu: Gpu, path: str) -> Any:
    """gpu.<path>, where a missing object on the way (no ECC, no PCIe info) reads as None."""
    value: Any = gpu
    for part in path.split("."):
        if value is None:
            return None
        value = getattr(value, part)
    return value


def _field(
    name: str,
    path: str,
    help: str,
    type: str = "gauge",
    convert: Callable[[Any], Any] | None = None,
) -> Metric:
    """A per-GPU metric from a Gpu field or a field of one of its parts (pcie.width, ...)."""

    def value(gpu: Gpu) -> Any:
        v = _nested(gpu, path)
        return convert(v) if convert is not None and v is not None else v

    return Metric(name, type, help, GPU_LABELS, f"gpu.gpus[].{path}", per_gpu(value))


# GPM activity (Activity fields), exported for whole GPUs here and per GPU instance in
# metrics_mig.py: field -> what the ratio is of.
ACTIVITY = (
    ("graphics_active_ratio", "Share of time any graphics or compute engine was active (GPM)."),
    ("sm_active_ratio", "Share of SM cycles with at least one warp resident (GPM)."),
    ("sm_occupancy_ratio", "Warps resident against the SMs' maximum (GPM)."),
    ("tensor_active_ratio", "Share of SM cycles the tensor pipes were busy (GPM)."),
    ("dram_bandwidth_ratio", "Device memory bandwidth used against its peak (GPM)."),
)


def _labelled(
    s: Snapshot, keys: Iterable[str], value: Callable[[Gpu, str], Any]
) -> Iterator[Sample]:
    for gpu in gpus(s):
        if gpu.lost:
            continue
        for key in keys:
            v = value(gpu, key)
            if v is not None:
                yield (*gpu_labels(gpu), key), float(v)


def _info(s: Snapshot) -> Iterator[Sample]:
    system = s.gpu
    for gpu in gpus(s):
        yield (
            (
                *gpu_labels(gpu),
                gpu.name or "",
                gpu.serial or "",
                gpu.vbios_version or "",
                gpu.board_part_number or "",
                gpu.pci_bus_id or "",
                gpu.architecture or "",
                gpu.cuda_compute_capability or "",
                system.driver_version or "",
                system.cuda_driver_version or "",
            ),
            1.0,
        )


def _clock(gpu: Gpu, which: str, key: str) -> Any:
    clocks = getattr(gpu, which)
    return None if clocks is None else getattr(clocks, f"{key}_hertz")


def _reasons(gpu: Gpu, reason: str) -> float | None:
    if gpu.clock_event_reasons is None:
        return None
    return float(reason in gpu.clock_event_reasons)


def _ecc(gpu: Gpu, key: str) -> Any:
    return None if gpu.ecc is None else getattr(gpu.ecc, key)


def _peak(gpu: Gpu, precision: str) -> Any:
    if gpu.peak is None:
        return None
    return gpu.peak.int8_ops if precision == "int8" else getattr(gpu.peak, f"{precision}_flops")


_ECC_COUNTERS = {
    (kind, counter): f"{counter}_{kind}"
    for kind in ("corrected", "uncorrected")
    for counter in ("volatile", "aggregate")
}


def _xid_errors(s: Snapshot) -> Iterator[Sample]:
    for gpu in gpus(s):  # lost GPUs too: XID 79 is how a GPU falls off the bus
        for errors in gpu.xid_errors:
            yield (*gpu_labels(gpu), str(errors.xid)), float(errors.count)


def _last_xid(gpu: Gpu) -> Any:
    return max(gpu.xid_errors, key=lambda e: e.last_timestamp_seconds, default=None)


def _ecc_errors(s: Snapshot) -> Iterator[Sample]:
    for gpu in gpus(s):
        if gpu.lost or gpu.ecc is None:
            continue
        for (kind, counter), field in _ECC_COUNTERS.items():
            v = getattr(gpu.ecc, field)
            if v is not None:
                yield (*gpu_labels(gpu), kind, counter), float(v)


METRICS: tuple[Metric, ...] = (
    Metric(
        "gpus",
        "gauge",
        "GPUs the NVIDIA driver reports (lost ones included).",
        (),
        "gpu.gpus",
        lambda s: [((), float(len(s.gpu.gpus)))] if s.gpu and s.gpu.status == "ok" else [],
    ),
    Metric(
        "gpu_info",
        "info",
        "A GPU's identity, driver and CUDA version.",
        (
            *GPU_LABELS,
            "name",
            "serial",
            "vbios_version",
            "board_part_number",
            "pci_bus_id",
            "architecture",
            "cuda_compute_capability",
            "driver_version",
            "cuda_driver_version",
        ),
        "gpu.gpus[].name, .serial, ...; gpu.driver_version",
        _info,
    ),
    Metric(
        "gpu_lost",
        "gauge",
        "1 when NVML says the GPU fell off the bus (GpuIsLost) or cannot be read at all.",
        GPU_LABELS,
        "gpu.gpus[].lost",
        per_gpu(lambda g: float(g.lost or "gpu" in g.unavailable), live_only=False),
    ),
    _field("gpu_cuda_cores", "cuda_cores", "CUDA cores."),
    _field(
        "gpu_persistence_mode", "persistence_mode", "1 when persistence mode is on.", convert=float
    ),
    _field(
        "gpu_accounting_enabled", "accounting.enabled",
        "1 when NVML per-process accounting is on (absent: not available).", convert=float,
    ),
    _field(
        "gpu_accounting_buffer_processes", "accounting.buffer_size",
        "Processes the driver's accounting ring buffer keeps statistics of.",
    ),
    _field("gpu_memory_total_bytes", "memory_total_bytes", "Framebuffer memory."),
    _field(
        "gpu_memory_used_bytes",
        "memory_used_bytes",
        "Framebuffer memory in use (without memory the driver reserves).",
    ),
    _field("gpu_memory_free_bytes", "memory_free_bytes", "Free framebuffer memory."),
    _field(
        "gpu_memory_reserved_bytes",
        "memory_reserved_bytes",
        "Framebuffer memory the driver reserves (drivers 510 and later).",
    ),
    _field("gpu_bar1_total_bytes", "bar1_total_bytes", "BAR1 aperture."),
    _field("gpu_bar1_used_bytes", "bar1_used_bytes", "BAR1 aperture in use."),
    _field(
        "gpu_utilization_ratio",
        "utilization_gpu_ratio",
        "Share of time a kernel ran (not in MIG mode: NVML has none there).",
    ),
    *(_field(f"gpu_{name}", f"activity.{name}", help) for name, help in ACTIVITY),
    _field(
        "gpu_memory_utilization_ratio",
        "utilization_memory_ratio",
        "Share of time device memory was read or written.",
    ),
    _field("gpu_encoder_utilization_ratio", "utilization_encoder_ratio", "Video encoder use."),
    _field("gpu_decoder_utilization_ratio", "utilization_decoder_ratio", "Video decoder use."),
    _field("gpu_temperature_celsius", "temperature_celsius", "GPU core temperature."),
    _field(
        "gpu_temperature_slowdown_celsius",
        "temperature_slowdown_celsius",
        "Temperature at which the GPU slows down.",
    ),
    _field(
        "gpu_temperature_shutdown_celsius",
        "temperature_shutdown_celsius",
        "Temperature at which the GPU shuts down.",
    ),
    _field("gpu_fan_speed_ratio", "fan_speed_ratio", "Fan speed as a share of its maximum."),
    _field("gpu_power_draw_watts", "power_draw_watts", "Power draw."),
    _field("gpu_power_limit_watts", "power_limit_watts", "Enforced power limit."),
    _field("gpu_power_default_limit_watts", "power_default_limit_watts", "Default power limit."),
    _field("gpu_power_min_limit_watts", "power_min_limit_watts", "Lowest settable power limit."),
    _field("gpu_power_max_limit_watts", "power_max_limit_watts", "Highest settable power limit."),
    _field(
        "gpu_energy_joules_total",
        "energy_joules",
        "Energy used since the driver loaded.",
        type="counter",
    ),
    Metric(
        "gpu_clock_hertz",
        "gauge",
        "Current clock.",
        (*GPU_LABELS, "clock"),
        "gpu.gpus[].clocks.*_hertz",
        lambda s: _labelled(s, _CLOCKS, lambda g, k: _clock(g, "clocks", k)),
    ),
    Metric(
        "gpu_clock_max_hertz",
        "gauge",
        "Highest clock.",
        (*GPU_LABELS, "clock"),
        "gpu.gpus[].max_clocks.*_hertz",
        lambda s: _labelled(s, _CLOCKS, lambda g, k: _clock(g, "max_clocks", k)),
    ),
    _field("gpu_performance_state", "performance_state", "P-state, 0 (fastest) to 15."),
    Metric(
        "gpu_clock_event_active",
        "gauge",
        "1 while a clock event (throttle) reason holds the clocks down; one series per reason.",
        (*GPU_LABELS, "reason"),
        "gpu.gpus[].clock_event_reasons[]",
        lambda s: _labelled(s, CLOCK_EVENT_REASONS.values(), _reasons),
    ),
    _field("gpu_pcie_link_generation", "pcie.generation", "Current PCIe link generation."),
    _field(
        "gpu_pcie_link_max_generation",
        "pcie.max_generation",
        "Highest PCIe link generation the GPU and slot allow.",
    ),
    _field("gpu_pcie_link_width", "pcie.width", "Current PCIe link width (lanes)."),
    _field("gpu_pcie_link_max_width", "pcie.max_width", "Highest PCIe link width."),
    Metric(
        "gpu_pcie_throughput_bytes_per_second",
        "gauge",
        "PCIe traffic over NVML's last 20 ms sample.",
        (*GPU_LABELS, "direction"),
        "gpu.gpus[].pcie.tx/rx_bytes_per_second",
        lambda s: _labelled(s, ("tx", "rx"), lambda g, k: _nested(g, f"pcie.{k}_bytes_per_second")),
    ),
    _field("gpu_pcie_replay_errors_total", "pcie.replay_errors", "PCIe replays.", type="counter"),
    _field("gpu_ecc_enabled", "ecc.enabled", "1 when ECC is on.", convert=float),
    _field(
        "gpu_ecc_pending_enabled",
        "ecc.pending_enabled",
        "ECC mode after the next reset.",
        convert=float,
    ),
    Metric(
        "gpu_ecc_errors_total",
        "counter",
        "ECC errors, volatile (since boot) or aggregate (lifetime).",
        (*GPU_LABELS, "type", "counter"),
        "gpu.gpus[].ecc.*",
        _ecc_errors,
    ),
    _field(
        "gpu_retired_pages_single_bit",
        "retired_pages.single_bit",
        "Pages retired after repeated single-bit errors.",
    ),
    _field(
        "gpu_retired_pages_double_bit",
        "retired_pages.double_bit",
        "Pages retired after a double-bit error.",
    ),
    _field(
        "gpu_retired_pages_pending",
        "retired_pages.pending",
        "1 when a page retirement waits for a reset.",
        convert=float,
    ),
    _field(
        "gpu_remapped_rows_correctable",
        "remapped_rows.correctable",
        "Rows remapped after correctable errors.",
    ),
    _field(
        "gpu_remapped_rows_uncorrectable",
        "remapped_rows.uncorrectable",
        "Rows remapped after uncorrectable errors.",
    ),
    _field(
        "gpu_remapped_rows_pending",
        "remapped_rows.pending",
        "1 when a row remap waits for a reset.",
        convert=float,
    ),
    _field(
        "gpu_remapped_rows_failure",
        "remapped_rows.failure",
        "1 when a row remap failed (the GPU needs service).",
        convert=float,
    ),
    Metric("gpu_xid_errors_total", "counter", "Critical XID events NVML reported since hwinfo "
           "started, by code.", (*GPU_LABELS, "xid"), "gpu.gpus[].xid_errors[].count",
           _xid_errors),
    Metric("gpu_last_xid", "gauge", "Code of the most recent critical XID event.", GPU_LABELS,
           "gpu.gpus[].xid_errors[].xid",
           per_gpu(lambda g: getattr(_last_xid(g), "xid", None), live_only=False)),
    Metric("gpu_last_xid_timestamp_seconds", "gauge", "When the most recent critical XID event "
           "came, as Unix time.", GPU_LABELS, "gpu.gpus[].xid_errors[].last_timestamp_seconds",
           per_gpu(lambda g: getattr(_last_xid(g), "last_timestamp_seconds", None),
                   live_only=False)),
    _field("gpu_nvlink_links_active", "nvlink_links_active", "NVLink links up."),
    _field("gpu_numa_node", "numa_node", "The GPU's own NUMA node, where its memory is one "
           "(Grace boards; absent on x86, where NVML has none)."),
    Metric(
        "gpu_peak_flops",
        "gauge",
        "Theoretical dense peak at the rated clock (int8 in operations per second).",
        (*GPU_LABELS, "precision"),
        "gpu.gpus[].peak.*",
        lambda s: _labelled(s, (*_PRECISIONS, "int8"), _peak),
    ),
    _field(
        "gpu_peak_memory_bandwidth_bytes_per_second",
        "peak.memory_bandwidth_bytes_per_second",
        "Theoretical memory bandwidth.",
    ),
    _field(
        "gpu_mig_enabled", "mig.enabled", "1 when MIG mode is on (absent: no MIG).", convert=float
    ),
    Metric(
        "gpu_mig_mode_change_pending",
        "gauge",
        "1 when a MIG mode change waits for a GPU reset.",
        GPU_LABELS,
        "gpu.gpus[].mig.pending_enabled",
        per_gpu(lambda g: None if g.mig is None else flag(g.mig.change_pending)),
    ),
    Metric(
        "gpu_processes",
        "gauge",
        "Processes holding memory on the GPU (and its MIG devices).",
        GPU_LABELS,
        "gpu.gpus[].process_count",
        per_gpu(lambda g: g.process_count),
    ),
)
