"""What each `nvidia-smi -q -x` element becomes in a scenario: the converters of nvidia-smi's
text, the mapping tables of its schemas (v10 to v13), and the reader that applies them.

Values nvidia-smi printed as not available are left out, so they read NotSupported, never 0.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hwinfo.inputs import shown
from hwinfo.sim.scenario_gpu import parse_pci_bus_id
from hwinfo.sim.scenario_model import ARCHITECTURES, CLOCK_EVENT_REASONS, COMPUTE_MODES


class DumpError(ValueError):
    """The text is not a usable nvidia-smi dump; the message says what is wrong."""


# Words nvidia-smi prints instead of a value. Bracketed text ("[N/A]", "[Not Supported]",
# "[Unknown Error]", "[GPU requires reset]", masked "[REDACTED]") is never a value either.
_UNAVAILABLE = frozenset(
    {
        "",
        "n/a",
        "not supported",
        "unknown error",
        "insufficient permissions",
        "requested functionality has been deprecated",
    }
)


def _value(element: ET.Element | None) -> str | None:
    """The element's text with whitespace collapsed, or None when nvidia-smi had no value."""
    if element is None:
        return None
    text = " ".join((element.text or "").split())
    if text.lower() in _UNAVAILABLE or (text.startswith("[") and text.endswith("]")):
        return None
    # "Not available in WDDM driver model" (a Windows process's memory), and the like.
    if text.lower().startswith("not available"):
        return None
    return text


# --- converters: nvidia-smi text -> scenario value; ValueError on text they do not expect ---


def _quantity(unit: str, kind: Callable[[str], int | float] = int) -> Callable[[str], Any]:
    """Parser for "<number> <unit>" ("19968 MiB", "66.92 W", "16x")."""
    pattern = re.compile(rf"(\d+(?:\.\d+)?)\s*{re.escape(unit)}")

    def convert(text: str) -> int | float:
        match = pattern.fullmatch(text)
        if match is None:
            raise ValueError(f"expected a number in {unit}")
        return kind(match.group(1))

    return convert


def _choice(mapping: dict[str, Any]) -> Callable[[str], Any]:
    """Parser for one of a fixed set of words (case-insensitive)."""
    lowered = {word.lower(): value for word, value in mapping.items()}

    def convert(text: str) -> Any:
        try:
            return lowered[text.lower()]
        except KeyError:
            raise ValueError(f"expected one of {', '.join(mapping)}") from None

    return convert


def _hex_id(text: str) -> str:
    """PCI ids come as "20B010DE" (newer) or "0x20B010DE"; the format takes "0x20B010DE"."""
    digits = text[2:] if text.lower().startswith("0x") else text
    if not re.fullmatch(r"[0-9A-Fa-f]{1,8}", digits):
        raise ValueError("expected a hexadecimal PCI id")
    return f"0x{int(digits, 16):08X}"


def pci_bus_id(text: str) -> str:
    """NVML's form "00000000:07:00.0" from either it or the 4-digit-domain "0000:07:00.0"."""
    parsed = parse_pci_bus_id(text)
    if parsed is None:
        raise ValueError("expected a PCI bus id like 00000000:07:00.0")
    domain, bus, device = parsed
    return f"{domain:08X}:{bus:02X}:{device:02X}.{text[-1]}"


def _pstate(text: str) -> int:
    if not re.fullmatch(r"P(\d|1[0-5])", text):
        raise ValueError("expected a P-state P0..P15")
    return int(text[1:])


def _cuda_version(text: str) -> int:
    """nvidia-smi's "12.2" as NVML's integer 12020 (major * 1000 + minor * 10)."""
    match = re.fullmatch(r"(\d+)\.(\d+)", text)
    if match is None:
        raise ValueError("expected a CUDA version like 12.2")
    return int(match.group(1)) * 1000 + int(match.group(2)) * 10


_mib = _quantity("MiB")
_watts = _quantity("W", float)
_celsius = _quantity("C")
_percent = _quantity("%")
_mhz = _quantity("MHz")
_kbps = _quantity("KB/s")
_lanes = _quantity("x")
_enabled = _choice({"Enabled": True, "Disabled": False})
_yes_no = _choice({"Yes": True, "No": False})
# nvidia-smi prints "Exclusive_Process" where the format says "exclusive_process".
_compute_mode = _choice({mode: mode for mode in COMPUTE_MODES})


def _architecture(text: str) -> str | None:
    """nvidia-smi's "Ampere" or "Ada Lovelace" as the format's name; None for one it lacks."""
    # A newer architecture than the format knows is left out rather than failing the import.
    name = text.lower().removesuffix(" lovelace")
    return name if name in ARCHITECTURES else None


