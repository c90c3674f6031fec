"""Read `nvidia-smi -q` text into the element tree `nvidia-smi -q -x` would have written.

The text is an indented tree of `Label : value` lines. Each label becomes the XML tag of the
same fact (one table below; other labels become their lower-case words joined by `_`, which
nothing reads), so one set of mapping rules (importer_fields.py) serves both forms of dump.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

__all__ = ["TEXT_BANNER", "looks_like_text_dump", "parse_text_dump"]

TEXT_BANNER = "NVSMI LOG"
# A GPU's header line: "GPU 00000000:00:09.0".
_GPU_LINE = re.compile(r"GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
# Nesting deeper than any real dump's is refused rather than followed.
_MAX_DEPTH = 12

# Label -> XML tag, everywhere.
_TAGS: dict[str, str] = {
    "Timestamp": "timestamp",
    "Driver Version": "driver_version",
    "CUDA Version": "cuda_version",
    "Attached GPUs": "attached_gpus",
    "Product Name": "product_name",
    "Product Architecture": "product_architecture",
    "Persistence Mode": "persistence_mode",
    "MIG Mode": "mig_mode",
    "Serial Number": "serial",
    "GPU UUID": "uuid",
    "Minor Number": "minor_number",
    "VBIOS Version": "vbios_version",
    "Board Part Number": "board_part_number",
    "GPU Part Number": "gpu_part_number",
    "PCI": "pci",
    "Bus Id": "pci_bus_id",
    "Device Id": "pci_device_id",
    "Sub System Id": "pci_sub_system_id",
    "GPU Link Info": "pci_gpu_link_info",
    "PCIe Generation": "pcie_gen",
    "Link Width": "link_widths",
    "Replays Since Reset": "replay_counter",
    "Tx Throughput": "tx_util",
    "Rx Throughput": "rx_util",
    "Fan Speed": "fan_speed",
    "Performance State": "performance_state",
    "Clocks Event Reasons": "clocks_event_reasons",
    "Clocks Throttle Reasons": "clocks_throttle_reasons",
    "FB Memory Usage": "fb_memory_usage",
    "Shared FB Memory Usage": "fb_memory_usage",
    "BAR1 Memory Usage": "bar1_memory_usage",
    "Shared BAR1 Memory": "bar1_memory_usage",
    "Compute Mode": "compute_mode",
    "ECC Mode": "ecc_mode",
    "ECC Errors": "ecc_errors",
    "SRAM Uncorrectable SEC-DED": "sram_uncorrectable_secded",
    "Retired Pages": "retired_pages",
    "Pending Page Blacklist": "pending_blacklist",
    "Pending Page Retirement": "pending_retirement",
    "Remapped Rows": "remapped_rows",
    "Correctable Error": "remapped_row_corr",
    "Uncorrectable Error": "remapped_row_unc",
    "Remapping Failure Occurred": "remapped_row_failure",
    "Temperature": "temperature",
    "GPU Current Temp": "gpu_temp",
    "GPU Shutdown Temp": "gpu_temp_max_threshold",
    "GPU Slowdown Temp": "gpu_temp_slow_threshold",
    "GPU Max Operating Temp": "gpu_temp_max_gpu_threshold",
    "Memory Current Temp": "memory_temp",
    "Memory Max Operating Temp": "gpu_temp_max_mem_threshold",
    "GPU T.Limit Temp": "gpu_temp_tlimit",
    "Power Readings": "power_readings",
    "GPU Power Readings": "gpu_power_readings",
    "Module Power Readings": "module_power_readings",
    "Instantaneous Power Draw": "instant_power_draw",
    "Clocks": "clocks",
    "Max Clocks": "max_clocks",
    "MIG Device": "mig_device",
    "GPU Instance ID": "gpu_instance_id",
    "Compute Instance ID": "compute_instance_id",
    "Multiprocessor count": "multiprocessor_count",
    "JPG count": "jpg_count",
    "Processes": "processes",
    "Process ID": "pid",
    "Name": "process_name",
    "Used GPU Memory": "used_memory",
}
# (parent tag, label) -> tag, where a label means different things in different blocks.
_IN_BLOCK: dict[tuple[str, str], str] = {
    ("mig_mode", "Current"): "current_mig",
    ("mig_mode", "Pending"): "pending_mig",
    ("ecc_mode", "Current"): "current_ecc",
    ("driver_model", "Current"): "current_dm",
    ("driver_model", "Pending"): "pending_dm",
    ("ecc_mode", "Pending"): "pending_ecc",
    ("pcie_gen", "Max"): "max_link_gen",
    ("pcie_gen", "Current"): "current_link_gen",
    ("pcie_gen", "Device Max"): "max_device_link_gen",
    ("pcie_gen", "Device Current"): "device_current_link_gen",
    ("pcie_gen", "Host Max"): "max_host_link_gen",
    ("link_widths", "Max"): "max_link_width",
    ("link_widths", "Current"): "current_link_width",
    ("utilization", "GPU"): "gpu_util",
    ("utilization", "Memory"): "memory_util",
    ("utilization", "Encoder"): "encoder_util",
    ("utilization", "Decoder"): "decoder_util",
    ("remapped_rows", "Pending"): "remapped_row_pending",
    ("retired_pages", "Single Bit ECC"): "multiple_single_bit_retirement/retired_count",
    ("retired_pages", "Double Bit ECC"): "double_bit_retirement/retired_count",
    **{
        (block, label): tag
        for block in ("clocks", "max_clocks")
        for label, tag in (
            ("Graphics", "graphics_clock"),
            ("SM", "sm_clock"),
            ("Memory", "mem_clock"),
            ("Video", "video_clock"),
        )
    },
}
# Clock event reasons by label (HW Thermal/Power Brake Slowdown sit under HW Slowdown).
_REASONS: dict[str, str] = {
    "Idle": "gpu_idle",
    "Applications Clocks Setting": "applications_clocks_setting",
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "Display Clock Setting": "display_clocks_setting",
}
# Blocks whose members are lifted into their parent: R570+ nests the power limits in "GPU
# Ceiling Power Limit" under the GPU's power readings.
_LIFTED = frozenset({"GPU Ceiling Power Limit"})


@dataclass
class _Node:
    label: str
    value: str | None
    children: list[_Node] = field(default_factory=list)


def looks_like_text_dump(text: str) -> bool:
    """Whether this is `nvidia-smi -q` output (its banner line)."""
    return any(
        line.strip().strip("=") == TEXT_BANNER for line in text.splitlines()[:20] if "=" in line
    )


def _tree(lines: list[str]) -> list[_Node]:
    """The indented lines as a forest; a label's value is after the first " : "."""
    roots: list[_Node] = []
    stack: list[tuple[int, _Node]] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.strip("=") in ("", TEXT_BANNER):
            continue
        indent = len(line) - len(line.lstrip())
        label, sep, value = stripped.partition(" : ")
        if not sep and stripped.endswith(" :"):  # "Name :" with an empty value
            label, value, sep = stripped[:-2], "", " : "
        node = _Node(label.strip(), value.strip() if sep else None)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if len(stack) >= _MAX_DEPTH:
            raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
        (stack[-1][1].children if stack else roots).append(node)
        stack.append((indent, node))
    return roots


