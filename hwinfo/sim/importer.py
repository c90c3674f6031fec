"""Turn an nvidia-smi dump into a simulator scenario (format 1, docs/scenario-format.md).

Three forms are read, told apart by their content: `nvidia-smi -q -x` XML, `nvidia-smi -q`
text (importer_text.py turns it into the same element tree) and whole capture files with
several commands' output (importer_capture.py), where a `-q` section is the dump and the
`-L`, `mig -lgi` and `nvlink -s` sections add facts `-q` does not print.

The scenario reproduces what nvidia-smi showed and nothing else: it is marked `imported`,
so no catalogue default stands in for a value the dump lacks. Values nvidia-smi printed as
not available ("N/A", "[Not Supported]", "Requested functionality has been deprecated",
masked "[REDACTED]", ...) are left out, so they read NotSupported - never 0.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hwinfo.inputs import shown
from hwinfo.mig import profiles as mig_profiles
from hwinfo.mig.profiles import GpuInstanceProfile, MigTable
from hwinfo.sim.boards import BOARDS, Board
from hwinfo.sim.importer_capture import (
    AccountedApp,
    Capture,
    ListedMigDevice,
    MigPlacement,
    looks_like_capture,
    parse_capture,
)
from hwinfo.sim.importer_text import looks_like_text_dump, parse_text_dump
from hwinfo.sim.scenario_gpu import parse_pci_bus_id
from hwinfo.sim.scenario_model import ARCHITECTURES, CLOCK_EVENT_REASONS, COMPUTE_MODES

__all__ = ["DumpError", "import_dump", "import_nvidia_smi_xml"]


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


def _pci_bus_id(text: str) -> str:
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
_GPU_FIELDS: tuple[_Field, ...] = (
    _f("name", str, "product_name"),
    _f("uuid", str, "uuid"),
    _f("serial", str, "serial"),
    _f("vbios_version", str, "vbios_version"),
    # Schemas before v12 print NVML's board part number as gpu_part_number; v12 and later add
    # board_part_number and use gpu_part_number for the chip's, so the first present one wins.
    _f("board_part_number", str, "board_part_number", "gpu_part_number"),
    _f("pci_bus_id", _pci_bus_id, "pci/pci_bus_id"),
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

_PROCESS_FIELDS: tuple[_Field, ...] = (
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
_MIG_DEVICE_FIELDS: tuple[_Field, ...] = (
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


def _read(element: ET.Element, fields: Iterable[_Field], where: str) -> dict[str, Any]:
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


def _clock_event_reasons(gpu: ET.Element) -> list[str] | None:
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


_DRIVER_FIELDS: tuple[_Field, ...] = (
    _f("version", str, "driver_version"),
    _f("cuda_version", _cuda_version, "cuda_version"),
)
_LOG_FIELDS: tuple[_Field, ...] = (
    _f("attached_gpus", int, "attached_gpus"),
    _f("timestamp", str, "timestamp"),
)

# Blocks whose members the format fills with 0/false when left out: a dump that shows only
# some of them gives no block at all (NotSupported) rather than invented zeros.
_WHOLE_BLOCKS: dict[str, tuple[str, ...]] = {
    "ecc": ("enabled",),
    "mig": ("enabled",),
    "retired_pages": ("single_bit", "double_bit", "pending"),
    "remapped_rows": ("correctable", "uncorrectable", "pending", "failure"),
}

_MIG_DEVICE_REQUIRED = ("gpu_instance_id", "compute_instance_id", "sm_count", "memory_total_mib")
# mig_device attribute -> GpuInstanceProfile attribute; the engines that tell 1g from 1g+me.
_MIG_ENGINES = (("decoders", "decoder_count"), ("jpegs", "jpeg_count"), ("ofas", "ofa_count"))
# Key order of a GPU instance in the scenario file.
_GI_ORDER = (
    "profile",
    "id",
    "start",
    "memory_total_mib",
    "memory_used_mib",
    "memory_free_mib",
    "bar1_total_mib",
    "sram_uncorrected_volatile",
    "compute_instances",
    "guessed",
)
# What every MIG device of a GPU instance shows alike: its memory, BAR1 and SRAM error figures.
_GI_DUMP = (
    "memory_total_mib",
    "memory_used_mib",
    "memory_free_mib",
    "bar1_total_mib",
    "sram_uncorrected_volatile",
)


# Relative tolerance between a MIG device's memory and its profile's: drivers differ by up to
# ~1.5% (R450 showed 20224 and 20096 MiB for 3g.20gb's 19968; older A100-80GB 1g.10gb: 9728).
_MIG_MEMORY_TOLERANCE = 0.05


@dataclass(frozen=True)
class _Extras:
    """What a capture file's other sections add to its `-q` section."""

    mig_listed: dict[tuple[int, int], ListedMigDevice]  # (GPU, MIG device index) -> `-L` line
    placements: dict[tuple[int, int], MigPlacement]  # (GPU, GI id) -> placement
    nvlink: dict[int, int]  # GPU -> active links
    masked: bool = False  # the capture says it masked identifiers
    accounted: dict[str, list[AccountedApp]] = dataclasses.field(default_factory=dict)  # by bus id

    @classmethod
    def of(cls, capture: Capture | None, label: str = "") -> _Extras:
        if capture is None:
            return cls({}, {}, {})
        return cls(
            capture.mig_devices_listed(),
            capture.gpu_instance_placements(),
            capture.nvlink_active(),
            capture.masked(),
            {_pci_bus_id(bus): apps for bus, apps in capture.accounted_apps(label).items()},
        )


