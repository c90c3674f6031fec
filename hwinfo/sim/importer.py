"""Turn an nvidia-smi dump into a simulator scenario (format 1, docs/scenario-format.md).

Three forms are read, told apart by their content: `nvidia-smi -q -x` XML, `nvidia-smi -q`
text (importer_text.py turns it into the same element tree) and whole capture files with
several commands' output (importer_capture.py), where a `-q` section is the dump and the
`-L`, `mig -lgi` and `nvlink -s` sections add facts `-q` does not print. What each element
becomes is importer_fields.py's; a MIG GPU's instances are rebuilt by importer_mig.py.

The scenario reproduces what nvidia-smi showed and nothing else: it is marked `imported`,
so no catalogue default stands in for a value the dump lacks. Values nvidia-smi printed as
not available ("N/A", "[Not Supported]", "Requested functionality has been deprecated",
masked "[REDACTED]", ...) are left out, so they read NotSupported - never 0.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from hwinfo.sim.boards import BOARDS, Board
from hwinfo.sim.importer_capture import (
    AccountedApp,
    Capture,
    ListedMigDevice,
    MigPlacement,
    looks_like_capture,
    parse_capture,
)
from hwinfo.sim.importer_fields import (
    DRIVER_FIELDS,
    GPU_FIELDS,
    LOG_FIELDS,
    MIG_DEVICE_FIELDS,
    PROCESS_FIELDS,
    WHOLE_BLOCKS,
    DumpError,
    clock_event_reasons,
    pci_bus_id,
    read_fields,
)
from hwinfo.sim.importer_mig import gpu_instances_of
from hwinfo.sim.importer_text import looks_like_text_dump, parse_text_dump

__all__ = ["DumpError", "board_of", "import_dump", "import_nvidia_smi_xml"]


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
            {pci_bus_id(bus): apps for bus, apps in capture.accounted_apps(label).items()},
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
    driver = read_fields(root, DRIVER_FIELDS, where)
    if "version" not in driver:
        raise DumpError(f"{where}: no driver version")
    log = read_fields(root, LOG_FIELDS, where)
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
    fields = read_fields(element, GPU_FIELDS, where)
    for key, tag in (("name", "product_name"), ("memory_total_mib", "fb_memory_usage/total")):
        if key not in fields:
            raise DumpError(f"{where}: no <{tag}> value")
    if element.find("fb_memory_usage/reserved") is None:
        # Before R510 nvidia-smi had no reserved line: its "used" (NVML v1) included it.
        fields["memory_reserved_mib"] = 0
    reasons = clock_event_reasons(element)
    if reasons is not None:
        fields["clock_event_reasons"] = reasons
    for key, members in WHOLE_BLOCKS.items():
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
        read_fields(device, MIG_DEVICE_FIELDS, f"{where}: mig_device {position}")
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



def board_of(name: str) -> Board | None:
    """The catalogue board nvidia-smi's product name belongs to; R450/R470 drop "NVIDIA "."""
    wanted = name.removeprefix("NVIDIA ")
    for board in BOARDS.values():
        if str(board.defaults.get("name", "")).removeprefix("NVIDIA ") == wanted:
            return board
    return None


def _process(element: ET.Element, where: str) -> dict[str, Any]:
    process = read_fields(element, PROCESS_FIELDS, where)
    if "pid" not in process:
        raise DumpError(f"{where}: no <pid> value")
    process.setdefault("used_memory_mib", None)  # N/A: NVML could not tell, not 0
    name = process.get("name")
    if name and "\\" not in name:
        # On Linux NVML's process name is the command line (arguments joined by spaces), all
        # the command line a dump holds; on Windows it is the executable's path alone.
        process["command"] = name
    return process