# MPS servers ("M") and their clients ("M+C") are listed by NVML as compute processes.
_process_type = _choice(
    {"C": "compute", "G": "graphics", "C+G": "compute+graphics", "M": "compute", "M+C": "compute"}
)


# --- the mapping tables ---


@dataclass(frozen=True)
class _Field:
    """Where one scenario value comes from.

    `paths` are the spellings of the same field in different nvidia-smi schemas: the first
    element present is read, and when nvidia-smi had no value there the key stays unset. With
    `total`, every present path is read and the available values are added up (ECC counters
    are split by memory kind). A later field may fill a key an earlier one left unset: that is
    how a fallback reading (instant power when the average is N/A) is written. `convert`
    raises ValueError on text it does not expect, or answers None for a value to leave out.
    """

    key: str
    convert: Callable[[str], Any]
    paths: tuple[str, ...]
    total: bool = False


def _f(key: str, convert: Callable[[str], Any], *paths: str) -> _Field:
    return _Field(key, convert, paths)


def _sum(key: str, *paths: str) -> _Field:
    return _Field(key, int, paths, total=True)


def _ecc_counters(scope: str) -> tuple[_Field, _Field]:
    """ECC totals as NVML's GetTotalEccErrors sums them: SRAM + DRAM (Ampere schema), or the
    per-location single/double-bit totals (older boards)."""
    path = f"ecc_errors/{scope}"
    return (
        _sum(
            f"ecc.{scope}.corrected",
            f"{path}/sram_correctable",
            f"{path}/dram_correctable",
            f"{path}/single_bit/total",
        ),
        _sum(
            f"ecc.{scope}.uncorrected",
            f"{path}/sram_uncorrectable",
            f"{path}/sram_uncorrectable_parity",
            f"{path}/sram_uncorrectable_secded",
            f"{path}/dram_uncorrectable",
            f"{path}/double_bit/total",
        ),
    )


def _clock_fields(key: str, element: str) -> tuple[_Field, ...]:
    names = {
        "graphics": "graphics_clock",
        "sm": "sm_clock",
        "memory": "mem_clock",
        "video": "video_clock",
    }
    return tuple(_f(f"{key}.{name}", _mhz, f"{element}/{tag}") for name, tag in names.items())


def _power_fields(key: str, v12: str, *v13: str) -> tuple[_Field, ...]:
    """One power value in every schema, best reading first.

    Schema v12 has one `power_readings`; drivers 535-565 split GPU and module (GPU + CPU on
    Grace boards) readings but keep the v12 names, v13 renames them. Later names and the
    module stand in only when the earlier ones are N/A.
    """
    names = (v12, *(name for name in v13 if name != v12))
    return (
        _f(key, _watts, f"power_readings/{v12}", f"gpu_power_readings/{v12}"),
        *(_f(key, _watts, f"gpu_power_readings/{name}") for name in names[1:]),
        *(_f(key, _watts, f"module_power_readings/{name}") for name in names),
    )