def import_dump(text: str, source_name: str, section: str | None = None) -> dict[str, Any]:
    """A scenario from XML, `-q` text or a capture file, told apart by content.

    `section` picks a capture file's `-q` section by its label ("idle", "load" or the whole
    "load :: query (-q)"); default the last one.
    """
    if text.lstrip("\ufeff \t\r\n").startswith("<"):
        if section is not None:
            raise DumpError(f"{source_name}: an XML dump has no sections to choose from")
        return import_nvidia_smi_xml(text, source_name)
    if looks_like_capture(text):
        return _import_capture(parse_capture(text), source_name, section)
    if looks_like_text_dump(text):
        if section is not None:
            raise DumpError(f"{source_name}: a single nvidia-smi -q dump has no sections")
        return _import_root(_text_root(text, source_name), source_name, "text", _Extras.of(None))
    raise DumpError(
        f"{source_name}: neither nvidia-smi -q -x XML, nvidia-smi -q text, nor a capture "
        "file with an nvidia-smi -q section"
    )


def _text_root(text: str, where: str) -> ET.Element:
    try:
        return parse_text_dump(text)
    except ValueError as err:
        raise DumpError(f"{where}: {err}") from None


def _import_capture(capture: Capture, source_name: str, section: str | None) -> dict[str, Any]:
    candidates = capture.query_sections()
    if not candidates:
        raise DumpError(f"{source_name}: the capture file has no `nvidia-smi -q` section")
    if section is not None:
        labels = [s.label for s in candidates]
        candidates = [
            s for s in candidates if s.label == section or s.label.startswith(f"{section} ::")
        ]
        if not candidates:
            raise DumpError(
                f"{source_name}: no nvidia-smi -q section {section!r} "
                f"(sections: {', '.join(repr(label) for label in labels)})"
            )
    chosen = candidates[-1]
    where = f"{source_name} [{chosen.label}]"
    return _import_root(
        _text_root(chosen.body, where), source_name, "capture", _Extras.of(capture, chosen.label), chosen.label
    )


