"""One GPU's fields from NVML: static facts read once per board, telemetry read every sample."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwinfo.binding import function, pynvml
from hwinfo.collect.gpu.nvml import Reader
from hwinfo.collect.gpu.peak import peak_throughput
from hwinfo.collect.gpu.topology import enabled_links, members, numa_affinity, read_nvlinks
from hwinfo.model.gpu import CLOCK_EVENT_REASONS, Clocks, Ecc, PcieLink, RemappedRows, RetiredPages

# nvmlDeviceArchitecture_t values (nvml.h); literal, as older bindings lack the newer names.
ARCHITECTURES = {
    2: "kepler",
    3: "maxwell",
    4: "pascal",
    5: "volta",
    6: "turing",
    7: "ampere",
    8: "ada",
    9: "hopper",
    10: "blackwell",
}

COMPUTE_MODES = {
    pynvml.NVML_COMPUTEMODE_DEFAULT: "default",
    pynvml.NVML_COMPUTEMODE_EXCLUSIVE_THREAD: "exclusive_thread",
    pynvml.NVML_COMPUTEMODE_PROHIBITED: "prohibited",
    pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: "exclusive_process",
}

_UNKNOWN_PSTATE = 32  # NVML_PSTATE_UNKNOWN
# Enough 64-bit words for 1024 CPUs; NVML fills as many as the machine has.
_AFFINITY_WORDS = 16
_CLOCK_TYPES = (
    ("graphics_hertz", pynvml.NVML_CLOCK_GRAPHICS),
    ("sm_hertz", pynvml.NVML_CLOCK_SM),
    ("memory_hertz", pynvml.NVML_CLOCK_MEM),
    ("video_hertz", pynvml.NVML_CLOCK_VIDEO),
)


def _milli(value: int) -> float:
    return value / 1000


def _ratio(percent: int) -> float:
    return percent / 100


def _first_ratio(pair: list[int]) -> float:
    """Encoder/decoder utilization comes as [percent, sampling period in us]."""
    return pair[0] / 100


def _pstate(value: int) -> int | None:
    return None if value == _UNKNOWN_PSTATE else value


Scalar = tuple[str, Callable[..., Any], tuple[Any, ...], Callable[[Any], Any] | None]

# Fields that do not change while the driver runs: read once per GPU (by UUID).
STATIC_SCALARS: tuple[Scalar, ...] = (
    ("name", function("nvmlDeviceGetName"), (), None),
    ("serial", function("nvmlDeviceGetSerial"), (), None),
    ("vbios_version", function("nvmlDeviceGetVbiosVersion"), (), None),
    ("board_part_number", function("nvmlDeviceGetBoardPartNumber"), (), None),
    ("architecture", function("nvmlDeviceGetArchitecture"), (), ARCHITECTURES.get),
    ("cuda_cores", function("nvmlDeviceGetNumGpuCores"), (), None),
    ("temperature_slowdown_celsius", function("nvmlDeviceGetTemperatureThreshold"),
     (pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,), float),
    ("temperature_shutdown_celsius", function("nvmlDeviceGetTemperatureThreshold"),
     (pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,), float),
    ("power_default_limit_watts", function("nvmlDeviceGetPowerManagementDefaultLimit"), (), _milli),
    ("numa_node", function("nvmlDeviceGetNumaNodeId"), (), None),
)

# Telemetry and settings an admin can change: read every sample.
DYNAMIC_SCALARS: tuple[Scalar, ...] = (
    ("persistence_mode", function("nvmlDeviceGetPersistenceMode"), (), bool),
    ("compute_mode", function("nvmlDeviceGetComputeMode"), (), COMPUTE_MODES.get),
    ("utilization_encoder_ratio", function("nvmlDeviceGetEncoderUtilization"), (), _first_ratio),
    ("utilization_decoder_ratio", function("nvmlDeviceGetDecoderUtilization"), (), _first_ratio),
    ("temperature_celsius", function("nvmlDeviceGetTemperature"), (pynvml.NVML_TEMPERATURE_GPU,), float),
    ("fan_speed_ratio", function("nvmlDeviceGetFanSpeed"), (), _ratio),
    ("power_draw_watts", function("nvmlDeviceGetPowerUsage"), (), _milli),
    ("power_limit_watts", function("nvmlDeviceGetEnforcedPowerLimit"), (), _milli),
    ("energy_joules", function("nvmlDeviceGetTotalEnergyConsumption"), (), _milli),
    ("performance_state", function("nvmlDeviceGetPerformanceState"), (), _pstate),
)


def read_scalars(read: Reader, handle: Any, table: tuple[Scalar, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, fn, args, convert in table:
        value = read(key, fn, handle, *args)
        values[key] = convert(value) if convert is not None and value is not None else value
    return values


def memory_info(handle: Any) -> tuple[int, int, int, int | None]:
    """(total, used, free, reserved) bytes; v2 separates reserved memory, drivers before 510 lack it."""
    # Bindings before nvidia-ml-py 11.510 have no v2 struct (nor the version argument).
    version = getattr(pynvml, "nvmlMemory_v2", None)
    try:
        if version is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
        info = function("nvmlDeviceGetMemoryInfo")(handle, version=version)
        return info.total, info.used, info.free, info.reserved
    except pynvml.NVMLError_FunctionNotFound:
        info = function("nvmlDeviceGetMemoryInfo")(handle)
        return info.total, info.used, info.free, None


def clock_event_reasons(handle: Any) -> list[str]:
    """Active reasons by name; the ThrottleReasons call serves drivers before R535."""
    try:
        mask = function("nvmlDeviceGetCurrentClocksEventReasons")(handle)
    except pynvml.NVMLError_FunctionNotFound:
        mask = function("nvmlDeviceGetCurrentClocksThrottleReasons")(handle)
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


def nvlink_links_active(handle: Any) -> int | None:
    """Links that report enabled; None when the GPU has no NVLink."""
    enabled = enabled_links(handle)
    return None if enabled is None else len(enabled)


# nvmlDeviceAddressingMode values (nvml.h, R580); literal, as bindings before 12.580 lack them.
ADDRESSING_MODES = {0: "none", 1: "hmm", 2: "ats"}


def addressing_mode(handle: Any) -> str | None:
    """How the GPU reaches memory: "ats" where it shares the CPU's (GB10, Grace boards)."""
    return ADDRESSING_MODES.get(function("nvmlDeviceGetAddressingMode")(handle))


