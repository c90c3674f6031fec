"""Every real capture imported and reported back, field by field, as nvidia-smi showed it.

Each real capture (XML dumps and whole text capture files; tests/conftest.py says where they
come from and where they are looked for) goes through
`hwinfo sim import`, then `hwinfo report --simulate` (the real pynvml on the simulated
library) in a subprocess. The expected values are read from the capture here, with plain
lookups that share nothing with the importer.

Not compared, and why:
- cuda_compute_capability, cuda_cores, energy_joules, numa_node, cpu_affinity, peak, GPM
  activity: nvidia-smi -q does not print them (the imported scenario leaves them
  NotSupported: asserted null).
- PCI subsystem id, encoder/FBC stats, applications clocks, T.Limit temperatures: hwinfo's
  report has no such field. BAR1 of MIG devices, display mode and display active are read
  through raw pynvml instead ("deprecated", as 590 and later print the display mode: not
  available).
- MIG placements and profile ids: `-q` does not print them; the profile name is compared
  where the capture's `nvidia-smi -L` section names it.
- NVLink: only the text captures hold it (`nvidia-smi nvlink -s`), and only there is it
  compared; XML dumps have no NVLink section, so it must read null.
- users: a dump names no process owners (asserted null). The command (--full-command) is the
  process name as printed: a Linux command line, or a Windows executable's path.
- nvml_version: `-q` does not print it; a capture's `nvidia-smi --version` prints "590.48",
  not NVML's own string ("13.590.48.01"), so the import keeps the format's default.
- xid_errors: events, not state; a dump shows none (the report's list comes from an event
  listener, empty for a one-shot report).
- process_count: the processes themselves are compared.
- driver_model's pending model: the report has the current one only.
- MIG gpu_instances (placements, profile ids) and capacity: see MIG placements above; the
  imported scenario's own tests (test_importer.py) check what -lgi gives.
- gpu_share_ratio of MIG devices, lost, unavailable, users: derived by hwinfo, not dump facts.
- masked identifiers: a capture that says "masked: yes" has its UUIDs as printed (compared
  as such) and the scenario says so (imported.masked).
"""

from __future__ import annotations

import json
import ntpath
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    CAPTURE_FILES,
    CAPTURES,
    TEXT_CAPTURES,
    XML_CAPTURES,
    each_capture,
    require,
    require_captures,
)

MIB = 1024 * 1024
UNAVAILABLE = re.compile(
    r"N/A|\[.*\]|Not Supported|Requested functionality has been deprecated|Not available.*"
)


def test_the_captures_are_there() -> None:
    require_captures()
    require(len(XML_CAPTURES) >= 6 and len(TEXT_CAPTURES) >= 6, f"captures missing in {CAPTURES}")


# --- what the capture says: one GPU as plain values (None: nvidia-smi printed no value) ---


@dataclass
class Expected:
    values: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    mig_devices: list[tuple[int | None, ...]] = field(default_factory=list)
    mig_bar1_mib: list[int | None] = field(default_factory=list)
    mig_sram_uncorrected: list[int | None] = field(default_factory=list)
    processes: list[tuple[Any, ...]] = field(default_factory=list)


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return None if not text or UNAVAILABLE.fullmatch(text) else text


def _int(text: str | None) -> int | None:
    """The first integer in "19968 MiB", "16x", "P8", "42 C"; None when not available."""
    text = _clean(text)
    return None if text is None else int(re.search(r"-?\d+", text).group())  # type: ignore[union-attr]


def _float(text: str | None) -> float | None:
    text = _clean(text)
    return None if text is None else float(text.split()[0])


def _first(*texts: str | None) -> str | None:
    return next((t for t in texts if _clean(t) is not None), None)


def _enabled(text: str | None) -> bool | None:
    return {"enabled": True, "disabled": False}.get((_clean(text) or "").lower())


def _yes(text: str | None) -> bool | None:
    return {"yes": True, "no": False}.get((_clean(text) or "").lower())


def _sum(*texts: str | None) -> int | None:
    numbers = [n for n in map(_int, texts) if n is not None]
    return sum(numbers) if numbers else None


PROCESS_TYPES = {"C": "compute", "G": "graphics", "C+G": "compute+graphics"}