def import_nvidia_smi_xml(xml: str | bytes, source_name: str) -> dict[str, Any]:
    """A format-1 scenario reproducing what an `nvidia-smi -q -x` dump shows; DumpError if bad.

    `xml` is best given as the file's bytes, so that the parser honours its encoding
    declaration. Entity expansion is bounded by expat (2.4.0 and later refuse "billion laughs").
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as err:
        raise DumpError(f"{source_name}: not XML ({err})") from None
    if root.tag != "nvidia_smi_log":
        raise DumpError(f"{source_name}: not an nvidia-smi -q -x log (root element <{root.tag}>)")
    return _import_root(root, source_name, "xml", _Extras.of(None))


_COMMANDS = {"xml": "nvidia-smi -q -x", "text": "nvidia-smi -q", "capture": "nvidia-smi -q"}


def _import_root(
    root: ET.Element, source_name: str, kind: str, extras: _Extras, section: str | None = None
) -> dict[str, Any]:
    """The scenario of an <nvidia_smi_log> tree (read from XML or converted from text)."""
    where = source_name if section is None else f"{source_name} [{section}]"
    driver = _read(root, _DRIVER_FIELDS, where)
    if "version" not in driver:
        raise DumpError(f"{where}: no driver version")
    log = _read(root, _LOG_FIELDS, where)
    elements = root.findall("gpu")
    attached = log.get("attached_gpus")
    if attached is not None and attached < len(elements):
        raise DumpError(f"{where}: says {attached} GPU(s) are attached but lists {len(elements)}")
    imported: dict[str, Any] = {"source": source_name, "kind": kind}
    how = _COMMANDS[kind] + (f", section {section!r}" if section else "")
    if "timestamp" in log:
        imported["timestamp"] = log["timestamp"]
        how += f", taken {log['timestamp']}"
    if attached is not None:
        imported["attached_gpus"] = attached
        if attached > len(elements):
            # `nvidia-smi -q -i N` lists one GPU of all those attached, and does not say N.
            shown = ", ".join(element.get("id", "no bus id") for element in elements)
            how += f"; {len(elements)} of {attached} attached GPUs, taken with -i: {shown}"
    guesses: list[str] = []
    gpus = [
        _gpu(
            element, f"{where}: gpu {index} ({_bus_id_shown(element)})", index, extras, guesses
        )
        for index, element in enumerate(elements)
    ]
    if extras.masked:
        imported["masked"] = True
        how += "; identifiers masked by the capture"
    if guesses:
        imported["guessed"] = guesses
        how += "; some values inferred, see imported.guessed"
    return {
        "format": 1,
        "description": f"Imported from {source_name} ({how})",
        "imported": imported,
        "driver": driver,
        "gpus": gpus,
    }


def _bus_id_shown(element: ET.Element) -> str:
    """The <gpu id="..."> attribute for messages: one line, short, whatever the dump holds."""
    return " ".join(element.get("id", "no id").split())[:40]


def _gpu(
    element: ET.Element, where: str, number: int, extras: _Extras, guesses: list[str]
) -> dict[str, Any]:
    """One GPU; what it had to infer rather than read is added to `guesses`."""
    fields = _read(element, _GPU_FIELDS, where)
    for key, tag in (("name", "product_name"), ("memory_total_mib", "fb_memory_usage/total")):
        if key not in fields:
            raise DumpError(f"{where}: no <{tag}> value")
    if element.find("fb_memory_usage/reserved") is None:
        # Before R510 nvidia-smi had no reserved line: its "used" (NVML v1) included it.
        fields["memory_reserved_mib"] = 0
    reasons = _clock_event_reasons(element)
    if reasons is not None:
        fields["clock_event_reasons"] = reasons
    for key, members in _WHOLE_BLOCKS.items():
        block = fields.get(key)
        if isinstance(block, dict) and any(member not in block for member in members):
            del fields[key]
    if number in extras.nvlink:
        fields["nvlink_links"] = extras.nvlink[number]
    ended = [app for app in extras.accounted.get(fields.get("pci_bus_id", ""), ()) if app.time_ms]
    if ended and fields.get("accounting", {}).get("enabled"):
        # Running ones (time 0) are the dump's processes; the simulator lists those itself.
        # When each ended is not in the dump: it ended by the time of the capture.
        fields["accounting"]["processes"] = [
            {"pid": app.pid, "run_ms": app.time_ms, "gpu_util_percent": app.gpu_util_percent,
             "memory_util_percent": app.memory_util_percent, "max_memory_mib": app.max_memory_mib}
            for app in ended]
    board = board_of(fields["name"])
    gpu: dict[str, Any] = {"board": board.key, **fields} if board else fields
    devices = [
        _read(device, _MIG_DEVICE_FIELDS, f"{where}: mig_device {position}")
        for position, device in enumerate(element.findall("mig_devices/mig_device"))
    ]
    if devices:
        if "mig" not in gpu:
            raise DumpError(f"{where}: has MIG devices but no MIG mode")
        for position, device in enumerate(devices):
            listed = extras.mig_listed.get((number, device.get("index", position)))
            device["name"] = None if listed is None else listed.profile
            if listed is not None and listed.uuid is not None:
                device["uuid"] = listed.uuid  # as -L printed it, masked or not
        placements = {
            gi: p for (gpu_number, gi), p in extras.placements.items() if gpu_number == number
        }
        gpu["mig"]["gpu_instances"] = gpu_instances_of(
            board, devices, placements, fields["memory_total_mib"], where, guesses
        )
    gpu["processes"] = [
        _process(process, f"{where}: process {position}")
        for position, process in enumerate(element.findall("processes/process_info"))
    ]
    return gpu


def gpu_instances_of(
    board: Board | None,
    devices: list[dict[str, Any]],
    placements: dict[int, MigPlacement],
    memory_total_mib: int,
    where: str,
    guesses: list[str],
) -> list[dict[str, Any]]:
    """A MIG GPU's `gpu_instances` from its MIG devices' facts (one per compute instance:
    index, gpu/compute instance ids, sm_count, memory) and the placements known by GI id;
    profiles from the catalogue's table, or described by those facts for a board it lacks.
    What had to be inferred is added to `guesses`."""
    derived = any("uuid" not in device for device in devices)
    if derived:
        # NVML always has one; the simulator derives it, so it is not the machine's.
        guesses.append(f"{where}: MIG device UUIDs (the dump lists none; derived)")
    if board is None or board.mig is None:
        instances = _described_instances(devices, placements, memory_total_mib, where, guesses)
    else:
        instances = _gpu_instances(board.mig, devices, placements, where, guesses)
    for instance in instances:
        if any("uuid" not in ci for ci in instance["compute_instances"]):
            _guessed(instance, "uuid")
    return instances


def _guessed(instance: dict[str, Any], fact: str) -> None:
    """Mark one of a GPU instance's facts as inferred, not read (its `guessed` list)."""
    instance["guessed"] = sorted({*instance.get("guessed", ()), fact})


