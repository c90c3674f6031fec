"""Scenario files: loading, validation, and the typed model the simulator runs on.

The format is docs/scenario-format.md. Every error is a ScenarioError whose text is one line
naming the file, the field by its path, and what is wrong.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import uuid as uuid_mod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from hwinfo import inputs
from hwinfo.cpulist import parse_cpulist
from hwinfo.sim import mig_profiles
from hwinfo.sim.boards import BOARDS, Board
from hwinfo.sim.mig_profiles import (
    ComputeInstanceProfile,
    GpuInstanceProfile,
    MigTable,
    default_gpu_instance_id,
    fit_placements,
)
from hwinfo.sim.nvml_symbols import fault_name, known_fault_calls

T = TypeVar("T")

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
# nvmlClocksEventReason* bits (facts §5).
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
# MIG arrived with R450 (facts §2); a scenario cannot ask for MIG on an older driver.
MIG_MIN_DRIVER = (450,)
# CUDA version a driver branch ships with, for the default of driver.cuda_version.
_CUDA_BY_BRANCH = {
    450: 11000,
    455: 11010,
    460: 11020,
    465: 11030,
    470: 11040,
    495: 11050,
    510: 11060,
    515: 11070,
    520: 11080,
    525: 12000,
    530: 12010,
    535: 12020,
    545: 12030,
    550: 12040,
    555: 12050,
    560: 12060,
    565: 12070,
    570: 12080,
    575: 12090,
    580: 13000,
    590: 13010,
}
SCENARIO_DIR = "scenarios"

# Bounds on every number a scenario gives. A value past them is no GPU's, and would not fit
# the C type NVML returns it in (ctypes would wrap it silently), so it is refused, naming the
# field; docs/scenario-format.md lists them.
MAX_GPUS = 255  # default bus ids are 00000000:01:00.0 ... 00000000:FF:00.0
MAX_TEMPERATURE_C = 255
MAX_POWER_W = 4000.0  # NVML gives power in mW in an unsigned int (4294 W)
MAX_ENERGY_J = 1e15  # 31 years at 1 MW; NVML's mJ counter is 64-bit
MAX_CLOCK_MHZ = 100_000
MAX_MEMORY_MIB = 1 << 24  # 16 TiB
MAX_COUNT = 0xFFFF_FFFF  # counters, ids and samples: NVML's unsigned int
MAX_DELAY_SECONDS = 86_400.0  # a day: longer than any deadline a hang is meant to trip
MAX_PCIE_GEN = 16
MAX_PCIE_WIDTH = 32
MAX_NUMA_NODE = 1023  # the kernel's MAX_NUMNODES at its largest (NODES_SHIFT 10)
MAX_MINOR_NUMBER = 254  # /dev/nvidia0../dev/nvidia254; 255 is /dev/nvidiactl
MAX_CUDA_CORES = 1 << 20
MAX_BUS_WIDTH_BITS = 1 << 16
MAX_SYMBOLS = 4096  # a real libnvidia-ml exports about 420
MAX_SMS = 4096  # streaming multiprocessors of one GPU or instance (B200: 148)
# What every real capture shows as "Accounting Mode Buffer Size" (captures/, drivers 525-610).
DEFAULT_ACCOUNTING_BUFFER = 4000
MAX_ACCOUNTING_BUFFER = 1 << 20
MAX_RUN_MS = 10**12  # 31 years


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


# ---------------------------------------------------------------------------------------------
# Reading values


class Reader:
    """Typed access to JSON values that reports errors as `scenario FILE: PATH: problem`."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, problem: str) -> NoReturn:
        raise ScenarioError(f"scenario {self.source}: {path}: {problem}")

    def obj(
        self, path: str, value: object, allowed: Iterable[str], required: Iterable[str] = ()
    ) -> dict[str, object]:
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {_kind(value)}")
        allowed = set(allowed)
        for key in value:
            if key not in allowed:
                self.fail(inputs.member(path, key), f"unknown key (known: {', '.join(sorted(allowed))})")
        for key in required:
            if key not in value:
                self.fail(inputs.member(path, key), "required")
        return value

    def list(self, path: str, value: object) -> list[object]:
        if not isinstance(value, list):
            self.fail(path, f"expected a list, got {_kind(value)}")
        return value

    def int(self, path: str, value: object, low: int = 0, high: int = MAX_COUNT) -> int:
        """An integer from `low` to `high`; every integer in a scenario has both bounds."""
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(path, f"expected an integer, got {_kind(value)}")
        if value < low:
            self.fail(path, f"must be at least {low}, got {inputs.shown(value)}")
        if value > high:
            self.fail(path, f"must be at most {high}, got {inputs.shown(value)}")
        return value

    def number(self, path: str, value: object, high: float) -> float:
        """A finite number from 0 to `high`."""
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.fail(path, f"expected a number, got {_kind(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(path, f"{value} is not a finite number")
        if value < 0:
            self.fail(path, f"must not be negative, got {inputs.shown(value)}")
        if value > high:
            self.fail(path, f"must be at most {high:g}, got {inputs.shown(value)}")
        return float(value)

    def bool(self, path: str, value: object) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {_kind(value)}")
        return value

    def str(self, path: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {_kind(value)}")
        return value

    def choice(self, path: str, value: object, choices: Iterable[str]) -> str:
        text = self.str(path, value)
        choices = list(choices)
        if text not in choices:
            self.fail(path, f"unknown value {inputs.shown(text)} (known: {', '.join(choices)})")
        return text

    def hex_int(self, path: str, value: object) -> int:
        """An int, or a hex string such as "0x20B210DE"."""
        if isinstance(value, str):
            if not re.fullmatch(r"(?:0[xX])?[0-9A-Fa-f]{1,8}", value):
                self.fail(path, f"expected an integer or a hex string of 32 bits, got "
                                f"{inputs.shown(value)}")
            return int(value, 16)
        return self.int(path, value, 0, 0xFFFFFFFF)

    def window(self, path: str, data: Mapping[str, object]) -> Window:
        """`after_samples` / `for_samples` of a fault or a lost GPU."""
        after = data.get("after_samples")
        count = data.get("for_samples")
        return Window(
            None if after is None else self.int(inputs.member(path, "after_samples"), after),
            None if count is None else self.int(inputs.member(path, "for_samples"), count, 1),
        )


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _optional(read: Callable[[str, object], T]) -> Callable[[str, object], T | None]:
    """A field reader that lets null through (null: NotSupported)."""
    return lambda path, value: None if value is None else read(path, value)


# ---------------------------------------------------------------------------------------------
# GPU fields


def gpu_field_readers(
    r: Reader, imported: bool = False
) -> dict[str, Callable[[str, object], object]]:
    """Reader per plain GPU field; structured fields (mig, processes, ...) are read apart.

    In an imported scenario a counter the dump did not show is NotSupported (None), not 0.
    """
    absent_count = None if imported else 0

    def count_or_none(path: str, key: str, data: Mapping[str, object]) -> int | None:
        value = data.get(key, absent_count)
        return None if value is None else r.int(inputs.member(path, key), value)

    def clocks(path: str, value: object) -> Clocks:
        data = r.obj(path, value, ("graphics", "sm", "memory", "video"))
        return Clocks(
            **{k: _opt_int(r, path, data, k, MAX_CLOCK_MHZ)
               for k in ("graphics", "sm", "memory", "video")}
        )

    def pcie(path: str, value: object) -> Pcie:
        bounds = {
            "gen": MAX_PCIE_GEN,
            "max_gen": MAX_PCIE_GEN,
            "gpu_max_gen": MAX_PCIE_GEN,
            "width": MAX_PCIE_WIDTH,
            "max_width": MAX_PCIE_WIDTH,
            "tx_kbps": MAX_COUNT,
            "rx_kbps": MAX_COUNT,
            "replay_counter": MAX_COUNT,
        }
        data = r.obj(path, value, bounds)
        return Pcie(**{k: _opt_int(r, path, data, k, high) for k, high in bounds.items()})

    def counts(path: str, value: object) -> EccCounts:
        data = r.obj(path, value, ("corrected", "uncorrected"))
        return EccCounts(
            count_or_none(path, "corrected", data), count_or_none(path, "uncorrected", data)
        )

    def ecc(path: str, value: object) -> Ecc:
        data = r.obj(path, value, ("enabled", "pending", "volatile", "aggregate"), ("enabled",))
        enabled = r.bool(inputs.member(path, "enabled"), data["enabled"])
        return Ecc(
            enabled,
            r.bool(inputs.member(path, "pending"), data.get("pending", enabled)),
            counts(inputs.member(path, "volatile"), data.get("volatile", {})),
            counts(inputs.member(path, "aggregate"), data.get("aggregate", {})),
        )

    def retired(path: str, value: object) -> RetiredPages:
        data = r.obj(path, value, ("single_bit", "double_bit", "pending"))
        return RetiredPages(
            r.int(inputs.member(path, "single_bit"), data.get("single_bit", 0)),
            r.int(inputs.member(path, "double_bit"), data.get("double_bit", 0)),
            r.bool(inputs.member(path, "pending"), data.get("pending", False)),
        )

    def remapped(path: str, value: object) -> RemappedRows:
        data = r.obj(path, value, ("correctable", "uncorrectable", "pending", "failure"))
        return RemappedRows(
            r.int(inputs.member(path, "correctable"), data.get("correctable", 0)),
            r.int(inputs.member(path, "uncorrectable"), data.get("uncorrectable", 0)),
            r.bool(inputs.member(path, "pending"), data.get("pending", False)),
            r.bool(inputs.member(path, "failure"), data.get("failure", False)),
        )

    def capability(path: str, value: object) -> tuple[int, int]:
        items = r.list(path, value)
        if len(items) != 2:
            r.fail(path, f"expected [major, minor], got {len(items)} numbers")
        return r.int(inputs.member(path, 0), items[0], 0, 99), r.int(inputs.member(path, 1), items[1], 0, 99)

    def reasons(path: str, value: object) -> tuple[str, ...]:
        return tuple(
            r.choice(inputs.member(path, i), v, CLOCK_EVENT_REASONS)
            for i, v in enumerate(r.list(path, value))
        )

    def cpus(path: str, value: object) -> tuple[int, ...]:
        try:
            return tuple(parse_cpulist(r.str(path, value)))
        except ValueError as exc:
            r.fail(path, f"expected a CPU list such as '0-23,48-71': {exc}")

    def bus_id(path: str, value: object) -> str:
        text = r.str(path, value)
        if parse_pci_bus_id(text) is None:
            r.fail(path, "expected a PCI bus id such as '00000000:07:00.0', "
                         f"got {inputs.shown(text)}")
        return text

    def driver_model(path: str, value: object) -> tuple[str, str]:
        data = r.obj(path, value, ("current", "pending"), ("current",))
        current = r.choice(inputs.member(path, "current"), data["current"], DRIVER_MODELS)
        pending = data.get("pending", current)
        return current, r.choice(inputs.member(path, "pending"), pending, DRIVER_MODELS)

    def bounded(high: int) -> Callable[[str, object], int]:
        return lambda path, value: r.int(path, value, 0, high)

    def watts(path: str, value: object) -> float:
        return r.number(path, value, MAX_POWER_W)

    percent, mib, celsius = bounded(100), bounded(MAX_MEMORY_MIB), bounded(MAX_TEMPERATURE_C)

    return {
        "name": r.str,
        "uuid": r.str,
        "serial": _optional(r.str),
        "vbios_version": _optional(r.str),
        "board_part_number": _optional(r.str),
        "pci_bus_id": bus_id,
        "pci_device_id": _optional(r.hex_int),
        "pci_subsystem_id": _optional(r.hex_int),
        "minor_number": _optional(bounded(MAX_MINOR_NUMBER)),
        "architecture": _optional(lambda p, v: r.choice(p, v, ARCHITECTURES)),
        "cuda_compute_capability": _optional(capability),
        "cuda_cores": _optional(bounded(MAX_CUDA_CORES)),
        "memory_bus_width_bits": _optional(bounded(MAX_BUS_WIDTH_BITS)),
        "persistence_mode": _optional(r.bool),
        "compute_mode": _optional(lambda p, v: r.choice(p, v, COMPUTE_MODES)),
        # null: NVML has no framebuffer figure (a GPU sharing system memory, e.g. GB10).
        "memory_total_mib": _optional(mib),
        "memory_reserved_mib": _optional(mib),
        "memory_used_mib": _optional(mib),
        "memory_free_mib": _optional(mib),
        "bar1_total_mib": _optional(mib),
        "bar1_used_mib": _optional(mib),
        "utilization_gpu_percent": _optional(percent),
        "utilization_memory_percent": _optional(percent),
        "encoder_percent": _optional(percent),
        "decoder_percent": _optional(percent),
        "temperature_c": _optional(celsius),
        "temperature_slowdown_c": _optional(celsius),
        "temperature_shutdown_c": _optional(celsius),
        "temperature_gpu_max_c": _optional(celsius),
        "temperature_memory_max_c": _optional(celsius),
        "fan_percent": _optional(percent),
        "power_draw_w": _optional(watts),
        "power_limit_w": _optional(watts),
        "power_default_limit_w": _optional(watts),
        "power_min_limit_w": _optional(watts),
        "power_max_limit_w": _optional(watts),
        "energy_j": _optional(lambda p, v: r.number(p, v, MAX_ENERGY_J)),
        "clocks_mhz": _optional(clocks),
        "max_clocks_mhz": _optional(clocks),
        "pstate": _optional(lambda p, v: r.int(p, v, 0, 15)),
        "pcie": _optional(pcie),
        "clock_event_reasons": _optional(reasons),
        "ecc": _optional(ecc),
        "retired_pages": _optional(retired),
        "remapped_rows": _optional(remapped),
        "nvlink_links": _optional(bounded(MAX_COUNT)),  # checked against the board below
        "numa_node": _optional(bounded(MAX_NUMA_NODE)),
        "cpu_affinity": _optional(cpus),
        "addressing_mode": _optional(lambda p, v: r.choice(p, v, ADDRESSING_MODES)),
        "gpm": _optional(lambda p, v: read_gpm(r, p, v)),
        "driver_model": _optional(driver_model),
    }


def read_gpm(r: Reader, path: str, value: object) -> GpmSpec:
    """A `gpm` object: each key a percentage, absent keys 0."""
    keys = tuple(f.name for f in dataclasses.fields(GpmSpec))
    data = r.obj(path, value, keys)
    return GpmSpec(**{key: r.number(inputs.member(path, key), data[key], 100) for key in data})


def _opt_int(
    r: Reader, path: str, data: Mapping[str, object], key: str, high: int
) -> int | None:
    value = data.get(key)
    return None if value is None else r.int(inputs.member(path, key), value, 0, high)


_STRUCTURED_GPU_KEYS = ("board", "mig", "processes", "lost", "xid_events", "accounting")


def _merge(base: Mapping[str, object], override: Mapping[str, object]) -> dict[str, object]:
    """The board's defaults with the GPU's fields over them; objects merge key by key."""
    out = dict(base)
    for key, value in override.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = _merge(old, value)
        else:
            out[key] = value
    return out


def parse_pci_bus_id(text: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of "00000000:07:00.0", "0000:07:00.0" or "07:00.0"; else None."""
    m = re.fullmatch(r"(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.[0-7]", text)
    if m is None:
        return None
    return int(m.group(1) or "0", 16), int(m.group(2), 16), int(m.group(3), 16)


def _read_gpu(
    r: Reader,
    scenario_name: str,
    driver: tuple[int, ...],
    index: int,
    value: object,
    imported: bool = False,
) -> GpuSpec:
    """One GPU; an imported one takes nothing from the catalogue but its MIG table."""
    path = f"gpus[{index}]"
    readers = gpu_field_readers(r, imported)
    data = r.obj(path, value, (*readers, *_STRUCTURED_GPU_KEYS))
    board = None
    if "board" in data:
        board = BOARDS[r.choice(inputs.member(path, "board"), data["board"], BOARDS)]
    if board is not None and not imported:
        merged = _merge(board.defaults, data)
    else:
        merged = dict(data)
        for key in ("name", "memory_total_mib"):
            if key not in merged:
                r.fail(inputs.member(path, key), "required when no board is given")
    # Optional readers let null through (NotSupported); name, uuid, bus id and memory do not.
    values: dict[str, object] = {
        key: read(inputs.member(path, key), merged[key]) if key in merged else None
        for key, read in readers.items()
    }
    # Absent (not null) identity fields get stable defaults derived from the scenario.
    if "uuid" not in merged:
        values["uuid"] = "GPU-" + str(
            uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, f"hwinfo-sim:{scenario_name}:{index}")
        )
    if "pci_bus_id" not in merged:
        values["pci_bus_id"] = f"00000000:{index + 1:02X}:00.0"
    if "minor_number" not in merged and not imported:
        values["minor_number"] = index
    if "serial" not in merged and board is not None and board.has_serial and not imported:
        values["serial"] = (
            f"{uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, str(values['uuid'])).int % 10**13:013d}"
        )
    nvlink_max = board.nvlink_max_links if board else (values["nvlink_links"] or 0)
    if values["nvlink_links"] is not None and values["nvlink_links"] > nvlink_max:  # type: ignore[operator]
        r.fail(inputs.member(path, "nvlink_links"), f"this board has {nvlink_max} NVLink links")

    mig = None
    # A MIG board on a driver older than MIG simply has no MIG, unless the GPU asks for it.
    if merged.get("mig") is not None and ("mig" in data or driver >= MIG_MIN_DRIVER):
        mig = parse_mig(r, inputs.member(path, "mig"), merged["mig"], board, driver)
    processes = parse_processes(r, inputs.member(path, "processes"), data.get("processes", []), mig)
    lost = None
    lost_value = data.get("lost", False)
    if isinstance(lost_value, dict):
        lost = r.window(
            inputs.member(path, "lost"),
            r.obj(inputs.member(path, "lost"), lost_value, ("after_samples", "for_samples")),
        )
    elif r.bool(inputs.member(path, "lost"), lost_value):
        lost = Window(None, None)
    events = tuple(
        _read_xid(r, inputs.member(inputs.member(path, "xid_events"), i), v, mig)
        for i, v in enumerate(r.list(inputs.member(path, "xid_events"), data.get("xid_events", [])))
    )
    accounting = AccountingSpec()
    if "accounting" in data:
        accounting = _read_accounting(r, inputs.member(path, "accounting"), data["accounting"])
        if accounting.enabled and mig is not None and mig.enabled:
            # NVML: on MIG-enabled GPUs accounting mode is DISABLED and cannot be changed.
            r.fail(inputs.member(inputs.member(path, "accounting"), "enabled"),
                   "accounting cannot be on while MIG is enabled")
    return GpuSpec(
        index=index,
        board=board,
        nvlink_max_links=nvlink_max,
        mig=mig,
        processes=processes,
        lost=lost,
        xid_events=events,
        accounting=accounting,
        **values,  # type: ignore[arg-type]
    )


def _read_accounting(r: Reader, path: str, value: object) -> AccountingSpec:
    data = r.obj(path, value, ("enabled", "buffer_size", "processes"))
    processes = []
    keys = ("pid", "ended_after_s", "run_ms", "gpu_util_percent", "memory_util_percent",
            "max_memory_mib")
    items = r.list(inputs.member(path, "processes"), data.get("processes", []))
    for i, item in enumerate(items):
        p = inputs.member(inputs.member(path, "processes"), i)
        entry = r.obj(p, item, keys, ("pid", "run_ms"))
        processes.append(AccountedProcessSpec(
            pid=r.int(inputs.member(p, "pid"), entry["pid"], 1, 0xFFFFFFFF),
            ended_after_s=r.number(inputs.member(p, "ended_after_s"),
                                   entry.get("ended_after_s", 0), MAX_DELAY_SECONDS * 365),
            run_ms=r.int(inputs.member(p, "run_ms"), entry["run_ms"], 0, MAX_RUN_MS),
            gpu_util_percent=_opt_int(r, p, entry, "gpu_util_percent", 100),
            memory_util_percent=_opt_int(r, p, entry, "memory_util_percent", 100),
            max_memory_mib=_opt_int(r, p, entry, "max_memory_mib", MAX_MEMORY_MIB),
        ))
    buffer_size = r.int(inputs.member(path, "buffer_size"),
                        data.get("buffer_size", DEFAULT_ACCOUNTING_BUFFER), 1, MAX_ACCOUNTING_BUFFER)
    return AccountingSpec(
        enabled=r.bool(inputs.member(path, "enabled"), data.get("enabled", False)),
        buffer_size=buffer_size,
        processes=tuple(sorted(processes, key=lambda a: a.ended_after_s)),
    )


def _read_xid(r: Reader, path: str, value: object, mig: MigSpec | None) -> XidEvent:
    keys = ("after_samples", "xid", "gpu_instance_id", "compute_instance_id")
    data = r.obj(path, value, keys, ("after_samples", "xid"))
    gi, ci = _instance_ids(r, path, data, mig, required=False)
    return XidEvent(
        # nvml.h: events that happen before nvmlDeviceRegisterEvents are not recorded, and
        # nothing can register before sample 1.
        r.int(inputs.member(path, "after_samples"), data["after_samples"], 1),
        r.int(inputs.member(path, "xid"), data["xid"]),
        gi,
        ci,
    )


def _instance_ids(
    r: Reader, path: str, data: Mapping[str, object], mig: MigSpec | None, required: bool
) -> tuple[int | None, int | None]:
    """gpu_instance_id / compute_instance_id of a process or event, checked against the MIG tree."""
    gi_path, ci_path = inputs.member(path, "gpu_instance_id"), inputs.member(path, "compute_instance_id")
    gi, ci = data.get("gpu_instance_id"), data.get("compute_instance_id")
    if mig is None or not mig.enabled:
        if gi is not None or ci is not None:
            r.fail(gi_path if gi is not None else ci_path, "only allowed on a GPU with MIG enabled")
        return None, None
    if gi is None and ci is None and not required:
        return None, None
    if gi is None:
        r.fail(gi_path, "required on a GPU with MIG enabled")
    if ci is None:
        r.fail(ci_path, "required on a GPU with MIG enabled")
    gi, ci = r.int(gi_path, gi), r.int(ci_path, ci)
    instance = next((g for g in mig.gpu_instances if g.id == gi), None)
    if instance is None:
        known = ", ".join(str(g.id) for g in mig.gpu_instances) or "none"
        r.fail(gi_path, f"no GPU instance {gi} on this GPU (existing: {known})")
    if all(c.id != ci for c in instance.compute_instances):
        r.fail(ci_path, f"no compute instance {ci} in GPU instance {gi}")
    return gi, ci


def parse_processes(
    r: Reader, path: str, value: object, mig: MigSpec | None
) -> tuple[ProcessSpec, ...]:
    """A GPU's `processes` list, checked against its MIG tree."""
    out = []
    seen: set[int] = set()
    keys = (
        "pid",
        "used_memory_mib",
        "type",
        "gpu_instance_id",
        "compute_instance_id",
        "user",
        "command",
        "name",
        "visible",
        "sm_percent",
        "memory_percent",
    )
    for i, item in enumerate(r.list(path, value)):
        p = inputs.member(path, i)
        data = r.obj(p, item, keys, ("pid",))
        pid = r.int(inputs.member(p, "pid"), data["pid"], 1, 0xFFFFFFFF)
        if pid in seen:
            r.fail(inputs.member(p, "pid"), f"pid {pid} is listed twice on this GPU")
        seen.add(pid)
        gi, ci = _instance_ids(r, p, data, mig, required=True)
        memory = data.get("used_memory_mib")
        out.append(
            ProcessSpec(
                pid=pid,
                used_memory_mib=None
                if memory is None
                else r.int(inputs.member(p, "used_memory_mib"), memory, 0, MAX_MEMORY_MIB),
                type=r.choice(inputs.member(p, "type"), data.get("type", "compute"), PROCESS_TYPES),
                gpu_instance_id=gi,
                compute_instance_id=ci,
                user=_opt_str(r, p, data, "user"),
                command=_opt_str(r, p, data, "command"),
                name=_opt_str(r, p, data, "name"),
                visible=r.bool(inputs.member(p, "visible"), data.get("visible", True)),
                sm_percent=_opt_int(r, p, data, "sm_percent", 100),
                memory_percent=_opt_int(r, p, data, "memory_percent", 100),
            )
        )
    return tuple(out)


def _opt_str(r: Reader, path: str, data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return None if value is None else r.str(inputs.member(path, key), value)


# ---------------------------------------------------------------------------------------------
# MIG


_GI_KEYS = ("profile", "start", "id", "compute_instances", "gpm")
# Exact figures a dump showed for a GPU instance's MIG devices (GpuInstanceSpec fields).
_GI_MEMORY_KEYS = ("memory_total_mib", "memory_used_mib", "memory_free_mib")


def parse_mig(
    r: Reader, path: str, value: object, board: Board | None, driver: tuple[int, ...]
) -> MigSpec:
    """A GPU's `mig` object: profiles, placements, ids and compute instances, all checked."""
    data = r.obj(path, value, ("enabled", "pending", "gpu_instances"), ("enabled",))
    if driver < MIG_MIN_DRIVER:
        r.fail(path, f"MIG needs driver {MIG_MIN_DRIVER[0]} or later")
    enabled = r.bool(inputs.member(path, "enabled"), data["enabled"])
    pending = r.bool(inputs.member(path, "pending"), data.get("pending", enabled))
    gi_path = inputs.member(path, "gpu_instances")
    items = r.list(gi_path, data.get("gpu_instances", []))
    if items and not enabled:
        r.fail(gi_path, "GPU instances need MIG enabled")
    if board is None:
        # A GPU outside the catalogue (a dump of a MIG board it lacks): its GPU instances are
        # described by what the dump showed of them.
        return MigSpec(enabled, pending, _described_instances(r, gi_path, items))
    if board.mig is None:
        r.fail(path, f"board {board.key} has no MIG support (give null, or a board that has MIG)")
    # The profiles, and their memory sizes, a driver of this branch reports for the board.
    table = board.mig.for_driver(driver)
    if enabled and driver < table.min_driver:
        r.fail(
            inputs.member(path, "enabled"),
            f"MIG on board {board.key} needs driver {table.min_driver[0]} or later",
        )
    requests = []
    for i, item in enumerate(items):
        p = inputs.member(gi_path, i)
        gi = r.obj(p, item, (*_GI_KEYS, *_GI_MEMORY_KEYS), ("profile",))
        name = r.str(inputs.member(p, "profile"), gi["profile"])
        profile = table.by_name.get(name)
        if profile is None:
            known = ", ".join(pr.name for pr in table.profiles)
            newer = " on this driver" if name in board.mig.by_name else ""
            r.fail(
                inputs.member(p, "profile"),
                f"unknown profile {inputs.shown(name)} for board {board.key}{newer} "
                f"(known: {known})",
            )
        start = gi.get("start")
        if start is not None:
            start = r.int(inputs.member(p, "start"), start)
            if start not in profile.placement_starts:
                r.fail(
                    inputs.member(p, "start"),
                    f"{name} can start at {_starts(profile.placement_starts)}, not {start}",
                )
        requests.append((p, gi, profile, start))
    for profile in table.profiles:
        used = [p for p, _, pr, _ in requests if pr is profile]
        if len(used) > profile.instance_count:
            r.fail(
                used[-1],
                f"at most {profile.instance_count} instance(s) of {profile.name} fit on a GPU",
            )
    _check_fixed_overlaps(
        r, [(p, pr.memory_slices, st) for p, _, pr, st in requests], "memory slices"
    )
    starts = fit_placements(
        [(pr.placement_starts, pr.memory_slices, st) for _, _, pr, st in requests]
    )
    if starts is None:
        r.fail(
            gi_path,
            f"these GPU instances do not fit on the GPU's {table.memory_slices} memory slices "
            "together",
        )
    if not table.can_coexist(pr for _, _, pr, _ in requests):
        r.fail(
            gi_path,
            "these GPU instances cannot exist together on this board and driver (more copy or "
            "media engines than the GPU has, or a profile pair the driver refuses)",
        )
    instances = []
    ids: dict[int, str] = {}
    for (p, gi, profile, _), start in zip(requests, starts):
        gid = gi.get("id")
        gid = (
            default_gpu_instance_id(start, profile.memory_slices, table.memory_slices)
            if gid is None
            else r.int(inputs.member(p, "id"), gid)
        )
        if gid in ids:
            r.fail(inputs.member(p, "id"), f"GPU instance id {gid} is also used by {ids[gid]}")
        ids[gid] = p
        cis = _parse_compute_instances(
            r, inputs.member(p, "compute_instances"), gi.get("compute_instances"), table, profile
        )
        gpm = None if gi.get("gpm") is None else read_gpm(r, inputs.member(p, "gpm"), gi["gpm"])
        memory = {key: _opt_int(r, p, gi, key, MAX_MEMORY_MIB) for key in _GI_MEMORY_KEYS}
        instances.append(GpuInstanceSpec(gid, start, profile, cis, gpm, **memory))
    return MigSpec(enabled, pending, tuple(instances))


# Keys of a GPU instance on a GPU without a profile table (a board outside the catalogue).
_DESCRIBED_GI_KEYS = (
    "profile",
    "id",
    "start",
    "profile_id",
    "memory_slices",
    "engines",
    "compute_instances",
    *_GI_MEMORY_KEYS,
)
_ENGINE_KEYS = ("copy", "decoder", "encoder", "jpeg", "ofa")
# NVML's profile IDs and memory-slice sizes by compute slices on the 8-slice boards.
# Unknown: both for boards outside the catalogue (A30 differs); a described GPU instance can
# give them (`profile_id`, `memory_slices`).
_PROFILE_ID_GUESS = {1: 19, 2: 14, 3: 9, 4: 5, 7: 0}
_MEMORY_SLICES_GUESS = {3: 4, 7: 8}
# NVML_COMPUTE_INSTANCE_PROFILE_* for a compute instance of N slices (nvml.h).
_CI_PROFILE_INDEX = {1: 0x0, 2: 0x1, 3: 0x2, 4: 0x3, 6: 0x6, 7: 0x4, 8: 0x5}


def _described_instances(
    r: Reader, path: str, items: list[object]
) -> tuple[GpuInstanceSpec, ...]:
    """GPU instances given by their own facts, for a GPU whose board has no MIG table."""
    requests = []
    for i, item in enumerate(items):
        p = inputs.member(path, i)
        gi = r.obj(
            p,
            item,
            _DESCRIBED_GI_KEYS,
            ("profile", "id", "memory_total_mib", "compute_instances"),
        )
        name = r.str(inputs.member(p, "profile"), gi["profile"])
        shape = re.fullmatch(r"(\d)g\.\d+gb(\+\S+)?", name)
        if shape is None:
            r.fail(inputs.member(p, "profile"), f"expected a profile name like '1g.10gb', got {name!r}")
        slices = int(shape.group(1))
        size = r.int(
            inputs.member(p, "memory_slices"),
            gi.get("memory_slices", _MEMORY_SLICES_GUESS.get(slices, slices)),
            1,
            mig_profiles.MEMORY_SLICES,
        )
        engines = r.obj(inputs.member(p, "engines"), gi.get("engines", {}), _ENGINE_KEYS)
        counts = {k: r.int(inputs.member(inputs.member(p, "engines"), k), engines.get(k, 0)) for k in _ENGINE_KEYS}
        ci_path = inputs.member(p, "compute_instances")
        cis = []
        for j, ci_item in enumerate(r.list(ci_path, gi["compute_instances"])):
            cp = inputs.member(ci_path, j)
            ci = r.obj(cp, ci_item, ("multiprocessor_count", "slices", "uuid"),
                       ("multiprocessor_count",))
            ci_slices = ci.get("slices")
            if ci_slices is None and len(gi["compute_instances"]) > 1:  # type: ignore[arg-type]
                r.fail(inputs.member(cp, "slices"), "required when a GPU instance has several")
            cis.append(
                (
                    r.int(inputs.member(cp, "multiprocessor_count"), ci["multiprocessor_count"], 1),
                    slices if ci_slices is None else r.int(inputs.member(cp, "slices"), ci_slices, 1, slices),
                    _opt_str(r, cp, ci, "uuid"),
                )
            )
        if not cis:
            r.fail(ci_path, "a GPU instance needs at least one compute instance")
        start = gi.get("start")
        profile = GpuInstanceProfile(
            index=-1,  # not listed: the board's profile table is unknown
            id=r.int(inputs.member(p, "profile_id"), gi.get("profile_id", _PROFILE_ID_GUESS.get(slices, 0))),
            name=name,
            slice_count=slices,
            memory_slices=size,
            instance_count=1,
            # Unknown: the board's placements; a run of `size` slots at a multiple of it.
            placement_starts=tuple(range(0, mig_profiles.MEMORY_SLICES - size + 1, size)),
            multiprocessor_count=sum(sms for sms, _, _ in cis),
            copy_engine_count=counts["copy"],
            decoder_count=counts["decoder"],
            encoder_count=counts["encoder"],
            jpeg_count=counts["jpeg"],
            ofa_count=counts["ofa"],
            memory_mib=r.int(inputs.member(p, "memory_total_mib"), gi["memory_total_mib"]),
        )
        requests.append((p, gi, profile, None if start is None else r.int(inputs.member(p, "start"), start), cis))
    _check_fixed_overlaps(r, [(p, pr.memory_slices, st) for p, _, pr, st, _ in requests], "memory slices")
    starts = fit_placements([(pr.placement_starts, pr.memory_slices, st) for _, _, pr, st, _ in requests])
    if starts is None:
        r.fail(path, "these GPU instances do not fit on the GPU's 8 memory slices together")
    instances = []
    ids: dict[int, str] = {}
    for (p, gi, profile, _, cis), start in zip(requests, starts):
        gid = r.int(inputs.member(p, "id"), gi["id"])
        if gid in ids:
            r.fail(inputs.member(p, "id"), f"GPU instance id {gid} is also used by {ids[gid]}")
        ids[gid] = p
        computes = []
        offset = 0
        for number, (sms, ci_slices, ci_uuid) in enumerate(cis):
            ci_name = profile.name
            if ci_slices != profile.slice_count:
                ci_name = f"{ci_slices}c.{profile.name}"
            ci_profile = ComputeInstanceProfile(
                _CI_PROFILE_INDEX.get(ci_slices, 0), ci_name, ci_slices, 1, (offset,), sms
            )
            computes.append(ComputeInstanceSpec(number, offset, ci_profile, None, uuid=ci_uuid))
            offset += ci_slices
        memory = {key: _opt_int(r, p, gi, key, MAX_MEMORY_MIB) for key in _GI_MEMORY_KEYS}
        instances.append(GpuInstanceSpec(gid, start, profile, tuple(computes), **memory))
    return tuple(instances)


def _parse_compute_instances(
    r: Reader, path: str, value: object, table: MigTable, gi: GpuInstanceProfile
) -> tuple[ComputeInstanceSpec, ...]:
    offered = {c.slice_count: c for c in table.ci_profiles[gi.id]}
    whole = offered[gi.slice_count]
    if value is None:
        return (ComputeInstanceSpec(0, 0, whole, None),)
    requests = []
    for i, item in enumerate(r.list(path, value)):
        p = inputs.member(path, i)
        data = r.obj(p, item, ("slices", "memory_used_mib", "multiprocessor_count", "uuid"),
                     ("slices",))
        slices = r.int(inputs.member(p, "slices"), data["slices"], 1)
        profile = offered.get(slices)
        if profile is None:
            r.fail(
                inputs.member(p, "slices"),
                f"a {gi.name} GPU instance offers compute instances of "
                f"{_starts(sorted(offered))} slices, not {slices}",
            )
        memory = data.get("memory_used_mib")
        requests.append(
            (
                p,
                profile,
                None
                if memory is None
                else r.int(inputs.member(p, "memory_used_mib"), memory, 0, MAX_MEMORY_MIB),
                _opt_int(r, p, data, "multiprocessor_count", MAX_SMS),
                _opt_str(r, p, data, "uuid"),
            )
        )
    if not requests:
        r.fail(path, "a GPU instance needs at least one compute instance")
    for profile in offered.values():
        used = [p for p, pr, *_ in requests if pr is profile]
        if len(used) > profile.instance_count:
            r.fail(
                used[-1],
                f"at most {profile.instance_count} compute instance(s) of {profile.name} fit",
            )
    starts = fit_placements(
        [(pr.placement_starts, pr.slice_count, None) for _, pr, *_ in requests]
    )
    if starts is None:
        r.fail(
            path, f"these compute instances do not fit in the {gi.slice_count} slices of {gi.name}"
        )
    # Unknown: NVML numbers CIs in creation order; the list order stands in for it.
    return tuple(
        ComputeInstanceSpec(i, start, profile, memory, sms, ci_uuid)
        for i, ((_, profile, memory, sms, ci_uuid), start) in enumerate(zip(requests, starts))
    )


def _check_fixed_overlaps(r: Reader, items: list[tuple[str, int, int | None]], what: str) -> None:
    """Name the first pair of explicitly placed instances that overlap."""
    for i, (path, size, start) in enumerate(items):
        if start is None:
            continue
        for other_path, other_size, other in items[:i]:
            if other is not None and (
                mig_profiles.placement_mask(start, size)
                & mig_profiles.placement_mask(other, other_size)
            ):
                r.fail(
                    inputs.member(path, "start"),
                    f"placement {start}:{size} overlaps {other_path} "
                    f"({other}:{other_size}) on the {what}",
                )


def _starts(values: Iterable[int]) -> str:
    return "{" + ",".join(str(v) for v in values) + "}"


# ---------------------------------------------------------------------------------------------
# Top level


def _read_driver(r: Reader, value: object) -> DriverSpec:
    data = r.obj("driver", value, ("version", "cuda_version", "nvml_version", "symbols"))
    version = r.str("driver.version", data.get("version", "550.54.15"))
    if not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,6}){1,3}", version):
        r.fail("driver.version",
               f"expected a version such as '550.54.15', got {inputs.shown(version)}")
    numbers = tuple(int(n) for n in version.split("."))
    branch = max((b for b in _CUDA_BY_BRANCH if b <= numbers[0]), default=450)
    cuda = r.int(
        "driver.cuda_version", data.get("cuda_version", _CUDA_BY_BRANCH[branch]), 1000, 99_990
    )
    nvml = r.str("driver.nvml_version", data.get("nvml_version", f"{cuda // 1000}.{version}"))
    symbols = None
    if "symbols" in data:
        names = r.list("driver.symbols", data["symbols"])
        if len(names) > MAX_SYMBOLS:
            r.fail("driver.symbols", f"at most {MAX_SYMBOLS} functions, got {len(names)}")
        for i, name in enumerate(names):
            if not re.fullmatch(r"nvml\w{1,100}", r.str(f"driver.symbols[{i}]", name)):
                r.fail(f"driver.symbols[{i}]", f"not an NVML function name: {inputs.shown(name)}")
        symbols = frozenset(names)  # type: ignore[arg-type]
    return DriverSpec(version, numbers, cuda, nvml, symbols)


def _read_fault(r: Reader, index: int, value: object, gpu_count: int) -> FaultSpec:
    path = f"faults[{index}]"
    keys = ("call", "gpu", "error", "delay_seconds", "after_samples", "for_samples")
    data = r.obj(path, value, keys, ("call",))
    call = r.str(inputs.member(path, "call"), data["call"])
    if fault_name(call) not in known_fault_calls():
        r.fail(inputs.member(path, "call"), f"unknown or unsimulated NVML function {inputs.shown(call)}")
    gpu = data.get("gpu")
    if gpu is not None:
        gpu = r.int(inputs.member(path, "gpu"), gpu, 0, max(gpu_count - 1, 0))
        if gpu_count == 0:
            r.fail(inputs.member(path, "gpu"), "the scenario has no GPUs")
    error = data.get("error")
    code = (
        None if error is None else ERROR_CODES[r.choice(inputs.member(path, "error"), error, ERROR_CODES)]
    )
    delay = r.number(inputs.member(path, "delay_seconds"), data.get("delay_seconds", 0), MAX_DELAY_SECONDS)
    if code is None and not delay:
        r.fail(path, "a fault needs an error or a delay_seconds")
    return FaultSpec(fault_name(call), gpu, code, delay, r.window(path, data))


def _read_imported(r: Reader, value: object) -> Imported | None:
    """The `imported` object: provenance of a scenario made from an nvidia-smi dump."""
    if value is None:
        return None
    keys = ("source", "kind", "attached_gpus", "timestamp", "guessed", "masked")
    data = r.obj("imported", value, keys, ("source", "kind"))
    attached = data.get("attached_gpus")
    for i, note in enumerate(r.list("imported.guessed", data.get("guessed", []))):
        r.str(f"imported.guessed[{i}]", note)
    return Imported(
        r.str("imported.source", data["source"]),
        r.choice("imported.kind", data["kind"], ("xml", "text", "capture", "record")),
        None if attached is None else r.int("imported.attached_gpus", attached),
        _opt_str(r, "imported", data, "timestamp"),
        r.bool("imported.masked", data.get("masked", False)),
    )


def parse_scenario(data: object, source: str, name: str) -> Scenario:
    """Validate decoded JSON into a Scenario; `source` names the file in errors."""
    r = Reader(source)
    keys = (
        "format",
        "description",
        "driver",
        "privileged",
        "library",
        "init_error",
        "init_error_attempts",
        "faults",
        "gpus",
        "imported",
    )
    if not isinstance(data, dict):
        r.fail("(top level)", f"expected an object, got {_kind(data)}")
    top = r.obj("", data, keys, ("format",))
    if top["format"] != 1 or isinstance(top["format"], bool):
        r.fail("format",
               f"unsupported format {inputs.shown(top['format'])} (this hwinfo reads format 1)")
    driver = _read_driver(r, top.get("driver", {}))
    init_error = top.get("init_error")
    attempts = top.get("init_error_attempts")
    if attempts is not None:
        if init_error is None:
            r.fail("init_error_attempts", "only meaningful with init_error")
        attempts = r.int("init_error_attempts", attempts, 1)
    gpu_items = r.list("gpus", top.get("gpus", []))
    if len(gpu_items) > MAX_GPUS:
        r.fail("gpus", f"at most {MAX_GPUS} GPUs, got {len(gpu_items)}")
    imported = _read_imported(r, top.get("imported"))
    gpus = tuple(
        _read_gpu(r, name, driver.version_tuple, i, g, imported is not None)
        for i, g in enumerate(gpu_items)
    )
    identities: dict[str, Callable[[GpuSpec], object]] = {
        "uuid": lambda g: g.uuid.lower(),
        "pci_bus_id": lambda g: parse_pci_bus_id(g.pci_bus_id),
    }
    for what, identity in identities.items():
        seen: dict[object, int] = {}
        for gpu in gpus:
            key = identity(gpu)
            if key in seen:
                r.fail(f"gpus[{gpu.index}].{what}", f"same as gpus[{seen[key]}]")
            seen[key] = gpu.index
    return Scenario(
        name=name,
        source=source,
        description=r.str("description", top.get("description", "")),
        imported=imported,
        driver=driver,
        privileged=r.bool("privileged", top.get("privileged", True)),
        library_missing=r.choice("library", top.get("library", "present"), ("present", "missing"))
        == "missing",
        init_error=None
        if init_error is None
        else ERROR_CODES[r.choice("init_error", init_error, ERROR_CODES)],
        init_error_attempts=attempts,
        faults=tuple(
            _read_fault(r, i, f, len(gpus))
            for i, f in enumerate(r.list("faults", top.get("faults", [])))
        ),
        gpus=gpus,
    )


def _builtin_dir() -> Path:
    return Path(str(resources.files("hwinfo.sim").joinpath(SCENARIO_DIR)))


def read_document(source: str | os.PathLike[str]) -> tuple[Any, str, str]:
    """The decoded JSON of a built-in scenario NAME or a scenario file, how errors name it,
    and the name its GPUs' derived UUIDs are seeded with; ScenarioError if unreadable."""
    text_source = os.fspath(source)
    builtin = _builtin_dir() / f"{text_source}.json"
    if os.sep not in text_source and not text_source.endswith(".json") and builtin.is_file():
        path, label, name = builtin, text_source, text_source
    else:
        path, label, name = Path(text_source), text_source, Path(text_source).stem
    what = f"scenario {label}"
    try:
        return inputs.parse_json(inputs.read_text(path, what), what), label, name
    except inputs.InputError as exc:
        if not os.path.lexists(path):
            known = ", ".join(n for n, _ in list_scenarios()) or "none"
            raise ScenarioError(f"{what}: no such file, and no built-in scenario of that name "
                                f"(built-in: {known})") from None
        raise ScenarioError(str(exc)) from None


def load_scenario(source: str | os.PathLike[str]) -> Scenario:
    """A built-in scenario by NAME (hwinfo/sim/scenarios/NAME.json) or a scenario file path."""
    return parse_scenario(*read_document(source))


def list_scenarios() -> list[tuple[str, str]]:
    """(name, description) of every built-in scenario, by name."""
    out = []
    for path in sorted(_builtin_dir().glob("*.json")):
        try:
            description = json.loads(path.read_text(encoding="utf-8")).get("description", "")
        except (OSError, ValueError, AttributeError):
            description = "(unreadable)"
        out.append((path.stem, description if isinstance(description, str) else ""))
    return out