# XML: paths into one <gpu>.
def _xml_expected(gpu: ET.Element) -> Expected:
    def t(path: str) -> str | None:
        found = gpu.find(path)
        return None if found is None else found.text

    link = "pci/pci_gpu_link_info"
    v = {
        "name": t("product_name"),
        "architecture": t("product_architecture"),
        "addressing_mode": t("addressing_mode"),
        "driver_model": t("driver_model/current_dm"),
        "uuid": t("uuid"),
        "serial": t("serial"),
        "vbios_version": t("vbios_version"),
        # Schemas before v12 printed NVML's board part number as gpu_part_number; later ones
        # print it as board_part_number and use gpu_part_number for the chip's.
        "board_part_number": t(
            "board_part_number" if gpu.find("board_part_number") is not None else "gpu_part_number"
        ),
        "pci_bus_id": t("pci/pci_bus_id"),
        "pci_device_id": t("pci/pci_device_id"),
        "persistence": t("persistence_mode"),
        "display_mode": t("display_mode"),
        "display_active": t("display_active"),
        "accounting": t("accounting_mode"),
        "accounting_buffer": t("accounting_mode_buffer_size"),
        "compute_mode": t("compute_mode"),
        "total": t("fb_memory_usage/total"),
        "reserved": t("fb_memory_usage/reserved"),
        "used": t("fb_memory_usage/used"),
        "free": t("fb_memory_usage/free"),
        "bar1_total": t("bar1_memory_usage/total"),
        "bar1_used": t("bar1_memory_usage/used"),
        "util_gpu": t("utilization/gpu_util"),
        "util_memory": t("utilization/memory_util"),
        "util_encoder": t("utilization/encoder_util"),
        "util_decoder": t("utilization/decoder_util"),
        "temp": t("temperature/gpu_temp"),
        "temp_slowdown": t("temperature/gpu_temp_slow_threshold"),
        "temp_shutdown": t("temperature/gpu_temp_max_threshold"),
        "fan": t("fan_speed"),
        "power_draw": _first(
            t("power_readings/power_draw"),
            t("gpu_power_readings/power_draw"),
            t("gpu_power_readings/average_power_draw"),
            t("gpu_power_readings/instant_power_draw"),
        ),
        "power_limit": _first(
            t("power_readings/enforced_power_limit"), t("gpu_power_readings/current_power_limit")
        ),
        "power_default": _first(
            t("power_readings/default_power_limit"), t("gpu_power_readings/default_power_limit")
        ),
        "power_min": _first(
            t("power_readings/min_power_limit"), t("gpu_power_readings/min_power_limit")
        ),
        "power_max": _first(
            t("power_readings/max_power_limit"), t("gpu_power_readings/max_power_limit")
        ),
        "pstate": t("performance_state"),
        "pcie_gen": t(f"{link}/pcie_gen/current_link_gen"),
        "pcie_max_gen": t(f"{link}/pcie_gen/max_link_gen"),
        "pcie_gpu_max_gen": t(f"{link}/pcie_gen/max_device_link_gen"),
        "pcie_width": t(f"{link}/link_widths/current_link_width"),
        "pcie_max_width": t(f"{link}/link_widths/max_link_width"),
        "tx": t("pci/tx_util"),
        "rx": t("pci/rx_util"),
        "replays": t("pci/replay_counter"),
        "ecc": t("ecc_mode/current_ecc"),
        "ecc_pending": t("ecc_mode/pending_ecc"),
        "retired_single": t("retired_pages/multiple_single_bit_retirement/retired_count"),
        "retired_double": t("retired_pages/double_bit_retirement/retired_count"),
        "retired_pending": _first(
            t("retired_pages/pending_retirement"), t("retired_pages/pending_blacklist")
        ),
        "remapped_corr": t("remapped_rows/remapped_row_corr"),
        "remapped_unc": t("remapped_rows/remapped_row_unc"),
        "remapped_pending": t("remapped_rows/remapped_row_pending"),
        "remapped_failure": t("remapped_rows/remapped_row_failure"),
        "mig": t("mig_mode/current_mig"),
        "mig_pending": t("mig_mode/pending_mig"),
    }
    for clock, tag in (
        ("graphics", "graphics"),
        ("sm", "sm"),
        ("memory", "mem"),
        ("video", "video"),
    ):
        v[f"clock_{clock}"] = t(f"clocks/{tag}_clock")
        v[f"max_clock_{clock}"] = t(f"max_clocks/{tag}_clock")
    for scope in ("volatile", "aggregate"):
        kinds = [child.tag for child in gpu.findall(f"ecc_errors/{scope}/*")]
        v[f"ecc_{scope}_corrected"] = _sum(
            *(t(f"ecc_errors/{scope}/{k}") for k in kinds if k.endswith("_correctable"))
        )
        v[f"ecc_{scope}_uncorrected"] = _sum(
            *(
                t(f"ecc_errors/{scope}/{k}")
                for k in kinds
                if "uncorrectable" in k
                # The split SRAM counts add up to sram_uncorrectable where both are printed.
                and not (k.startswith("sram_uncorrectable_") and "sram_uncorrectable" in kinds)
            )
        )
    expected = Expected(v)
    for block in ("clocks_event_reasons", "clocks_throttle_reasons"):
        reasons = gpu.findall(f"{block}/*")
        if reasons:
            expected.reasons = [
                r.tag.split("reason_", 1)[1] for r in reasons if _clean(r.text) == "Active"
            ]
            break
    else:
        expected.reasons = None  # type: ignore[assignment]
    for device in gpu.findall("mig_devices/mig_device"):
        expected.mig_bar1_mib.append(_int(device.findtext("bar1_memory_usage/total")))
        expected.mig_sram_uncorrected.append(
            _int(device.findtext("ecc_error_count/volatile_count/sram_uncorrectable"))
        )
        expected.mig_devices.append(
            tuple(
                _int(device.findtext(path))
                for path in (
                    "gpu_instance_id",
                    "compute_instance_id",
                    "device_attributes/shared/multiprocessor_count",
                    "fb_memory_usage/total",
                    "fb_memory_usage/used",
                )
            )
        )
    for process in gpu.findall("processes/process_info"):
        expected.processes.append(
            (
                _int(process.findtext("pid")),
                PROCESS_TYPES[process.findtext("type") or ""],
                _clean(process.findtext("process_name")),
                _int(process.findtext("used_memory")),
                _int(process.findtext("gpu_instance_id")),
                _int(process.findtext("compute_instance_id")),
            )
        )
    return expected