_LINK = "pci/pci_gpu_link_info"
GPU_FIELDS: tuple[_Field, ...] = (
    _f("name", str, "product_name"),
    _f("uuid", str, "uuid"),
    _f("serial", str, "serial"),
    _f("vbios_version", str, "vbios_version"),
    # Schemas before v12 print NVML's board part number as gpu_part_number; v12 and later add
    # board_part_number and use gpu_part_number for the chip's, so the first present one wins.
    _f("board_part_number", str, "board_part_number", "gpu_part_number"),
    _f("pci_bus_id", pci_bus_id, "pci/pci_bus_id"),
    _f("pci_device_id", _hex_id, "pci/pci_device_id"),
    _f("pci_subsystem_id", _hex_id, "pci/pci_sub_system_id"),
    _f("minor_number", int, "minor_number"),
    _f("architecture", _architecture, "product_architecture"),
    _f("addressing_mode", _choice({"None": "none", "HMM": "hmm", "ATS": "ats"}), "addressing_mode"),
    # Windows only (Linux dumps print N/A); nvidia-smi prints NVML's WDM as TCC.
    *(
        _f(f"driver_model.{when}", _choice({"WDDM": "wddm", "TCC": "tcc", "MCDM": "mcdm"}),
           f"driver_model/{when}_dm")
        for when in ("current", "pending")
    ),
    _f("persistence_mode", _enabled, "persistence_mode"),
    _f("display_mode", _enabled, "display_mode"),
    _f("display_active", _enabled, "display_active"),
    _f("accounting.enabled", _enabled, "accounting_mode"),
    _f("accounting.buffer_size", int, "accounting_mode_buffer_size"),
    _f("compute_mode", _compute_mode, "compute_mode"),
    _f("memory_total_mib", _mib, "fb_memory_usage/total"),
    _f("memory_reserved_mib", _mib, "fb_memory_usage/reserved"),
    _f("memory_used_mib", _mib, "fb_memory_usage/used"),
    _f("memory_free_mib", _mib, "fb_memory_usage/free"),
    _f("bar1_total_mib", _mib, "bar1_memory_usage/total"),
    _f("bar1_used_mib", _mib, "bar1_memory_usage/used"),
    _f("utilization_gpu_percent", _percent, "utilization/gpu_util"),
    _f("utilization_memory_percent", _percent, "utilization/memory_util"),
    _f("encoder_percent", _percent, "utilization/encoder_util"),
    _f("decoder_percent", _percent, "utilization/decoder_util"),
    _f("temperature_c", _celsius, "temperature/gpu_temp"),
    _f("temperature_slowdown_c", _celsius, "temperature/gpu_temp_slow_threshold"),
    _f("temperature_shutdown_c", _celsius, "temperature/gpu_temp_max_threshold"),
    _f("temperature_gpu_max_c", _celsius, "temperature/gpu_temp_max_gpu_threshold"),
    _f("temperature_memory_max_c", _celsius, "temperature/gpu_temp_max_mem_threshold"),
    _f("fan_percent", _percent, "fan_speed"),
    # NVML's GetPowerUsage is the 1 s average on Ampere and later; v13 prints it as average.
    *_power_fields("power_draw_w", "power_draw", "average_power_draw", "instant_power_draw"),
    *_power_fields("power_limit_w", "enforced_power_limit", "current_power_limit"),
    *_power_fields("power_default_limit_w", "default_power_limit", "default_power_limit"),
    *_power_fields("power_min_limit_w", "min_power_limit", "min_power_limit"),
    *_power_fields("power_max_limit_w", "max_power_limit", "max_power_limit"),
    *_clock_fields("clocks_mhz", "clocks"),
    *_clock_fields("max_clocks_mhz", "max_clocks"),
    _f("pstate", _pstate, "performance_state"),
    _f("pcie.gen", int, f"{_LINK}/pcie_gen/current_link_gen"),
    _f("pcie.max_gen", int, f"{_LINK}/pcie_gen/max_link_gen"),
    _f("pcie.gpu_max_gen", int, f"{_LINK}/pcie_gen/max_device_link_gen"),
    _f("pcie.width", _lanes, f"{_LINK}/link_widths/current_link_width"),
    _f("pcie.max_width", _lanes, f"{_LINK}/link_widths/max_link_width"),
    _f("pcie.tx_kbps", _kbps, "pci/tx_util"),
    _f("pcie.rx_kbps", _kbps, "pci/rx_util"),
    _f("pcie.replay_counter", int, "pci/replay_counter"),
    _f("ecc.enabled", _enabled, "ecc_mode/current_ecc"),
    _f("ecc.pending", _enabled, "ecc_mode/pending_ecc"),
    *_ecc_counters("volatile"),
    *_ecc_counters("aggregate"),
    _f(
        "retired_pages.single_bit",
        int,
        "retired_pages/multiple_single_bit_retirement/retired_count",
    ),
    _f("retired_pages.double_bit", int, "retired_pages/double_bit_retirement/retired_count"),
    # Older schemas called NVML's pending-retirement status "pending_blacklist".
    _f(
        "retired_pages.pending",
        _yes_no,
        "retired_pages/pending_retirement",
        "retired_pages/pending_blacklist",
    ),
    _f("remapped_rows.correctable", int, "remapped_rows/remapped_row_corr"),
    _f("remapped_rows.uncorrectable", int, "remapped_rows/remapped_row_unc"),
    _f("remapped_rows.pending", _yes_no, "remapped_rows/remapped_row_pending"),
    _f("remapped_rows.failure", _yes_no, "remapped_rows/remapped_row_failure"),
    _f("mig.enabled", _enabled, "mig_mode/current_mig"),
    _f("mig.pending", _enabled, "mig_mode/pending_mig"),
)

