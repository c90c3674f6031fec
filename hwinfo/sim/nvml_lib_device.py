"""Device calls of the fake libnvidia-ml: identity, memory, telemetry, health, handle lookup.

Most calls are one row of FIELDS: the reply on a physical GPU and on a MIG device handle
(None there: NotSupported, the MIG rules of docs/scenario-format.md, from nvml.h's notes,
https://github.com/NVIDIA/go-nvml/blob/main/gen/nvml/nvml.h). Replies are precomputed per device and rebuilt only after the machine changes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from hwinfo.mig.profiles import mig_bar1_bytes
from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.boards import DEFAULT_SAMPLING_US
from hwinfo.sim.devices import GpuDevice, MigDevice
from hwinfo.sim.machine import Machine
from hwinfo.sim.nvml_lib_base import (
    INSUFFICIENT_SIZE,
    INVALID_ARGUMENT,
    NO_PERMISSION_REPLY,
    NOT_FOUND,
    NOT_SUPPORTED,
    SUCCESS,
    UNSUPPORTED,
    Field,
    Impl,
    Reply,
    Symbol,
    ok,
    opt,
)
from hwinfo.sim.scenario_gpu import parse_pci_bus_id
from hwinfo.sim.scenario_model import (
    ADDRESSING_MODES,
    ARCHITECTURES,
    CLOCK_EVENT_REASONS,
    COMPUTE_MODES,
    DRIVER_MODELS,
    Clocks,
    GpuSpec,
)

MIB = 1 << 20
ADDRESSING_MODE_V1 = 0x1000008  # nvmlDeviceAddressingMode_v1 (nvml.h)
# nvmlTemperature_v1 (pynvml): sizeof(c_nvmlTemperature_v1_t) | 1 << 24.
TEMPERATURE_V1 = 0x100000C
# nvmlMemory_v2 (pynvml.nvmlMemory_v2).
MEMORY_V2 = 0x02000028
# NVML_TEMPERATURE_THRESHOLD_COUNT: thresholds 4..7 exist but are not simulated (NotSupported).
THRESHOLD_COUNT = 8
# NVML_NVLINK_MAX_LINKS in nvml.h 12.x: link numbers at or past it are invalid.
NVLINK_MAX_LINKS = 18


def _mw(watts: float | None) -> int | None:
    return None if watts is None else round(watts * 1000)


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _clock_table(clocks: Clocks | None) -> Reply:
    if clocks is None:
        return UNSUPPORTED
    values = (clocks.graphics, clocks.sm, clocks.memory, clocks.video)
    return ok({i: opt(v) for i, v in enumerate(values)})


def _thresholds(s: GpuSpec) -> Reply:
    # NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, SLOWDOWN, MEM_MAX, GPU_MAX.
    known = (
        s.temperature_shutdown_c,
        s.temperature_slowdown_c,
        s.temperature_memory_max_c,
        s.temperature_gpu_max_c,
    )
    table = {i: UNSUPPORTED for i in range(THRESHOLD_COUNT)}
    table.update({i: opt(v) for i, v in enumerate(known)})
    return ok(table)


def _memory(machine: Machine, gpu: GpuDevice, v2: bool) -> Reply:
    s = gpu.spec
    # nvml.h: in MIG mode the parent's memory is an aggregate "only if the caller has
    # appropriate privileges"; in a container it is NoPermission
    # (https://github.com/NVIDIA/nvidia-container-toolkit/issues/842).
    if gpu.mig_enabled and not machine.privileged:
        return NO_PERMISSION_REPLY
    if s.memory_total_mib is None:
        return UNSUPPORTED  # memory shared with the CPU: no framebuffer to count
    total = s.memory_total_mib * MIB
    reserved = (s.memory_reserved_mib or 0) * MIB
    used = gpu.memory_used_mib() * MIB
    # A dump's own free figure: nvidia-smi rounds each figure, so they need not add up.
    free = max(total - reserved - used, 0) if s.memory_free_mib is None else s.memory_free_mib * MIB
    if v2:
        return ok((("total", total), ("reserved", reserved), ("free", free), ("used", used)))
    # v1 has no reserved field: its `used` includes the reserved memory (nvml.h).
    return ok((("total", total), ("free", free), ("used", reserved + used)))


def _mig_memory(dev: MigDevice, v2: bool) -> Reply:
    # Compute instances of one GPU instance share its memory: each reports the GI's figures.
    gi = dev.gpu_instance
    spec = gi.spec
    total = (spec.profile.memory_mib if spec.memory_total_mib is None else spec.memory_total_mib)
    total *= MIB
    used = gi.memory_used_mib() * MIB
    free = max(total - used, 0) if spec.memory_free_mib is None else spec.memory_free_mib * MIB
    if v2:
        return ok((("total", total), ("reserved", 0), ("free", free), ("used", used)))
    return ok((("total", total), ("free", free), ("used", used)))


def _bar1(s: GpuSpec) -> Reply:
    if s.bar1_total_mib is None:
        return UNSUPPORTED
    total, used = s.bar1_total_mib * MIB, (s.bar1_used_mib or 0) * MIB
    return ok((("bar1Total", total), ("bar1Free", total - used), ("bar1Used", used)))


def _mig_bar1(dev: MigDevice) -> Reply:
    gi, s = dev.gpu_instance.spec, dev.gpu.spec
    if gi.bar1_total_mib is not None:  # as a dump showed it
        total = gi.bar1_total_mib * MIB
    elif s.bar1_total_mib is None:
        return UNSUPPORTED
    else:
        table = s.board.mig if s.board is not None else None
        total = mig_bar1_bytes(table, s.bar1_total_mib, gi.profile)
    return ok((("bar1Total", total), ("bar1Free", total), ("bar1Used", 0)))


def _mig_sram_errors(dev: MigDevice) -> Reply:
    count = dev.gpu_instance.spec.sram_uncorrected_volatile
    if count is None:
        return UNSUPPORTED
    # (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_SRAM)
    return ok({(1, 0, 7): ok(count)})


def _pci(s: GpuSpec) -> Reply:
    domain, bus, device = parse_pci_bus_id(s.pci_bus_id)  # type: ignore[misc]
    return ok(
        (
            ("busIdLegacy", f"{domain:04X}:{bus:02X}:{device:02X}.0".encode()),
            ("domain", domain),
            ("bus", bus),
            ("device", device),
            ("pciDeviceId", s.pci_device_id or 0),
            ("pciSubSystemId", s.pci_subsystem_id or 0),
            ("busId", f"{domain:08X}:{bus:02X}:{device:02X}.0".encode()),
        )
    )


def _ecc_counts(machine: Machine, gpu: GpuDevice) -> Reply:
    ecc = gpu.spec.ecc
    if ecc is None or not ecc.enabled:
        return UNSUPPORTED
    # Keys: (NVML_MEMORY_ERROR_TYPE_CORRECTED/UNCORRECTED, NVML_VOLATILE_ECC/AGGREGATE_ECC).
    # nvml.h: on MIG-enabled GPUs volatile counts cannot be read through the device handle
    # (the A100 MIG capture under R510 shows them N/A while aggregate counts read 0). An
    # imported dump says itself: the H100 MIG capture under R590 shows them.
    # Unknown: the driver from which volatile counts read in MIG mode.
    volatile = UNSUPPORTED if gpu.mig_enabled and machine.scenario.imported is None else None
    return ok(
        {
            (0, 0): volatile or opt(ecc.volatile.corrected),
            (1, 0): volatile or opt(ecc.volatile.uncorrected),
            (0, 1): opt(ecc.aggregate.corrected),
            (1, 1): opt(ecc.aggregate.uncorrected),
        }
    )


def _nvlink(s: GpuSpec) -> Reply:
    if s.nvlink_links is None:
        return UNSUPPORTED
    table = {link: UNSUPPORTED for link in range(NVLINK_MAX_LINKS)}
    table.update({link: ok(int(link < s.nvlink_links)) for link in range(s.nvlink_max_links)})
    return ok(table)


def _remapped(gpu: GpuDevice) -> Reply:
    rows = gpu.spec.remapped_rows
    # nvml.h: "On MIG-enabled GPUs with active instances, querying the number of remapped
    # rows is not supported".
    if rows is None or gpu.gpu_instances:
        return UNSUPPORTED
    return ok((rows.correctable, rows.uncorrectable, int(rows.pending), int(rows.failure)))


def _utilization(gpu: GpuDevice, value: Reply) -> Reply:
    """nvml.h: utilization, encoder and decoder queries are not supported on MIG-enabled GPUs."""
    return UNSUPPORTED if gpu.mig_enabled else value


def _reasons(s: GpuSpec) -> int | None:
    if s.clock_event_reasons is None:
        return None
    mask = 0
    for name in s.clock_event_reasons:
        mask |= CLOCK_EVENT_REASONS[name]
    return mask


def _pcie(s: GpuSpec, attr: str) -> Reply:
    return UNSUPPORTED if s.pcie is None else opt(getattr(s.pcie, attr))


def _util_pair(percent: int | None, period: int) -> Reply:
    return UNSUPPORTED if percent is None else ok((percent, period))


def _period(gpu: GpuDevice) -> int:
    board = gpu.spec.board
    return board.utilization_sampling_us if board else DEFAULT_SAMPLING_US


def _supported_reasons(s: GpuSpec) -> Reply:
    # Unknown: the supported-reasons mask per board; every reason the scenario can name.
    return UNSUPPORTED if s.clock_event_reasons is None else ok(sum(CLOCK_EVENT_REASONS.values()))


FIELDS: tuple[Field, ...] = (
    # Identity.
    # Unknown: on a MIG device handle, of these only name, UUID and index are known to work;
    # serial, VBIOS, part number, minor number and architecture answer NotSupported here.
    Field(
        "nvmlDeviceGetName",
        base.string,
        # A scenario spells a name's bytes that are not UTF-8 as lone surrogates (\udce9).
        lambda m, g: ok(g.spec.name.encode(errors="surrogateescape")),
        lambda m, d: ok(d.name.encode(errors="surrogateescape")),
    ),
    Field(
        "nvmlDeviceGetUUID",
        base.string,
        lambda m, g: ok(g.spec.uuid.encode()),
        lambda m, d: ok(d.uuid.encode()),
    ),
    Field(
        "nvmlDeviceGetSerial",
        base.string,
        lambda m, g: opt(g.spec.serial and g.spec.serial.encode()),
    ),
    Field(
        "nvmlDeviceGetVbiosVersion",
        base.string,
        lambda m, g: opt(g.spec.vbios_version and g.spec.vbios_version.encode()),
    ),
    Field(
        "nvmlDeviceGetBoardPartNumber",
        base.string,
        lambda m, g: opt(g.spec.board_part_number and g.spec.board_part_number.encode()),
    ),
    Field("nvmlDeviceGetIndex", base.scalar, lambda m, g: ok(g.index), lambda m, d: ok(d.index)),
    Field("nvmlDeviceGetMinorNumber", base.scalar, lambda m, g: opt(g.spec.minor_number)),
    Field("nvmlDeviceGetPciInfo_v3", base.struct, lambda m, g: _pci(g.spec)),
    Field(
        "nvmlDeviceGetArchitecture",
        base.scalar,
        lambda m, g: opt(g.spec.architecture and ARCHITECTURES[g.spec.architecture]),
    ),
    # Unknown: the compute capability of a MIG device; CUDA sees its parent's.
    Field(
        "nvmlDeviceGetCudaComputeCapability",
        base.multi,
        lambda m, g: opt(g.spec.cuda_compute_capability),
        lambda m, d: opt(d.gpu.spec.cuda_compute_capability),
    ),
    # nvml.h: on a MIG device use the GPU instance profile's SM count instead.
    Field("nvmlDeviceGetNumGpuCores", base.scalar, lambda m, g: opt(g.spec.cuda_cores)),
    Field(
        "nvmlDeviceGetMemoryBusWidth", base.scalar, lambda m, g: opt(g.spec.memory_bus_width_bits)
    ),
    # Modes.
    Field(
        "nvmlDeviceGetPersistenceMode",
        base.scalar,
        lambda m, g: opt(_flag(g.spec.persistence_mode)),
    ),
    # nvml.h: "On MIG-enabled GPUs, compute mode would be set to DEFAULT".
    Field(
        "nvmlDeviceGetComputeMode",
        base.scalar,
        lambda m, g: (
            ok(0)
            if g.mig_enabled
            else opt(g.spec.compute_mode and COMPUTE_MODES[g.spec.compute_mode])
        ),
    ),
    # Unknown: display mode/active per board; servers run headless, so both read Disabled.
    Field("nvmlDeviceGetDisplayMode", base.scalar, lambda m, g: opt(_flag(g.spec.display_mode))),
    Field(
        "nvmlDeviceGetDisplayActive", base.scalar, lambda m, g: opt(_flag(g.spec.display_active))
    ),
    # Memory.
    Field(
        "nvmlDeviceGetMemoryInfo",
        base.struct,
        lambda m, g: _memory(m, g, v2=False),
        lambda m, d: _mig_memory(d, v2=False),
    ),
    Field(
        "nvmlDeviceGetMemoryInfo_v2",
        lambda sym: base.struct(sym, MEMORY_V2),
        lambda m, g: _memory(m, g, v2=True),
        lambda m, d: _mig_memory(d, v2=True),
    ),
    Field(
        "nvmlDeviceGetBAR1MemoryInfo",
        base.struct,
        lambda m, g: _bar1(g.spec),
        lambda m, d: _mig_bar1(d),
    ),
    # Unknown: the answer on a MIG device handle (NotSupported here).
    Field(
        "nvmlDeviceGetAddressingMode",
        lambda sym: base.struct(sym, ADDRESSING_MODE_V1),
        lambda m, g: opt(g.spec.addressing_mode and
                         (("value", ADDRESSING_MODES[g.spec.addressing_mode]),)),
    ),
    # Windows driver model: a scenario gives it (an imported Windows dump); elsewhere
    # NotSupported, as Linux drivers answer. Unknown: the answer on a MIG device handle.
    *(
        Field(symbol, base.multi, lambda m, g: opt(g.spec.driver_model and tuple(
            DRIVER_MODELS[model] for model in g.spec.driver_model)))
        for symbol in ("nvmlDeviceGetDriverModel", "nvmlDeviceGetDriverModel_v2")
    ),
    # Utilization.
    Field(
        "nvmlDeviceGetUtilizationRates",
        base.struct,
        lambda m, g: _utilization(
            g,
            UNSUPPORTED
            if g.spec.utilization_gpu_percent is None
            else ok(
                (
                    ("gpu", g.spec.utilization_gpu_percent),
                    ("memory", g.spec.utilization_memory_percent or 0),
                )
            ),
        ),
    ),
    Field(
        "nvmlDeviceGetEncoderUtilization",
        base.multi,
        lambda m, g: _utilization(g, _util_pair(g.spec.encoder_percent, _period(g))),
    ),
    Field(
        "nvmlDeviceGetDecoderUtilization",
        base.multi,
        lambda m, g: _utilization(g, _util_pair(g.spec.decoder_percent, _period(g))),
    ),
    # Thermal and cooling.
    Field(
        "nvmlDeviceGetTemperature",
        base.indexed,
        lambda m, g: (
            ok({0: opt(g.spec.temperature_c)}) if g.spec.temperature_c is not None else UNSUPPORTED
        ),
    ),
    Field("nvmlDeviceGetTemperatureThreshold", base.indexed, lambda m, g: _thresholds(g.spec)),
    Field("nvmlDeviceGetFanSpeed", base.scalar, lambda m, g: opt(g.spec.fan_percent)),
    Field(
        "nvmlDeviceGetFanSpeed_v2",
        base.indexed,
        lambda m, g: UNSUPPORTED if g.spec.fan_percent is None else ok({0: ok(g.spec.fan_percent)}),
    ),
    # Unknown: what fanless boards answer; 0 fans here.
    Field(
        "nvmlDeviceGetNumFans", base.scalar, lambda m, g: ok(int(g.spec.fan_percent is not None))
    ),
    # Power.
    Field("nvmlDeviceGetPowerUsage", base.scalar, lambda m, g: opt(_mw(g.spec.power_draw_w))),
    Field(
        "nvmlDeviceGetEnforcedPowerLimit", base.scalar, lambda m, g: opt(_mw(g.spec.power_limit_w))
    ),
    Field(
        "nvmlDeviceGetPowerManagementLimit",
        base.scalar,
        lambda m, g: opt(_mw(g.spec.power_limit_w)),
    ),
    Field(
        "nvmlDeviceGetPowerManagementDefaultLimit",
        base.scalar,
        lambda m, g: opt(_mw(g.spec.power_default_limit_w)),
    ),
    Field(
        "nvmlDeviceGetPowerManagementLimitConstraints",
        base.multi,
        lambda m, g: (
            UNSUPPORTED
            if g.spec.power_min_limit_w is None or g.spec.power_max_limit_w is None
            else ok((_mw(g.spec.power_min_limit_w), _mw(g.spec.power_max_limit_w)))
        ),
    ),
    # Clocks and performance.
    Field("nvmlDeviceGetClockInfo", base.indexed, lambda m, g: _clock_table(g.spec.clocks_mhz)),
    Field(
        "nvmlDeviceGetMaxClockInfo", base.indexed, lambda m, g: _clock_table(g.spec.max_clocks_mhz)
    ),
    Field("nvmlDeviceGetPerformanceState", base.scalar, lambda m, g: opt(g.spec.pstate)),
    Field("nvmlDeviceGetPowerState", base.scalar, lambda m, g: opt(g.spec.pstate)),
    Field(
        "nvmlDeviceGetCurrentClocksEventReasons",
        base.scalar,
        lambda m, g: opt(_reasons(g.spec)),
    ),
    Field(
        "nvmlDeviceGetCurrentClocksThrottleReasons", base.scalar, lambda m, g: opt(_reasons(g.spec))
    ),
    Field(
        "nvmlDeviceGetSupportedClocksEventReasons",
        base.scalar,
        lambda m, g: _supported_reasons(g.spec),
    ),
    Field(
        "nvmlDeviceGetSupportedClocksThrottleReasons",
        base.scalar,
        lambda m, g: _supported_reasons(g.spec),
    ),
    # PCIe.
    Field("nvmlDeviceGetCurrPcieLinkGeneration", base.scalar, lambda m, g: _pcie(g.spec, "gen")),
    Field("nvmlDeviceGetMaxPcieLinkGeneration", base.scalar, lambda m, g: _pcie(g.spec, "max_gen")),
    Field(
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        base.scalar,
        lambda m, g: _pcie(g.spec, "gpu_max_gen"),
    ),
    Field("nvmlDeviceGetCurrPcieLinkWidth", base.scalar, lambda m, g: _pcie(g.spec, "width")),
    Field("nvmlDeviceGetMaxPcieLinkWidth", base.scalar, lambda m, g: _pcie(g.spec, "max_width")),
    Field(
        "nvmlDeviceGetPcieReplayCounter", base.scalar, lambda m, g: _pcie(g.spec, "replay_counter")
    ),
    # NVML_PCIE_UTIL_TX_BYTES = 0, RX = 1; KB/s.
    Field(
        "nvmlDeviceGetPcieThroughput",
        base.indexed,
        lambda m, g: (
            UNSUPPORTED
            if g.spec.pcie is None
            else ok({0: opt(g.spec.pcie.tx_kbps), 1: opt(g.spec.pcie.rx_kbps)})
        ),
    ),
    # Memory health.
    # Unknown: nvml.h lets a MIG device handle read volatile uncorrectable SRAM errors; every
    # ECC call answers NotSupported on MIG device handles here (docs/scenario-format.md).
    Field(
        "nvmlDeviceGetEccMode",
        base.multi,
        lambda m, g: (
            UNSUPPORTED
            if g.spec.ecc is None
            else ok((int(g.spec.ecc.enabled), int(g.spec.ecc.pending)))
        ),
    ),
    Field("nvmlDeviceGetTotalEccErrors", base.indexed, lambda m, g: _ecc_counts(m, g)),
    # A MIG device shows its GPU instance's volatile uncorrectable SRAM errors (nvidia-smi -q:
    # "ECC Errors / Volatile / SRAM Uncorrectable" under each MIG device, A100 R510 and H100
    # R590 captures). Unknown: that nvidia-smi reads them with this call; the GPU's own
    # per-location counters (NotSupported here).
    Field(
        "nvmlDeviceGetMemoryErrorCounter",
        base.indexed,
        lambda m, g: UNSUPPORTED,
        lambda m, d: _mig_sram_errors(d),
    ),
    Field(
        "nvmlDeviceGetRetiredPagesPendingStatus",
        base.scalar,
        lambda m, g: (
            UNSUPPORTED if g.spec.retired_pages is None else ok(int(g.spec.retired_pages.pending))
        ),
    ),
    Field("nvmlDeviceGetRemappedRows", base.multi, lambda m, g: _remapped(g)),
    # Topology.
    Field("nvmlDeviceGetNvLinkState", base.indexed, lambda m, g: _nvlink(g.spec)),
    Field("nvmlDeviceGetNumaNodeId", base.scalar, lambda m, g: opt(g.spec.numa_node)),
)


# ---------------------------------------------------------------------------------------------
# Calls that are not one table row.


def _temperature_v(machine: Machine, dev: GpuDevice | MigDevice, ref: object) -> int:
    """nvmlDeviceGetTemperatureV(handle, byref(c_nvmlTemperature_v1_t)): sensorType in, value out."""
    info = ref._obj  # type: ignore[attr-defined]
    if info.version != TEMPERATURE_V1:
        return base.ARGUMENT_VERSION_MISMATCH
    rc, table = base.answers(machine, dev)["nvmlDeviceGetTemperature"]
    if rc:
        return rc
    rc, value = table.get(info.sensorType, (INVALID_ARGUMENT, None))  # type: ignore[attr-defined]
    if rc:
        return rc
    info.temperature = value
    return SUCCESS


def _energy(machine: Machine, dev: GpuDevice | MigDevice, ref: object) -> int:
    """nvmlDeviceGetTotalEnergyConsumption: mJ, growing with power draw x wall time."""
    if isinstance(dev, MigDevice) or dev.spec.energy_j is None:
        return NOT_SUPPORTED
    ref._obj.value = machine.energy_now_mj(dev)  # type: ignore[attr-defined]
    return SUCCESS


def _cpu_affinity(
    machine: Machine, dev: GpuDevice | MigDevice, size: object, cpu_set: object
) -> int:
    """nvmlDeviceGetCpuAffinity(handle, cpuSetSize, unsigned long *cpuSet): a CPU bit mask."""
    if isinstance(dev, MigDevice) or dev.spec.cpu_affinity is None:
        return NOT_SUPPORTED
    return base.fill_bits(size, cpu_set, dev.spec.cpu_affinity)


def _retired_pages(
    machine: Machine,
    dev: GpuDevice | MigDevice,
    cause: object,
    count_ref: object,
    pages: object,
    times: object = None,
) -> int:
    """nvmlDeviceGetRetiredPages(_v2): two-call protocol, addresses (and timestamps)."""
    if isinstance(dev, MigDevice) or dev.spec.retired_pages is None:
        return NOT_SUPPORTED
    retired = dev.spec.retired_pages
    # NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0, DOUBLE_BIT_ECC_ERROR = 1.
    counts = {0: retired.single_bit, 1: retired.double_bit}
    kind = base.as_int(cause)
    if kind not in counts:
        return INVALID_ARGUMENT
    n = counts[kind]
    count = count_ref._obj  # type: ignore[attr-defined]
    if pages is None or count.value < n:
        count.value = n
        return INSUFFICIENT_SIZE if n else SUCCESS
    if n:
        addresses = (ctypes.c_ulonglong * n).from_address(base.address(pages))
        stamps = (
            None if times is None else (ctypes.c_ulonglong * n).from_address(base.address(times))
        )
        for i in range(n):
            # Page addresses are made up: distinct, page-aligned, stable.
            addresses[i] = (kind + 1) << 32 | (i + 1) << 12
            if stamps is not None:
                stamps[i] = 1_700_000_000 + i
    count.value = n
    return SUCCESS


def _system_string(value: Callable[[Machine], str]) -> Impl:
    def impl(machine: Machine, buf: object, length: object) -> int:
        return base.put_string(buf, length, value(machine).encode())

    return impl


def _cuda_version(machine: Machine, ref: object) -> int:
    ref._obj.value = machine.scenario.driver.cuda_version  # type: ignore[attr-defined]
    return SUCCESS


def _zero_count(machine: Machine, ref: object) -> int:
    """A count of things no scenario has: excluded GPUs, S-class units."""
    ref._obj.value = 0  # type: ignore[attr-defined]
    return SUCCESS


def _conf_compute_state(machine: Machine, ref: object) -> int:
    """nvmlSystemGetConfComputeState: confidential computing off, as on every scenario machine."""
    state = ref._obj  # type: ignore[attr-defined]
    # NVML_CC_SYSTEM_ENVIRONMENT_UNAVAILABLE, NVML_CC_SYSTEM_FEATURE_DISABLED,
    # NVML_CC_SYSTEM_DEVTOOLS_MODE_OFF.
    state.environment = state.ccFeature = state.devToolsMode = 0
    return SUCCESS


def _by_index(machine: Machine, index: object) -> GpuDevice | int:
    i = base.as_int(index)
    return machine.gpus[i] if 0 <= i < len(machine.gpus) else INVALID_ARGUMENT


def _text(arg: object) -> str:
    """A `const char *` argument: c_char_p, bytes or str."""
    value = getattr(arg, "value", arg)
    return value.decode() if isinstance(value, bytes) else str(value)


def _by_uuid(machine: Machine, uuid: object) -> GpuDevice | MigDevice | int:
    text = _text(uuid)
    for gpu in machine.gpus:
        if gpu.spec.uuid == text:
            return gpu
        for dev in gpu.mig_devices:
            if text in dev.uuids:
                return dev
    return NOT_FOUND


def _by_pci_bus_id(machine: Machine, bus_id: object) -> GpuDevice | int:
    wanted = parse_pci_bus_id(_text(bus_id))
    if wanted is None:
        return INVALID_ARGUMENT
    for gpu in machine.gpus:
        if parse_pci_bus_id(gpu.spec.pci_bus_id) == wanted:
            return gpu
    return NOT_FOUND


SYMBOLS: tuple[Symbol, ...] = (
    *base.field_symbols(FIELDS),
    Symbol("nvmlDeviceGetTemperatureV", "device", _temperature_v),
    Symbol("nvmlDeviceGetTotalEnergyConsumption", "device", _energy),
    Symbol("nvmlDeviceGetCpuAffinity", "device", _cpu_affinity),
    Symbol("nvmlDeviceGetRetiredPages", "device", _retired_pages),
    Symbol("nvmlDeviceGetRetiredPages_v2", "device", _retired_pages),
    Symbol(
        "nvmlSystemGetDriverVersion", "system", _system_string(lambda m: m.scenario.driver.version)
    ),
    Symbol(
        "nvmlSystemGetNVMLVersion",
        "system",
        _system_string(lambda m: m.scenario.driver.nvml_version),
    ),
    Symbol("nvmlSystemGetCudaDriverVersion", "system", _cuda_version),
    Symbol("nvmlSystemGetCudaDriverVersion_v2", "system", _cuda_version),
    Symbol("nvmlSystemGetConfComputeState", "system", _conf_compute_state),
    Symbol("nvmlGetExcludedDeviceCount", "system", _zero_count),
    Symbol("nvmlGetBlacklistDeviceCount", "system", _zero_count),
    Symbol("nvmlUnitGetCount", "system", _zero_count),
    # The unversioned lookups skip GPUs the caller may not use; a scenario has none such.
    Symbol("nvmlDeviceGetHandleByIndex", "lookup", _by_index),
    Symbol("nvmlDeviceGetHandleByIndex_v2", "lookup", _by_index),
    Symbol("nvmlDeviceGetHandleByUUID", "lookup", _by_uuid),
    Symbol("nvmlDeviceGetHandleByPciBusId", "lookup", _by_pci_bus_id),
    Symbol("nvmlDeviceGetHandleByPciBusId_v2", "lookup", _by_pci_bus_id),
)