# Text: "Label : value" lines, found by their labels under their parents' labels.
Line = tuple[int, str, str | None]  # indent, label, value


def _lines(body: str) -> list[Line]:
    out = []
    for raw in body.splitlines():
        if not raw.strip() or raw.strip().startswith("="):
            continue
        label, sep, value = raw.strip().partition(" : ")
        out.append((len(raw) - len(raw.lstrip()), label.strip(), value.strip() if sep else None))
    return out


def _children(lines: list[Line], at: int) -> list[Line]:
    indent = lines[at][0]
    out = []
    for line in lines[at + 1 :]:
        if line[0] <= indent:
            break
        out.append(line)
    return out


def _blocks(lines: list[Line], label: str) -> list[list[Line]]:
    """The children of every top-level line with this label."""
    top = min((line[0] for line in lines), default=0)
    return [_children(lines, i) for i, line in enumerate(lines) if line[:2] == (top, label)]


def _get(lines: list[Line], *labels: str) -> str | None:
    scope = lines
    for depth, label in enumerate(labels):
        top = min((line[0] for line in scope), default=0)
        at = next((i for i, ln in enumerate(scope) if ln[:2] == (top, label)), None)
        if at is None:
            return None
        if depth == len(labels) - 1:
            return scope[at][2]
        scope = _children(scope, at)
    return None


