"""The typed scenario the simulator runs on, and the names its fields take (NVML's enums).

The format is docs/scenario-format.md; scenario.py reads a file into these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hwinfo.mig.profiles import (
    ComputeInstanceProfile,
    GpuInstanceProfile,
)
from hwinfo.sim.boards import Board
from hwinfo.sim.scenario_defaults import DEFAULT_ACCOUNTING_BUFFER

if TYPE_CHECKING:
    from hwinfo.sim.scenario_topology import NvLinkWire, TopologySpec

# NVML return codes by the names pynvml gives its error classes, without "NVMLError_" (nvml.h).
ERROR_CODES: dict[str, int] = {
    "Uninitialized": 1,
    "InvalidArgument": 2,
    "NotSupported": 3,
    "NoPermission": 4,
    "AlreadyInitialized": 5,
    "NotFound": 6,
    "InsufficientSize": 7,
    "InsufficientPower": 8,
    "DriverNotLoaded": 9,
    "Timeout": 10,
    "IrqIssue": 11,
    "LibraryNotFound": 12,
    "FunctionNotFound": 13,
    "CorruptedInforom": 14,
    "GpuIsLost": 15,
    "ResetRequired": 16,
    "OperatingSystem": 17,
    "LibRmVersionMismatch": 18,
    "InUse": 19,
    "Memory": 20,
    "NoData": 21,
    "VgpuEccNotSupported": 22,
    "InsufficientResources": 23,
    "FreqNotSupported": 24,
    "ArgumentVersionMismatch": 25,
    "Deprecated": 26,
    "NotReady": 27,
    "GpuNotFound": 28,
    "InvalidState": 29,
    "ResetTypeNotSupported": 30,
    "Unknown": 999,
}

# nvmlDeviceArchitecture_t (pynvml NVML_DEVICE_ARCH_*).
ARCHITECTURES = {
    "kepler": 2,
    "maxwell": 3,
    "pascal": 4,
    "volta": 5,
    "turing": 6,
    "ampere": 7,
    "ada": 8,
    "hopper": 9,
    "blackwell": 10,
}
# nvmlDeviceAddressingMode values (nvml.h, R580): ATS is memory shared with the CPU.
ADDRESSING_MODES = {"none": 0, "hmm": 1, "ats": 2}
# nvmlDriverModel_t (nvml.h): nvidia-smi prints WDM as TCC.
DRIVER_MODELS = {"wddm": 0, "tcc": 1, "mcdm": 2}
COMPUTE_MODES = {"default": 0, "exclusive_thread": 1, "prohibited": 2, "exclusive_process": 3}
# nvmlClocksEventReason* bits (nvml.h).
CLOCK_EVENT_REASONS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}
PROCESS_TYPES = ("compute", "graphics", "compute+graphics")
# Facts of a GPU instance an import can infer instead of read: its profile name, profile id,
# placement, and its MIG devices' UUIDs (derived).
GUESSED_GI_FACTS = ("profile", "profile_id", "placement", "uuid")

class ScenarioError(ValueError):
    """A scenario that cannot be loaded; str() is one line: file, field path, problem."""


@dataclass(frozen=True)
class Window:
    """Samples during which something is active: from sample after+1, for `count` samples."""

    after: int | None  # None: from the start, before the first sample too
    count: int | None  # None: for good

    def active(self, sample: int) -> bool:
        """Whether this window covers `sample` (sample 0 is before the first enumeration)."""
        if self.after is not None and sample <= self.after:
            return False
        return self.count is None or sample <= (self.after or 0) + self.count


@dataclass(frozen=True)
class Clocks:
    graphics: int | None
    sm: int | None
    memory: int | None
    video: int | None


@dataclass(frozen=True)
class Pcie:
    gen: int | None
    max_gen: int | None
    gpu_max_gen: int | None
    width: int | None
    max_width: int | None
    tx_kbps: int | None
    rx_kbps: int | None
    replay_counter: int | None


@dataclass(frozen=True)
class EccCounts:
    corrected: int | None  # None: NotSupported (an imported dump showed N/A)
    uncorrected: int | None


@dataclass(frozen=True)
class Ecc:
    enabled: bool
    pending: bool
    volatile: EccCounts
    aggregate: EccCounts


@dataclass(frozen=True)
class RetiredPages:
    single_bit: int
    double_bit: int
    pending: bool


@dataclass(frozen=True)
class RemappedRows:
    correctable: int
    uncorrectable: int
    pending: bool
    failure: bool


@dataclass(frozen=True)
class ProcessSpec:
    pid: int
    used_memory_mib: int | None  # None: NVML cannot tell (NVML_VALUE_NOT_AVAILABLE)
    type: str  # one of PROCESS_TYPES
    gpu_instance_id: int | None
    compute_instance_id: int | None
    user: str | None
    command: str | None
    visible: bool
    name: str | None = None  # nvmlSystemGetProcessName; None: the command line's first word
    # What NVML's per-process utilization samples say, in percent; None: no samples.
    sm_percent: int | None = None
    memory_percent: int | None = None


@dataclass(frozen=True)
class AccountedProcessSpec:
    """A process that NVML accounting keeps after it ended: it ran for `run_ms` and ended
    `ended_after_s` seconds after the driver loaded."""

    pid: int
    ended_after_s: float
    run_ms: int
    gpu_util_percent: int | None  # over its lifetime; None: NVML_VALUE_NOT_AVAILABLE
    memory_util_percent: int | None
    max_memory_mib: int | None


@dataclass(frozen=True)
class AccountingSpec:
    """nvidia-smi's "Accounting Mode": off unless a scenario turns it on, as after a driver
    load (NVML: the mode and its statistics reset to disabled when the driver unloads)."""

    enabled: bool = False
    buffer_size: int = DEFAULT_ACCOUNTING_BUFFER
    processes: tuple[AccountedProcessSpec, ...] = ()


@dataclass(frozen=True)
class XidEvent:
    after_samples: int
    xid: int
    gpu_instance_id: int | None
    compute_instance_id: int | None


@dataclass(frozen=True)
class ComputeInstanceSpec:
    id: int
    start: int  # first compute slice inside the GPU instance
    profile: ComputeInstanceProfile
    memory_used_mib: int | None
    # The SMs a dump showed for this MIG device; None: the profile's.
    multiprocessor_count: int | None = None
    # Its MIG device's UUID as a dump listed it (`nvidia-smi -L`); None: derived.
    uuid: str | None = None


@dataclass(frozen=True)
class GpmSpec:
    """What GPU performance monitoring measures (nvmlGpmMetricsGet), in percent."""

    graphics_active_percent: float = 0.0
    sm_active_percent: float = 0.0
    sm_occupancy_percent: float = 0.0
    tensor_active_percent: float = 0.0
    dram_bandwidth_percent: float = 0.0


@dataclass(frozen=True)
class GpuInstanceSpec:
    id: int
    start: int  # first memory slice
    profile: GpuInstanceProfile
    compute_instances: tuple[ComputeInstanceSpec, ...]
    gpm: GpmSpec | None = None  # None: idle, if its GPU declares GPM (nvml_lib_gpm.supported)
    # What its MIG devices report, exactly as a dump showed it; None: from the profile and
    # the compute instances' use.
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    memory_free_mib: int | None = None
    bar1_total_mib: int | None = None  # None: the board's rule (mig_profiles.MigTable)
    # Volatile uncorrectable SRAM ECC errors its MIG devices show; None: NotSupported.
    sram_uncorrected_volatile: int | None = None
    # What an import inferred rather than read of it (GUESSED_GI_FACTS).
    guessed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class MigSpec:
    enabled: bool
    pending: bool
    gpu_instances: tuple[GpuInstanceSpec, ...]


@dataclass(frozen=True)
class GpuSpec:
    """One GPU with the board's defaults applied; None means NVML answers NotSupported."""

    index: int
    board: Board | None
    name: str
    uuid: str
    serial: str | None
    vbios_version: str | None
    board_part_number: str | None
    pci_bus_id: str
    pci_device_id: int | None
    pci_subsystem_id: int | None
    minor_number: int | None
    architecture: str | None
    cuda_compute_capability: tuple[int, int] | None
    cuda_cores: int | None
    memory_bus_width_bits: int | None
    persistence_mode: bool | None
    display_mode: bool | None
    display_active: bool | None
    compute_mode: str | None
    memory_total_mib: int | None  # None: NotSupported (a GPU sharing system memory)
    memory_reserved_mib: int | None
    memory_used_mib: int | None  # None: the processes' memory (plus MIG overhead)
    bar1_total_mib: int | None
    bar1_used_mib: int | None
    utilization_gpu_percent: int | None
    utilization_memory_percent: int | None
    encoder_percent: int | None
    decoder_percent: int | None
    temperature_c: int | None
    temperature_slowdown_c: int | None
    temperature_shutdown_c: int | None
    temperature_gpu_max_c: int | None
    temperature_memory_max_c: int | None
    fan_percent: int | None
    power_draw_w: float | None
    power_limit_w: float | None
    power_default_limit_w: float | None
    power_min_limit_w: float | None
    power_max_limit_w: float | None
    energy_j: float | None
    clocks_mhz: Clocks | None
    max_clocks_mhz: Clocks | None
    pstate: int | None
    pcie: Pcie | None
    clock_event_reasons: tuple[str, ...] | None
    ecc: Ecc | None
    retired_pages: RetiredPages | None
    remapped_rows: RemappedRows | None
    nvlink_links: int | None
    nvlink_max_links: int
    numa_node: int | None
    cpu_affinity: tuple[int, ...] | None
    addressing_mode: str | None  # "none", "hmm" or "ats" (memory shared with the CPU)
    gpm: GpmSpec | None  # None: no GPM unless a GPU instance declares it (nvml_lib_gpm)
    mig: MigSpec | None
    processes: tuple[ProcessSpec, ...]
    lost: Window | None
    xid_events: tuple[XidEvent, ...]
    memory_free_mib: int | None = None  # None: total - reserved - used
    accounting: AccountingSpec = AccountingSpec()
    driver_model: tuple[str, str] | None = None  # (current, pending); None: NotSupported
    # Which GPU or NVSwitch its enabled NVLink links reach, in link order; None: the
    # scenario's topology.nvlink (scenario_topology.wiring).
    nvlink_remote: tuple[NvLinkWire, ...] | None = None
    # NUMA nodes GetMemoryAffinity answers; None: its root bus's in the topology's PCI tree.
    numa_affinity: tuple[int, ...] | None = None