def board_of(name: str) -> Board | None:
    """The catalogue board nvidia-smi's product name belongs to; R450/R470 drop "NVIDIA "."""
    wanted = name.removeprefix("NVIDIA ")
    for board in BOARDS.values():
        if str(board.defaults.get("name", "")).removeprefix("NVIDIA ") == wanted:
            return board
    return None


def _process(element: ET.Element, where: str) -> dict[str, Any]:
    process = _read(element, _PROCESS_FIELDS, where)
    if "pid" not in process:
        raise DumpError(f"{where}: no <pid> value")
    process.setdefault("used_memory_mib", None)  # N/A: NVML could not tell, not 0
    name = process.get("name")
    if name and "\\" not in name:
        # On Linux NVML's process name is the command line (arguments joined by spaces), all
        # the command line a dump holds; on Windows it is the executable's path alone.
        process["command"] = name
    return process


def _grouped(devices: list[dict[str, Any]], where: str) -> dict[int, list[dict[str, Any]]]:
    """MIG devices (one per compute instance) by GPU instance id, in CI id order."""
    for number, device in enumerate(devices):
        for field in _MIG_DEVICE_FIELDS:
            if field.key in _MIG_DEVICE_REQUIRED and field.key not in device:
                raise DumpError(f"{where}: mig_device {number}: no <{field.paths[0]}> value")
    by_gi: dict[int, list[dict[str, Any]]] = {}
    for device in sorted(devices, key=lambda d: (d["gpu_instance_id"], d["compute_instance_id"])):
        by_gi.setdefault(device["gpu_instance_id"], []).append(device)
    for gi_id, cis in by_gi.items():
        ci_ids = [ci["compute_instance_id"] for ci in cis]
        if ci_ids != list(range(len(cis))):
            # The format numbers a GI's compute instances 0, 1, ... in list order.
            raise DumpError(
                f"{where}: GPU instance {gi_id} has compute instance ids {ci_ids}; a scenario "
                "can only express ids 0, 1, ... without gaps"
            )
    return by_gi


def _uuid_of(device: dict[str, Any]) -> dict[str, str]:
    """A compute instance's `uuid` where the capture listed its MIG device's (-L)."""
    return {"uuid": device["uuid"]} if "uuid" in device else {}