PROCESS_FIELDS: tuple[_Field, ...] = (
    _f("pid", int, "pid"),
    _f("type", _process_type, "type"),
    _f("used_memory_mib", _mib, "used_memory"),
    _f("gpu_instance_id", int, "gpu_instance_id"),
    _f("compute_instance_id", int, "compute_instance_id"),
    # nvidia-smi prints the process name (NVML's GetProcessName), not the command line.
    _f("name", str, "process_name"),
)

# What a <mig_device> tells about its compute instance; not scenario keys, input to the
# profile match below.
MIG_DEVICE_FIELDS: tuple[_Field, ...] = (
    _f("index", int, "index"),
    _f("gpu_instance_id", int, "gpu_instance_id"),
    _f("compute_instance_id", int, "compute_instance_id"),
    _f("sm_count", int, "device_attributes/shared/multiprocessor_count"),
    _f("copy_engines", int, "device_attributes/shared/copy_engine_count"),
    _f("encoders", int, "device_attributes/shared/encoder_count"),
    _f("decoders", int, "device_attributes/shared/decoder_count"),
    _f("jpegs", int, "device_attributes/shared/jpg_count"),
    _f("ofas", int, "device_attributes/shared/ofa_count"),
    _f("memory_total_mib", _mib, "fb_memory_usage/total"),
    _f("memory_used_mib", _mib, "fb_memory_usage/used"),
    _f("memory_free_mib", _mib, "fb_memory_usage/free"),
    _f("bar1_total_mib", _mib, "bar1_memory_usage/total"),
    _f(
        "sram_uncorrected_volatile",
        int,
        "ecc_error_count/volatile_count/sram_uncorrectable",  # XML
        "ecc_errors/volatile/sram_uncorrectable",  # text
    ),
)

# nvidia-smi's clock event (formerly throttle) reason tags -> the format's names: the same but
# for one plural.
_CLOCK_EVENT_REASONS = {
    **{name: name for name in CLOCK_EVENT_REASONS},
    "display_clocks_setting": "display_clock_setting",
}
# Schema v13 renamed clocks_throttle_reasons to clocks_event_reasons.
_CLOCK_EVENT_BLOCKS = (
    ("clocks_event_reasons", "clocks_event_reason_"),
    ("clocks_throttle_reasons", "clocks_throttle_reason_"),
)


def _set(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for name in parents:
        target = target.setdefault(name, {})
    target[leaf] = value


def _has(target: dict[str, Any], dotted: str) -> bool:
    for name in dotted.split("."):
        if not isinstance(target, dict) or name not in target:
            return False
        target = target[name]
    return True


def read_fields(element: ET.Element, fields: Iterable[_Field], where: str) -> dict[str, Any]:
    """Apply a mapping table to one element; `where` names it in error messages."""
    out: dict[str, Any] = {}
    for field in fields:
        if _has(out, field.key):
            continue
        present = [(path, element.find(path)) for path in field.paths]
        present = [(path, found) for path, found in present if found is not None]
        if not field.total:
            present = present[:1]
        values = []
        for path, found in present:
            text = _value(found)
            if text is None:
                continue
            try:
                value = field.convert(text)
            except ValueError as err:
                raise DumpError(f"{where}: <{path}> is {shown(text)}: {err}") from None
            if value is not None:
                values.append(value)
        if values:
            _set(out, field.key, sum(values) if field.total else values[0])
    return out


def clock_event_reasons(gpu: ET.Element) -> list[str] | None:
    """The reasons shown as Active; None when the dump has no reasons (e.g. a vGPU: N/A)."""
    for block_tag, prefix in _CLOCK_EVENT_BLOCKS:
        block = gpu.find(block_tag)
        if block is None or len(block) == 0:
            continue
        return [
            _CLOCK_EVENT_REASONS[child.tag.removeprefix(prefix)]
            for child in block
            if child.tag.removeprefix(prefix) in _CLOCK_EVENT_REASONS and _value(child) == "Active"
        ]
    return None


DRIVER_FIELDS: tuple[_Field, ...] = (
    _f("version", str, "driver_version"),
    _f("cuda_version", _cuda_version, "cuda_version"),
)
LOG_FIELDS: tuple[_Field, ...] = (
    _f("attached_gpus", int, "attached_gpus"),
    _f("timestamp", str, "timestamp"),
)

# Blocks whose members the format fills with 0/false when left out: a dump that shows only
# some of them gives no block at all (NotSupported) rather than invented zeros.
WHOLE_BLOCKS: dict[str, tuple[str, ...]] = {
    "ecc": ("enabled",),
    "mig": ("enabled",),
    "retired_pages": ("single_bit", "double_bit", "pending"),
    "remapped_rows": ("correctable", "uncorrectable", "pending", "failure"),
}