def _last_query_section(text: str) -> str:
    """The body of the capture's last `nvidia-smi -q` section."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "# $ nvidia-smi -q"]
    body = []
    for line in lines[starts[-1] + 2 :]:  # past the command and the banner's closing line
        if line.startswith("####"):
            break
        body.append(line)
    return "\n".join(body)


_TEXT_REASONS = {
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


def _text_expected(gpu: list[Line]) -> Expected:
    def g(*labels: str) -> str | None:
        return _get(gpu, *labels)

    power = "GPU Power Readings"
    link = ("PCI", "GPU Link Info")
    v = {
        "name": g("Product Name"),
        "architecture": g("Product Architecture"),
        "addressing_mode": g("Addressing Mode"),
        "driver_model": g("Driver Model", "Current"),
        "uuid": g("GPU UUID"),
        "serial": g("Serial Number"),
        "vbios_version": g("VBIOS Version"),
        "board_part_number": g("Board Part Number"),
        "pci_bus_id": g("PCI", "Bus Id"),
        "pci_device_id": g("PCI", "Device Id"),
        "persistence": g("Persistence Mode"),
        "display_mode": g("Display Mode"),
        "display_active": g("Display Active"),
        "accounting": g("Accounting Mode"),
        "accounting_buffer": g("Accounting Mode Buffer Size"),
        "compute_mode": g("Compute Mode"),
        "total": g("FB Memory Usage", "Total"),
        "reserved": g("FB Memory Usage", "Reserved"),
        "used": g("FB Memory Usage", "Used"),
        "free": g("FB Memory Usage", "Free"),
        "bar1_total": g("BAR1 Memory Usage", "Total"),
        "bar1_used": g("BAR1 Memory Usage", "Used"),
        "util_gpu": g("Utilization", "GPU"),
        "util_memory": g("Utilization", "Memory"),
        "util_encoder": g("Utilization", "Encoder"),
        "util_decoder": g("Utilization", "Decoder"),
        "temp": g("Temperature", "GPU Current Temp"),
        "temp_slowdown": g("Temperature", "GPU Slowdown Temp"),
        "temp_shutdown": g("Temperature", "GPU Shutdown Temp"),
        "fan": g("Fan Speed"),
        "power_draw": _first(
            g(power, "Power Draw"),
            g(power, "Average Power Draw"),
            g(power, "Instantaneous Power Draw"),
        ),
        # R610 prints the limits inside a "GPU Ceiling Power Limit" block.
        "power_limit": _first(
            g(power, "Current Power Limit"),
            g(power, "GPU Ceiling Power Limit", "Current Power Limit"),
        ),
        "power_default": _first(
            g(power, "Default Power Limit"),
            g(power, "GPU Ceiling Power Limit", "Default Power Limit"),
        ),
        "power_min": g(power, "Min Power Limit"),
        "power_max": g(power, "Max Power Limit"),
        "pstate": g("Performance State"),
        "pcie_gen": g(*link, "PCIe Generation", "Current"),
        "pcie_max_gen": g(*link, "PCIe Generation", "Max"),
        "pcie_gpu_max_gen": g(*link, "PCIe Generation", "Device Max"),
        "pcie_width": g(*link, "Link Width", "Current"),
        "pcie_max_width": g(*link, "Link Width", "Max"),
        "tx": g("PCI", "Tx Throughput"),
        "rx": g("PCI", "Rx Throughput"),
        "replays": g("PCI", "Replays Since Reset"),
        "ecc": g("ECC Mode", "Current"),
        "ecc_pending": g("ECC Mode", "Pending"),
        "retired_single": g("Retired Pages", "Single Bit ECC"),
        "retired_double": g("Retired Pages", "Double Bit ECC"),
        "retired_pending": g("Retired Pages", "Pending Page Blacklist"),
        "remapped_corr": g("Remapped Rows", "Correctable Error"),
        "remapped_unc": g("Remapped Rows", "Uncorrectable Error"),
        "remapped_pending": g("Remapped Rows", "Pending"),
        "remapped_failure": g("Remapped Rows", "Remapping Failure Occurred"),
        "mig": g("MIG Mode", "Current"),
        "mig_pending": g("MIG Mode", "Pending"),
    }
    for clock, label in (
        ("graphics", "Graphics"),
        ("sm", "SM"),
        ("memory", "Memory"),
        ("video", "Video"),
    ):
        v[f"clock_{clock}"] = g("Clocks", label)
        v[f"max_clock_{clock}"] = g("Max Clocks", label)
    for scope in ("Volatile", "Aggregate"):
        counts = {
            label: value
            for _, label, value in (
                _blocks(_blocks(gpu, "ECC Errors")[0], scope)[0]
                if _blocks(gpu, "ECC Errors")
                else []
            )
        }
        v[f"ecc_{scope.lower()}_corrected"] = _sum(
            *(value for label, value in counts.items() if label.endswith(" Correctable"))
        )
        v[f"ecc_{scope.lower()}_uncorrected"] = _sum(
            *(value for label, value in counts.items() if " Uncorrectable" in label)
        )
    expected = Expected(v)
    reasons = _blocks(gpu, "Clocks Event Reasons")
    expected.reasons = (
        [_TEXT_REASONS[label] for _, label, value in reasons[0] if value == "Active"]
        if reasons
        else None  # type: ignore[assignment]
    )
    for device in _blocks(gpu, "MIG Device"):
        expected.mig_bar1_mib.append(_int(_get(device, "Shared BAR1 Memory", "Total")))
        expected.mig_sram_uncorrected.append(
            _int(_get(device, "ECC Errors", "Volatile", "SRAM Uncorrectable"))
        )
        expected.mig_devices.append(
            (
                _int(_get(device, "GPU Instance ID")),
                _int(_get(device, "Compute Instance ID")),
                _int(_get(device, "Device Attributes", "Shared", "Multiprocessor count")),
                _int(_get(device, "Shared FB Memory Usage", "Total")),
                _int(_get(device, "Shared FB Memory Usage", "Used")),
            )
        )
    for block in _blocks(gpu, "Processes"):
        gi = ci = None
        for indent, label, value in block:
            if label == "GPU instance ID":
                gi = _int(value)
            elif label == "Compute instance ID":
                ci = _int(value)
            elif label == "Process ID":
                at = block.index((indent, label, value))
                member = _children(block, at)
                expected.processes.append(
                    (
                        _int(value),
                        PROCESS_TYPES[_get(member, "Type") or ""],
                        _clean(_get(member, "Name")),
                        _int(_get(member, "Used GPU Memory")),
                        gi,
                        ci,
                    )
                )
    return expected


@dataclass
class Capture:
    driver: str | None
    cuda: str | None
    attached: int | None
    gpus: list[Expected]
    mig_names: dict[int, str]  # MIG device index -> profile, from `nvidia-smi -L`
    mig_uuids: dict[int, str]  # MIG device index -> UUID, from `nvidia-smi -L`
    nvlink: int | None  # active links from `nvidia-smi nvlink -s`; None: not in the capture


def _read_capture(path: Path) -> Capture:
    text = path.read_text()
    if path.suffix == ".xml":
        root = ET.fromstring(text)
        return Capture(
            root.findtext("driver_version"),
            root.findtext("cuda_version"),
            _int(root.findtext("attached_gpus")),
            [_xml_expected(gpu) for gpu in root.findall("gpu")],
            {},
            {},
            None,
        )
    lines = _lines(_last_query_section(text))
    gpus = [
        _text_expected(_children(lines, i))
        for i, line in enumerate(lines)
        if re.fullmatch(r"GPU [0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d", line[1])
    ]
    names = {
        int(m.group(2)): m.group(1)
        for m in re.finditer(r"^\s+MIG (\S+)\s+Device\s+(\d+):", text, re.MULTILINE)
    }
    uuids = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"^\s+MIG \S+\s+Device\s+(\d+): \(UUID: (\S+)\)$", text, re.MULTILINE)
    }
    nvlink_lines = re.findall(r"^\s+Link \d+: (.+)$", text, re.MULTILINE)
    return Capture(
        re.sub(r"\s*\[.*\]$", "", _get(lines, "Driver Version") or ""),
        re.sub(r"\s*\[.*\]$", "", _get(lines, "CUDA Version") or ""),
        _int(_get(lines, "Attached GPUs")),
        gpus,
        names,
        uuids,
        sum("GB/s" in link for link in nvlink_lines) if nvlink_lines else None,
    )


# --- what hwinfo reports on the imported scenario ---


def _hwinfo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWINFO")}
    return subprocess.run(
        [sys.executable, "-m", "hwinfo", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


_RAW_SCRIPT = """\
import json, sys, pynvml as N, hwinfo.sim
hwinfo.sim.install(sys.argv[1]); N.nvmlInit()
out = []
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    bar1, sram = [], []
    for m in range(N.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            mig = N.nvmlDeviceGetMigDeviceHandleByIndex(h, m)
        except N.NVMLError_NotFound:
            break
        bar1.append(N.nvmlDeviceGetBAR1MemoryInfo(mig).bar1Total // (1 << 20))
        try:
            sram.append(N.nvmlDeviceGetMemoryErrorCounter(mig, 1, 0, N.NVML_MEMORY_LOCATION_SRAM))
        except N.NVMLError_NotSupported:
            sram.append(None)
    display = {}
    for key, call in (("display_mode", N.nvmlDeviceGetDisplayMode),
                      ("display_active", N.nvmlDeviceGetDisplayActive)):
        try:
            display[key] = call(h)
        except N.NVMLError_NotSupported:
            display[key] = None
    out.append({"mig_bar1_mib": bar1, "mig_sram_uncorrected": sram, **display})
print(json.dumps(out))
"""


def _raw(scenario: Path) -> list[dict[str, Any]]:
    """Per GPU, what raw pynvml reads on the imported scenario where the report has no field."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWINFO")}
    done = subprocess.run([sys.executable, "-c", _RAW_SCRIPT, str(scenario)], capture_output=True,
                          text=True, timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _report(capture: Path, tmp_path: Path) -> dict[str, Any]:
    scenario = tmp_path / "imported.json"
    imported = _hwinfo("sim", "import", str(capture), "-o", str(scenario))
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr.strip() == f"wrote {scenario}"
    masked = re.search(r"^masked:\s+yes$", capture.read_text(), re.MULTILINE) is not None
    assert json.loads(scenario.read_text())["imported"].get("masked", False) == masked
    report = _hwinfo(
        "report", "--simulate", str(scenario), "--format", "json", "--full-command", "--no-color"
    )
    assert report.returncode == 0, report.stderr
    assert report.stderr == ""
    return json.loads(report.stdout)


def _bytes(text: str | None) -> int | None:
    n = _int(text)
    return None if n is None else n * MIB


def _ratio(text: str | None) -> float | None:
    n = _int(text)
    return None if n is None else n / 100


def _hertz(text: str | None) -> float | None:
    n = _int(text)
    return None if n is None else n * 1e6


def _kib(text: str | None) -> float | None:
    n = _int(text)
    return None if n is None else n * 1024.0


def _hex(text: str | None) -> int | None:
    text = _clean(text)
    return None if text is None else int(text, 16)


def _upper(text: str | None) -> str | None:
    text = _clean(text)
    return None if text is None else text.upper()


def _mode(text: str | None) -> str | None:
    text = _clean(text)
    return None if text is None else text.lower()


def _architecture(text: str | None) -> str | None:
    """"Ada Lovelace" -> "ada", as the report names architectures."""
    text = _clean(text)
    return None if text is None else text.split()[0].lower()


# report JSON path -> (expected key, conversion).
FIELDS: dict[str, tuple[str, Callable[[str | None], Any]]] = {
    "name": ("name", _clean),
    "architecture": ("architecture", _architecture),
    "addressing_mode": ("addressing_mode", _mode),
    "driver_model": ("driver_model", _mode),
    "uuid": ("uuid", _clean),
    "serial": ("serial", _clean),
    "vbios_version": ("vbios_version", _clean),
    "board_part_number": ("board_part_number", _clean),
    "pci_bus_id": ("pci_bus_id", _upper),
    "pci_device_id": ("pci_device_id", _hex),
    "persistence_mode": ("persistence", _enabled),
    "accounting.enabled": ("accounting", _enabled),
    "accounting.buffer_size": ("accounting_buffer", _int),
    "compute_mode": ("compute_mode", _mode),
    "memory_total_bytes": ("total", _bytes),
    "memory_reserved_bytes": ("reserved", _bytes),
    "memory_used_bytes": ("used", _bytes),
    "memory_free_bytes": ("free", _bytes),
    "bar1_total_bytes": ("bar1_total", _bytes),
    "bar1_used_bytes": ("bar1_used", _bytes),
    "utilization_gpu_ratio": ("util_gpu", _ratio),
    "utilization_memory_ratio": ("util_memory", _ratio),
    "utilization_encoder_ratio": ("util_encoder", _ratio),
    "utilization_decoder_ratio": ("util_decoder", _ratio),
    "temperature_celsius": ("temp", _float),
    "temperature_slowdown_celsius": ("temp_slowdown", _float),
    "temperature_shutdown_celsius": ("temp_shutdown", _float),
    "fan_speed_ratio": ("fan", _ratio),
    "power_draw_watts": ("power_draw", _float),
    "power_limit_watts": ("power_limit", _float),
    "power_default_limit_watts": ("power_default", _float),
    "power_min_limit_watts": ("power_min", _float),
    "power_max_limit_watts": ("power_max", _float),
    "performance_state": ("pstate", _int),
    "pcie.generation": ("pcie_gen", _int),
    "pcie.max_generation": ("pcie_max_gen", _int),
    "pcie.gpu_max_generation": ("pcie_gpu_max_gen", _int),
    "pcie.width": ("pcie_width", _int),
    "pcie.max_width": ("pcie_max_width", _int),
    "pcie.tx_bytes_per_second": ("tx", _kib),
    "pcie.rx_bytes_per_second": ("rx", _kib),
    "pcie.replay_errors": ("replays", _int),
    "ecc.enabled": ("ecc", _enabled),
    "ecc.pending_enabled": ("ecc_pending", _enabled),
    "ecc.volatile_corrected": ("ecc_volatile_corrected", lambda n: n),
    "ecc.volatile_uncorrected": ("ecc_volatile_uncorrected", lambda n: n),
    "ecc.aggregate_corrected": ("ecc_aggregate_corrected", lambda n: n),
    "ecc.aggregate_uncorrected": ("ecc_aggregate_uncorrected", lambda n: n),
    "retired_pages.single_bit": ("retired_single", _int),
    "retired_pages.double_bit": ("retired_double", _int),
    "retired_pages.pending": ("retired_pending", _yes),
    "remapped_rows.correctable": ("remapped_corr", _int),
    "remapped_rows.uncorrectable": ("remapped_unc", _int),
    "remapped_rows.pending": ("remapped_pending", _yes),
    "remapped_rows.failure": ("remapped_failure", _yes),
    "mig.enabled": ("mig", _enabled),
    "mig.pending_enabled": ("mig_pending", _enabled),
    **{
        f"{block}.{clock}_hertz": (f"{prefix}clock_{clock}", _hertz)
        for block, prefix in (("clocks", ""), ("max_clocks", "max_"))
        for clock in ("graphics", "sm", "memory", "video")
    },
}
# Blocks the report gives as null when NVML does not support them (all members N/A).
BLOCKS = ("accounting", "pcie", "ecc", "retired_pages", "remapped_rows", "mig", "clocks", "max_clocks")
NOT_IN_A_DUMP = (
    "cuda_compute_capability",
    "cuda_cores",
    "energy_joules",
    "numa_node",
    "cpu_affinity",
    "activity",  # GPM: nvidia-smi shows no GPM figures, so none may be invented (idle)
)


def _at(report: dict[str, Any], dotted: str) -> Any:
    value: Any = report
    for key in dotted.split("."):
        if value is None:
            return None
        value = value[key]
    return value


def _process_name(name: str | None) -> str | None:
    """hwinfo's process name, as ps shows it: the program's base name (a Windows path is the
    program, spaces and all; a Linux name is the command line, the program its first word)."""
    if not name:
        return None
    return ntpath.basename(name) if "\\" in name else os.path.basename(name.split()[0])


def _command(name: str | None) -> str | None:
    """hwinfo's command (--full-command): NVML's name kept whole, a Linux command line or a
    Windows executable's path."""
    return name or None


def _unknown_board(text: str) -> str:
    """The same machine under a product name the catalogue does not know."""
    return re.sub(r"NVIDIA (A100-SXM4-40GB|H100 80GB HBM3)", "NVIDIA Hypothetical X100", text)


def _second_gpu_only(text: str) -> str:
    """What `nvidia-smi -q -x -i 1` writes: one <gpu>, and <attached_gpus> still 2."""
    root = ET.fromstring(text)
    root.remove(root.findall("gpu")[0])
    return ET.tostring(root, encoding="unicode")


MIG_CAPTURES = [p for p in CAPTURE_FILES if "a100" in p.name or "h100" in p.name]
VARIANTS: list[tuple[Path, Callable[[str], str] | None]] = [
    *((p, None) for p in CAPTURE_FILES),
    # A MIG board outside the catalogue (MIG on or off) imports and reports from the dump's
    # own facts.
    *((p, _unknown_board) for p in MIG_CAPTURES),
    # https://github.com/influxdata/telegraf/blob/58ff61d01be05ec0d4c2f57c8c89031e026fa0b9/plugins/inputs/nvidia_smi/testdata/dual_a5000-v13.xml
    *((p, _second_gpu_only) for p in CAPTURE_FILES if p.name == "dual-rtx-a5000-v13.xml"),
]


@pytest.mark.parametrize(("path", "variant"), each_capture([
    pytest.param(p, v, id=p.name + (f"-{v.__name__.strip('_')}" if v else "")) for p, v in VARIANTS
], width=2))
def test_imported_capture_reports_what_nvidia_smi_showed(
    path: Path, variant: Callable[[str], str] | None, tmp_path: Path
) -> None:
    if variant is not None:
        (tmp_path / "in").mkdir()
        changed = tmp_path / "in" / path.name
        changed.write_text(variant(path.read_text()))
        path = changed
    capture = _read_capture(path)
    report = _report(path, tmp_path)["gpu"]
    raw = _raw(tmp_path / "imported.json")
    assert report["status"] == "ok", report["message"]
    assert report["driver_version"] == capture.driver
    assert report["cuda_driver_version"] == capture.cuda
    assert len(report["gpus"]) == len(capture.gpus)
    assert capture.attached is not None and capture.attached >= len(capture.gpus)
    for expected, gpu, read in zip(capture.gpus, report["gpus"], raw):
        assert read["mig_bar1_mib"] == expected.mig_bar1_mib
        assert read["mig_sram_uncorrected"] == expected.mig_sram_uncorrected
        for key in ("display_mode", "display_active"):  # what nvitop shows as Disp.A
            want = _enabled(expected.values[key])
            assert read[key] == (None if want is None else int(want)), key
        for dotted, (key, convert) in FIELDS.items():
            want = convert(expected.values[key])
            block = dotted.split(".")[0]
            if block in BLOCKS and gpu[block] is None:
                assert want is None, f"{dotted}: null, but the capture has {want!r}"
                continue
            assert _at(gpu, dotted) == want, dotted
        assert gpu["clock_event_reasons"] == (
            None
            if expected.reasons is None
            # The format spells one reason in the singular.
            else [
                r.replace("display_clocks_setting", "display_clock_setting")
                for r in expected.reasons
            ]
        )
        for key in NOT_IN_A_DUMP:
            assert gpu[key] is None, key
        assert gpu["nvlink_links_active"] == capture.nvlink
        devices = gpu["mig"]["devices"] if gpu["mig"] else []
        got_devices = [
            (
                d["gpu_instance_id"],
                d["compute_instance_id"],
                d["multiprocessor_count"],
                d["memory_total_bytes"] // MIB,
                d["memory_used_bytes"] // MIB,
            )
            for d in devices
        ]
        assert got_devices == expected.mig_devices
        assert [d["activity"] for d in devices] == [None] * len(devices)
        if capture.mig_names:
            assert {d["index"]: d["profile"] for d in devices} == capture.mig_names
        if capture.mig_uuids:  # as -L printed them (masked in these captures), not derived
            assert {d["index"]: d["uuid"] for d in devices} == capture.mig_uuids
        guessed = "\n".join(
            json.loads((tmp_path / "imported.json").read_text())["imported"].get("guessed", [])
        )
        # What the dump does not hold is said to be inferred (docs/scenario-format.md).
        if devices and not capture.mig_uuids:
            assert "MIG device UUIDs (the dump lists none" in guessed
        for gi in sorted({d["gpu_instance_id"] for d in devices}) if not capture.mig_names else ():
            assert f"GPU instance {gi}'s profile name" in guessed
        processes = sorted(expected.processes)
        assert [
            (
                p["pid"],
                p["type"],
                p["name"],
                None if p["used_memory_bytes"] is None else p["used_memory_bytes"] // MIB,
                p["gpu_instance_id"],
                p["compute_instance_id"],
            )
            for p in gpu["processes"] + [q for d in devices for q in d["processes"]]
        ] == [
            (pid, kind, _process_name(name), memory, gi, ci)
            for pid, kind, name, memory, gi, ci in processes
        ]
        by_pid = {pid: name for pid, _, name, *_ in processes}
        for p in gpu["processes"] + [q for d in devices for q in d["processes"]]:
            assert p["user"] is None and p["command"] == _command(by_pid[p["pid"]])


def test_accounted_processes_replay_as_the_capture_listed_them(tmp_path: Path) -> None:
    """The L40S capture's --query-accounted-apps rows (load), through the real pynvml."""
    # https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-l40s__595.80.txt
    capture = CAPTURES / "text" / "linux-x86_64__nvidia-l40s__595.80.txt"
    require_captures(capture)
    scenario = tmp_path / "l40s.json"
    assert _hwinfo("sim", "import", str(capture), "-o", str(scenario)).returncode == 0
    script = (
        "import pynvml as N, hwinfo.sim, sys\n"
        "hwinfo.sim.install(sys.argv[1]); N.nvmlInit(); h = N.nvmlDeviceGetHandleByIndex(0)\n"
        "for pid in N.nvmlDeviceGetAccountingPids(h):\n"
        "    s = N.nvmlDeviceGetAccountingStats(h, pid)\n"
        "    print(pid, s.gpuUtilization, s.memoryUtilization, s.maxMemoryUsage, s.time, s.isRunning)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(scenario)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rows = {int(line.split()[0]): line.split()[1:] for line in done.stdout.splitlines()}
    # Ended rows as captured (gpu %, memory %, max memory, time ms); running ones are the
    # dump's processes, listed with time 0.
    assert rows[15727] == ["71", "8", "0", "5270", "0"]
    assert rows[17439] == ["65", "7", "0", "5096", "0"]
    assert rows[18679] == ["99", "13", "0", "153712", "0"]
    running = {pid for pid, row in rows.items() if row[-1] == "1"}
    assert running == {20037, 20038} and all(rows[pid][3] == "0" for pid in running)