def _slug(label: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", label.lower()).strip("_") or "unnamed"


def _clean(value: str) -> str:
    """The value without a bracketed note after it: "610.62 [Deprecated; will be removed in
    CUDA 14.0. ...]" is 610.62. A value that is all brackets ("[N/A]") is kept.

    Found with str methods in one pass: the regex it replaces (whitespace, "[", no "]", "]"
    at the end) backtracked over every start, quadratic in a long value (256 KB took 21 s).
    """
    if value.startswith("[") or not value.endswith("]"):
        return value
    # The note opens at the first "[" after whitespace since the last "]" before the end.
    opening = value.find("[", value.rfind("]", 0, len(value) - 1) + 1)
    while opening > 0:
        if value[opening - 1].isspace():
            return value[:opening].rstrip()
        opening = value.find("[", opening + 1)
    return value


def _put(parent: ET.Element, path: str, value: str | None) -> ET.Element:
    """Add parent/path (a/b for a nested tag) and set the leaf's text."""
    element = parent
    for tag in path.split("/"):
        element = ET.SubElement(element, tag)
    if value is not None:
        element.text = _clean(value)
    return element


def _convert(nodes: list[_Node], parent: ET.Element) -> None:
    for node in nodes:
        if node.label in _LIFTED:
            _convert(node.children, parent)
            continue
        if parent.tag in ("clocks_event_reasons", "clocks_throttle_reasons"):
            prefix = parent.tag.removesuffix("s") + "_"
            if node.label in _REASONS:
                _put(parent, prefix + _REASONS[node.label], node.value)
            _convert(node.children, parent)  # the HW Slowdown sub-reasons
            continue
        if node.label == "MIG Device":
            holder = parent.find("mig_devices")
            if holder is None:
                holder = ET.SubElement(parent, "mig_devices")
            _convert(node.children, _put(holder, "mig_device", None))
            continue
        if node.label == "Processes":
            _processes(node, _put(parent, "processes", None))
            continue
        tag = _IN_BLOCK.get((parent.tag, node.label)) or _TAGS.get(node.label) or _slug(node.label)
        _convert(node.children, _put(parent, tag, node.value))


def _processes(node: _Node, holder: ET.Element) -> None:
    """One <process_info> per process: the text lists GI, CI and PID as siblings, with the
    process's type, name and memory under its PID."""
    current: ET.Element | None = None
    for child in node.children:
        tag = _TAGS.get(child.label) or _slug(child.label)
        # A line the current record already has starts the next one (its GI line, or its
        # PID line where the driver prints no GI/CI).
        if current is None or current.find(tag) is not None:
            current = ET.SubElement(holder, "process_info")
        _put(current, tag, child.value)
        if tag == "pid":
            for member in child.children:
                _put(current, _TAGS.get(member.label) or _slug(member.label), member.value)


def parse_text_dump(text: str) -> ET.Element:
    """An <nvidia_smi_log> element from `nvidia-smi -q` text; ValueError if it is not one."""
    if not looks_like_text_dump(text):
        raise ValueError(f"no {TEXT_BANNER} banner: not nvidia-smi -q output")
    root = ET.Element("nvidia_smi_log")
    for node in _tree(text.splitlines()):
        match = _GPU_LINE.fullmatch(node.label)
        if match is not None and node.value is None:
            gpu = ET.SubElement(root, "gpu", id=match.group(1))
            _convert(node.children, gpu)
        else:
            _convert([node], root)
    return root