def _described_instances(
    devices: list[dict[str, Any]],
    placements: dict[int, MigPlacement],
    gpu_memory_mib: int,
    where: str,
    guesses: list[str],
) -> list[dict[str, Any]]:
    """GPU instances of a board outside the catalogue, as the dump shows them."""
    out = []
    for gi_id, cis in _grouped(devices, where).items():
        placement = placements.get(gi_id)
        named = {re.sub(r"^\d+c\.", "", ci["name"]) for ci in cis if ci.get("name")}
        inferred = placement is None and len(named) != 1
        if placement is not None:
            name = placement.profile
        elif not inferred:
            name = named.pop()
        else:
            # `-q` names no profile: N compute slices of 7 by the GI's share of the memory.
            # Unknown: boards whose slices are not 7 compute / 8 memory (A30 has 4 / 4).
            memory = cis[0]["memory_total_mib"]
            slices = max(1, round(7 * memory / gpu_memory_mib))
            name = f"{slices}g.{round(memory / 1024)}gb"
            guesses.append(f"{where}: GPU instance {gi_id}'s profile name {name}")
        instance: dict[str, Any] = {"profile": name, "id": gi_id}
        if inferred:
            _guessed(instance, "profile")
        if placement is None:
            guesses.append(f"{where}: GPU instance {gi_id}'s placement and profile id")
            _guessed(instance, "placement")
            _guessed(instance, "profile_id")
        else:
            instance["start"] = placement.start
            instance["memory_slices"] = placement.size
            instance["profile_id"] = placement.profile_id
        for key in _GI_DUMP:
            if key in cis[0]:
                instance[key] = cis[0][key]
        engines = {
            "copy": cis[0].get("copy_engines"),
            "decoder": cis[0].get("decoders"),
            "encoder": cis[0].get("encoders"),
            "jpeg": cis[0].get("jpegs"),
            "ofa": cis[0].get("ofas"),
        }
        instance["engines"] = {k: v for k, v in engines.items() if v is not None}
        instance["compute_instances"] = [
            {"multiprocessor_count": ci["sm_count"], **_uuid_of(ci)} for ci in cis
        ]
        if len(cis) > 1:
            # Unknown: how a partial CI's slices follow from its SMs on an unknown board.
            total = sum(ci["sm_count"] for ci in cis)
            slices = int(re.match(r"\d+", name).group())  # type: ignore[union-attr]
            for entry, ci in zip(instance["compute_instances"], cis):
                entry["slices"] = max(1, round(slices * ci["sm_count"] / total))
        out.append(instance)
    return out


def _gpu_instances(
    table: MigTable,
    devices: list[dict[str, Any]],
    placements: dict[int, MigPlacement],
    where: str,
    guesses: list[str],
) -> list[dict[str, Any]]:
    """MIG devices (one per compute instance) grouped into GPU instances with named profiles."""
    by_gi = _grouped(devices, where)
    instances = [
        _gpu_instance(table, gi_id, cis, placements.get(gi_id), where, guesses)
        for gi_id, cis in by_gi.items()
    ]
    # -q does not say where a GI sits: NVML's usual numbering tells, when every id is one it
    # gives its profile and the placements so read fit together; otherwise (real ids do not
    # always follow it) the loader picks free placements and the ids stay as the dump has them.
    # Unknown: which drivers number GPU instances this way (the MIG User Guide's examples do).
    inferred = [
        gi.get("start", _placement_start(table.by_name[gi["profile"]], gi["id"]))
        for gi in instances
    ]
    profiles = [table.by_name[gi["profile"]] for gi in instances]
    if None not in inferred and mig_profiles.fit_placements(
        [(p.placement_starts, p.memory_slices, start) for p, start in zip(profiles, inferred)]
    ):
        for gi, start in zip(instances, inferred):
            gi["start"] = start
    if any(gi_id not in placements for gi_id in by_gi):
        guesses.append(f"{where}: MIG placements (the dump has none)")
    for gi in instances:
        if gi["id"] not in placements:
            _guessed(gi, "placement")
    return [{key: gi[key] for key in _GI_ORDER if key in gi} for gi in instances]