# nvmlDriverModel_t values (nvml.h): WDM is what nvidia-smi prints as TCC.
DRIVER_MODELS = {0: "wddm", 1: "tcc", 2: "mcdm"}


def driver_model(handle: Any) -> str | None:
    """The current Windows driver model; Linux drivers answer NotSupported."""
    try:
        models = function("nvmlDeviceGetDriverModel_v2")(handle)
    except pynvml.NVMLError_FunctionNotFound:  # before R555: only the first version
        name = ("nvmlDeviceGetDriverModel_v1" if hasattr(pynvml, "nvmlDeviceGetDriverModel_v1")
                else "nvmlDeviceGetDriverModel")
        models = function(name)(handle)
    return DRIVER_MODELS.get(models[0])


def cpu_affinity(handle: Any) -> list[int]:
    return members(function("nvmlDeviceGetCpuAffinity")(handle, _AFFINITY_WORDS))


def _clocks(read: Reader, handle: Any, key: str, fn: Callable[..., int]) -> Clocks | None:
    values = {name: read(key, fn, handle, kind) for name, kind in _CLOCK_TYPES}
    if all(v is None for v in values.values()):
        return None
    return Clocks(**{name: None if v is None else v * 1e6 for name, v in values.items()})


def read_static(read: Reader, handle: Any) -> dict[str, Any]:
    """Everything about a GPU that stays put while the driver runs, keyed by Gpu field."""
    values = read_scalars(read, handle, STATIC_SCALARS)
    pci = read("pci", function("nvmlDeviceGetPciInfo"), handle)
    values["pci_bus_id"] = pci.busId if pci is not None else None
    # 0 is no device: the id's low half is the vendor (0x10DE). A masked id reads as 0.
    values["pci_device_id"] = (pci.pciDeviceId or None) if pci is not None else None
    capability = read("cuda_compute_capability", function("nvmlDeviceGetCudaComputeCapability"), handle)
    values["cuda_compute_capability"] = (
        f"{capability[0]}.{capability[1]}" if capability is not None else None
    )
    limits = read("power_limits", function("nvmlDeviceGetPowerManagementLimitConstraints"), handle)
    values["power_min_limit_watts"] = _milli(limits[0]) if limits is not None else None
    values["power_max_limit_watts"] = _milli(limits[1]) if limits is not None else None
    values["max_clocks"] = _clocks(read, handle, "max_clocks", function("nvmlDeviceGetMaxClockInfo"))
    values["cpu_affinity"] = read("cpu_affinity", cpu_affinity, handle)
    values["addressing_mode"] = read("addressing_mode", addressing_mode, handle)
    values["driver_model"] = read("driver_model", driver_model, handle)
    values["numa_affinity"] = read("numa_affinity", numa_affinity, handle)
    values["nvlinks"] = read("nvlinks", read_nvlinks, handle)
    bus_width = read("memory_bus_width", function("nvmlDeviceGetMemoryBusWidth"), handle)
    max_clocks = values["max_clocks"]
    values["peak"] = peak_throughput(
        values["name"],
        tuple(capability) if capability is not None else None,
        values["cuda_cores"],
        max_clocks.sm_hertz if max_clocks else None,
        bus_width,
        max_clocks.memory_hertz if max_clocks else None,
    )
    return values