@dataclass(frozen=True)
class FaultSpec:
    call: str  # C symbol without its _vN suffix
    gpu: int | None
    error: int | None  # NVML return code
    delay_seconds: float
    window: Window


@dataclass(frozen=True)
class DriverSpec:
    version: str
    version_tuple: tuple[int, ...]
    cuda_version: int
    nvml_version: str
    # The functions the library exports, as `hwinfo sim record` found them on a real one;
    # None: those of the version's branch (nvml_symbols.py).
    symbols: frozenset[str] | None = None


@dataclass(frozen=True)
class Imported:
    """Where an imported scenario came from; its GPUs take no catalogue defaults."""

    source: str  # the dump's file name
    kind: str  # "xml", "text", "capture" (nvidia-smi dumps) or "record" (hwinfo sim record)
    attached_gpus: int | None  # what the dump said; more than its GPUs after `nvidia-smi -i N`
    timestamp: str | None
    masked: bool = False  # the capture says it masked identifiers: they are the dump's, not real


@dataclass(frozen=True)
class Scenario:
    name: str
    source: str  # how errors name the file: the built-in name or the path as given
    description: str
    driver: DriverSpec
    privileged: bool
    library_missing: bool
    init_error: int | None
    init_error_attempts: int | None  # None: every attempt fails
    faults: tuple[FaultSpec, ...]
    gpus: tuple[GpuSpec, ...]
    imported: Imported | None = None  # a scenario `hwinfo sim import` made from a dump
    topology: TopologySpec | None = None  # its PCI tree and NVLink wiring; None: not given