def _named_profile(
    table: MigTable,
    gi_id: int,
    cis: list[dict[str, Any]],
    placement: MigPlacement | None,
    where: str,
) -> GpuInstanceProfile | None:
    """The profile the capture names for this GPU instance (`mig -lgi`, else `-L`), if any."""
    if placement is not None:
        name = placement.profile
    else:
        # `-L` names a partial compute instance "1c.3g.40gb": the GI profile is the rest.
        named = {re.sub(r"^\d+c\.", "", ci["name"]) for ci in cis if ci.get("name")}
        if len(named) > 1:
            raise DumpError(f"{where}: GPU instance {gi_id} is named {sorted(named)} by -L")
        if not named:
            return None
        name = named.pop()
    profile = table.by_name.get(name)
    if profile is None:
        raise DumpError(
            f"{where}: GPU instance {gi_id} is a {name}, which the catalogue's MIG table for "
            f"this board lacks (known: {', '.join(p.name for p in table.profiles)})"
        )
    return profile


def _gpu_instance(
    table: MigTable,
    gi_id: int,
    cis: list[dict[str, Any]],
    placement: MigPlacement | None,
    where: str,
    guesses: list[str],
) -> dict[str, Any]:
    profile = _named_profile(table, gi_id, cis, placement, where)
    matched = profile is None
    if profile is None:
        profile = _match_profile(table, gi_id, cis)
        if profile is None:
            raise DumpError(
                f"{where}: GPU instance {gi_id} ({sum(ci['sm_count'] for ci in cis)} SMs, "
                f"{cis[0]['memory_total_mib']} MiB) matches no MIG profile of this board"
            )
        guesses.append(
            f"{where}: GPU instance {gi_id}'s profile name {profile.name} (the dump names "
            "none; matched by memory and SMs)"
        )
    instance: dict[str, Any] = {"profile": profile.name, "id": gi_id}
    if matched:
        _guessed(instance, "profile")
    if placement is not None:
        # The dump's own placement; refused rather than moved when the table disagrees.
        if placement.start not in profile.placement_starts:
            raise DumpError(
                f"{where}: GPU instance {gi_id} ({profile.name}) is placed at "
                f"{placement.start}:{placement.size}, which the catalogue's table does not offer"
            )
        instance["start"] = placement.start
    for key in _GI_DUMP:
        if key in cis[0]:
            instance[key] = cis[0][key]
    offered = table.ci_profiles[profile.id]
    # The CI profile with the device's SM count (nearest: partial-CI SM counts vary); the
    # SMs themselves as the dump has them.
    instance["compute_instances"] = [
        {
            "slices": min(
                offered, key=lambda c: abs(c.multiprocessor_count - ci["sm_count"])
            ).slice_count,
            "multiprocessor_count": ci["sm_count"],
            **_uuid_of(ci),
        }
        for ci in cis
    ]
    return instance


def _match_profile(
    table: MigTable, gi_id: int, cis: list[dict[str, Any]]
) -> GpuInstanceProfile | None:
    """The profile of a GPU instance, which nvidia-smi -q does not name.

    Its memory must be the profile's (within driver variation) and its compute instances'
    SMs must fit in it. Among those, prefer a profile whose placements give this GI id, whose
    SM count is exactly the CIs' total (a GI split into CIs can leave slices unused), whose
    decoder/JPEG/OFA counts agree (1g vs 1g+me), and whose memory is nearest.
    """
    memory = cis[0]["memory_total_mib"]
    sms = sum(ci["sm_count"] for ci in cis)
    engines = [(cis[0].get(key), attr) for key, attr in _MIG_ENGINES]

    def rank(profile: GpuInstanceProfile) -> tuple[bool, bool, int, int]:
        return (
            _placement_start(profile, gi_id) is None,
            profile.multiprocessor_count != sms,
            sum(seen is not None and seen != getattr(profile, attr) for seen, attr in engines),
            abs(profile.memory_mib - memory),
        )

    fitting = [
        profile
        for profile in table.profiles
        if abs(profile.memory_mib - memory) <= _MIG_MEMORY_TOLERANCE * profile.memory_mib
        and sms <= profile.multiprocessor_count
    ]
    return min(fitting, key=rank, default=None)


def _placement_start(profile: GpuInstanceProfile, gi_id: int) -> int | None:
    """The placement NVML numbers `gi_id` for this profile, if the id fits the profile."""
    return next(
        (
            start
            for start in profile.placement_starts
            if mig_profiles.default_gpu_instance_id(
                start, profile.memory_slices, profile.board_memory_slices) == gi_id
        ),
        None,
    )