def _pcie(read: Reader, handle: Any) -> PcieLink | None:
    link = PcieLink(
        generation=read("pcie", function("nvmlDeviceGetCurrPcieLinkGeneration"), handle),
        max_generation=read("pcie", function("nvmlDeviceGetMaxPcieLinkGeneration"), handle),
        gpu_max_generation=read("pcie", function("nvmlDeviceGetGpuMaxPcieLinkGeneration"), handle),
        width=read("pcie", function("nvmlDeviceGetCurrPcieLinkWidth"), handle),
        max_width=read("pcie", function("nvmlDeviceGetMaxPcieLinkWidth"), handle),
        tx_bytes_per_second=_kb(read("pcie", function("nvmlDeviceGetPcieThroughput"), handle,
                                     pynvml.NVML_PCIE_UTIL_TX_BYTES)),
        rx_bytes_per_second=_kb(read("pcie", function("nvmlDeviceGetPcieThroughput"), handle,
                                     pynvml.NVML_PCIE_UTIL_RX_BYTES)),
        replay_errors=read("pcie", function("nvmlDeviceGetPcieReplayCounter"), handle),
    )
    if link.generation is None and link.width is None and link.max_generation is None:
        return None
    return link


def _kb(value: int | None) -> float | None:
    """NVML's PCIe throughput is in KB/s (1024 bytes, per nvml.h)."""
    return None if value is None else value * 1024.0


def _ecc(read: Reader, handle: Any) -> Ecc | None:
    mode = read("ecc", function("nvmlDeviceGetEccMode"), handle)
    if mode is None:
        return None

    def count(kind: int, counter: int) -> int | None:
        return read("ecc", function("nvmlDeviceGetTotalEccErrors"), handle, kind, counter)

    corrected, uncorrected = (
        pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
        pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
    )
    enabled = bool(mode[0])
    return Ecc(
        enabled=enabled,
        pending_enabled=bool(mode[1]),
        # Counters of a GPU with ECC off are not kept: asking would only give NotSupported.
        volatile_corrected=count(corrected, pynvml.NVML_VOLATILE_ECC) if enabled else None,
        volatile_uncorrected=count(uncorrected, pynvml.NVML_VOLATILE_ECC) if enabled else None,
        aggregate_corrected=count(corrected, pynvml.NVML_AGGREGATE_ECC) if enabled else None,
        aggregate_uncorrected=count(uncorrected, pynvml.NVML_AGGREGATE_ECC) if enabled else None,
    )


def _retired_pages(read: Reader, handle: Any) -> RetiredPages | None:
    pending = read("retired_pages", function("nvmlDeviceGetRetiredPagesPendingStatus"), handle)
    if pending is None:
        return None
    single = read("retired_pages", function("nvmlDeviceGetRetiredPages"), handle,
                  pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
    double = read("retired_pages", function("nvmlDeviceGetRetiredPages"), handle,
                  pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
    return RetiredPages(
        single_bit=None if single is None else len(single),
        double_bit=None if double is None else len(double),
        pending=bool(pending),
    )


def _remapped_rows(read: Reader, handle: Any) -> RemappedRows | None:
    rows = read("remapped_rows", function("nvmlDeviceGetRemappedRows"), handle)
    if rows is None:
        return None
    correctable, uncorrectable, pending, failure = rows
    return RemappedRows(correctable, uncorrectable, bool(pending), bool(failure))


def read_dynamic(read: Reader, handle: Any, in_mig_mode: bool) -> dict[str, Any]:
    """Telemetry for one sample, keyed by Gpu field."""
    values = read_scalars(read, handle, DYNAMIC_SCALARS)
    memory = read("memory", memory_info, handle)
    total, used, free, reserved = memory if memory is not None else (None, None, None, None)
    values.update(
        memory_total_bytes=total,
        memory_used_bytes=used,
        memory_free_bytes=free,
        memory_reserved_bytes=reserved,
    )
    bar1 = read("bar1", function("nvmlDeviceGetBAR1MemoryInfo"), handle)
    values["bar1_total_bytes"] = bar1.bar1Total if bar1 is not None else None
    values["bar1_used_bytes"] = bar1.bar1Used if bar1 is not None else None
    # A MIG-mode parent has no utilization (nvml.h); asking would only cost a call.
    rates = None if in_mig_mode else read("utilization", function("nvmlDeviceGetUtilizationRates"), handle)
    values["utilization_gpu_ratio"] = _ratio(rates.gpu) if rates is not None else None
    values["utilization_memory_ratio"] = _ratio(rates.memory) if rates is not None else None
    values["clocks"] = _clocks(read, handle, "clocks", function("nvmlDeviceGetClockInfo"))
    values["pcie"] = _pcie(read, handle)
    values["clock_event_reasons"] = read("clock_event_reasons", clock_event_reasons, handle)
    values["ecc"] = _ecc(read, handle)
    values["retired_pages"] = _retired_pages(read, handle)
    values["remapped_rows"] = _remapped_rows(read, handle)
    values["nvlink_links_active"] = read("nvlink", nvlink_links_active, handle)
    return values

