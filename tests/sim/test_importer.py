"""The nvidia-smi XML importer: every real dump among the captures, and hand-written ones."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pynvml
import pytest
from conftest import CAPTURES, XML_CAPTURES, each_capture, require_captures
from fixtures.smi_dumps import capture_section, dump_xml, lgi_section

import hwinfo.sim
from hwinfo.sim import Scenario
from hwinfo.sim.importer import DumpError, import_dump, import_nvidia_smi_xml

NOT_AVAILABLE = re.compile(r"N/A|\[.*\]|Not Supported|Requested functionality has been deprecated")


def _load(scenario: dict[str, Any], tmp_path: Path) -> Scenario:
    """Validate through the real loader, as `hwinfo --simulate FILE` would."""
    path = tmp_path / "imported.json"
    path.write_text(json.dumps(scenario))
    return hwinfo.sim.load_scenario(str(path))


# --- reading the XML independently of the importer ---


def _text(element: ET.Element, path: str) -> str | None:
    """Text at path, or None when absent or nvidia-smi printed no value."""
    found = element.find(path)
    text = " ".join((found.text or "").split()) if found is not None else ""
    return None if not text or NOT_AVAILABLE.fullmatch(text) else text


def _number(element: ET.Element, path: str) -> int | None:
    """The integer in "19968 MiB", "16x", "P8", "4"; None when not available."""
    text = _text(element, path)
    return None if text is None else int(re.search(r"\d+", text).group())  # type: ignore[union-attr]


@pytest.fixture(params=each_capture(XML_CAPTURES))
def dump(request: pytest.FixtureRequest) -> tuple[ET.Element, dict[str, Any]]:
    path: Path = request.param
    text = path.read_text()
    return ET.fromstring(text), import_nvidia_smi_xml(text, path.name)


def test_dump_gpus_match_the_xml(dump: tuple[ET.Element, dict[str, Any]]) -> None:
    root, scenario = dump
    elements = root.findall("gpu")
    assert scenario["format"] == 1
    assert scenario["driver"]["version"] == _text(root, "driver_version")
    major, minor = _text(root, "cuda_version").split(".")  # type: ignore[union-attr]
    assert scenario["driver"]["cuda_version"] == int(major) * 1000 + int(minor) * 10
    assert len(scenario["gpus"]) == len(elements) > 0
    for element, gpu in zip(elements, scenario["gpus"]):
        assert gpu["name"] == _text(element, "product_name")
        assert gpu["memory_total_mib"] == _number(element, "fb_memory_usage/total")
        assert gpu["memory_used_mib"] == _number(element, "fb_memory_usage/used")
        assert gpu["pci_bus_id"] == _text(element, "pci/pci_bus_id").upper()  # type: ignore[union-attr]
        for key, path in (
            ("utilization_gpu_percent", "utilization/gpu_util"),
            ("utilization_memory_percent", "utilization/memory_util"),
            ("temperature_c", "temperature/gpu_temp"),
        ):
            # Not available stays absent: never a made-up 0.
            assert gpu.get(key) == _number(element, path), key
        link = "pci/pci_gpu_link_info"
        pcie = gpu.get("pcie", {})
        assert pcie.get("gen") == _number(element, f"{link}/pcie_gen/current_link_gen")
        assert pcie.get("max_gen") == _number(element, f"{link}/pcie_gen/max_link_gen")
        assert pcie.get("width") == _number(element, f"{link}/link_widths/current_link_width")
        assert pcie.get("max_width") == _number(element, f"{link}/link_widths/max_link_width")


def test_dump_processes_match_the_xml(dump: tuple[ET.Element, dict[str, Any]]) -> None:
    root, scenario = dump
    for element, gpu in zip(root.findall("gpu"), scenario["gpus"]):
        expected = [
            (_number(p, "pid"), _number(p, "used_memory"), _text(p, "process_name"))
            for p in element.findall("processes/process_info")
        ]
        got = [(p["pid"], p["used_memory_mib"], p.get("name")) for p in gpu["processes"]]
        assert got == expected
        assert all("user" not in p for p in gpu["processes"])  # the dump names no users


def test_dump_mig_devices_match_the_xml(
    dump: tuple[ET.Element, dict[str, Any]], tmp_path: Path
) -> None:
    root, scenario = dump
    loaded = _load(scenario, tmp_path)
    for element, gpu in zip(root.findall("gpu"), loaded.gpus):
        devices = element.findall("mig_devices/mig_device")
        instances = {gi.id: gi for gi in gpu.mig.gpu_instances} if gpu.mig else {}
        assert sum(len(gi.compute_instances) for gi in instances.values()) == len(devices)
        for device in devices:
            gi = instances[_number(device, "gpu_instance_id")]
            ci = next(
                c for c in gi.compute_instances if c.id == _number(device, "compute_instance_id")
            )
            total = _number(device, "fb_memory_usage/total")
            assert gi.profile.memory_mib == pytest.approx(total, rel=0.05)
            assert ci.profile.multiprocessor_count == _number(
                device, "device_attributes/shared/multiprocessor_count"
            )


@contextmanager
def _simulated(scenario: dict[str, Any], tmp_path: Path) -> Iterator[None]:
    """pynvml running on the simulator loaded with this scenario."""
    hwinfo.sim.install(_load(scenario, tmp_path))
    pynvml.nvmlInit()
    try:
        yield
    finally:
        pynvml.nvmlShutdown()
        hwinfo.sim.uninstall()


def _nvml(query: Callable[[Any], int], handle: Any) -> int | None:
    """What NVML answers; None for NotSupported, which is how nvidia-smi comes to print N/A."""
    try:
        return query(handle)
    except pynvml.NVMLError_NotSupported:
        return None


MIB = 1024 * 1024
_LINK = "pci/pci_gpu_link_info"
# (XML path, NVML query): what nvidia-smi printed against what pynvml reads on the simulator.
_NVML_VIEW: tuple[tuple[str, Callable[[Any], int]], ...] = (
    ("fb_memory_usage/total", lambda h: pynvml.nvmlDeviceGetMemoryInfo(h).total // MIB),
    ("utilization/gpu_util", lambda h: pynvml.nvmlDeviceGetUtilizationRates(h).gpu),
    ("utilization/memory_util", lambda h: pynvml.nvmlDeviceGetUtilizationRates(h).memory),
    ("temperature/gpu_temp", lambda h: pynvml.nvmlDeviceGetTemperature(h, 0)),
    ("fan_speed", pynvml.nvmlDeviceGetFanSpeed),
    ("performance_state", pynvml.nvmlDeviceGetPerformanceState),
    (f"{_LINK}/pcie_gen/current_link_gen", pynvml.nvmlDeviceGetCurrPcieLinkGeneration),
    (f"{_LINK}/pcie_gen/max_link_gen", pynvml.nvmlDeviceGetMaxPcieLinkGeneration),
    (f"{_LINK}/link_widths/current_link_width", pynvml.nvmlDeviceGetCurrPcieLinkWidth),
    (f"{_LINK}/link_widths/max_link_width", pynvml.nvmlDeviceGetMaxPcieLinkWidth),
)


def test_simulated_nvml_shows_what_nvidia_smi_showed(
    dump: tuple[ET.Element, dict[str, Any]], tmp_path: Path
) -> None:
    root, scenario = dump
    with _simulated(scenario, tmp_path):
        for index, element in enumerate(root.findall("gpu")):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            for path, query in _NVML_VIEW:
                assert _nvml(query, handle) == _number(element, path), path
            # NVML v1 "used" includes the reserved memory nvidia-smi prints apart.
            v1_used = pynvml.nvmlDeviceGetMemoryInfo(handle).used // MIB
            reserved = _number(element, "fb_memory_usage/reserved") or 0
            assert v1_used == _number(element, "fb_memory_usage/used") + reserved
            for kind, query in (
                ("C", pynvml.nvmlDeviceGetComputeRunningProcesses),
                ("G", pynvml.nvmlDeviceGetGraphicsRunningProcesses),
            ):
                expected = [
                    (_number(p, "pid"), _number(p, "used_memory"))
                    for p in element.findall("processes/process_info")
                    if kind in _text(p, "type").split("+")  # type: ignore[union-attr]
                ]
                got = [
                    (p.pid, None if p.usedGpuMemory is None else p.usedGpuMemory // MIB)
                    for p in query(handle)
                ]
                assert got == expected, kind
            for number, device in enumerate(element.findall("mig_devices/mig_device")):
                mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, number)
                assert pynvml.nvmlDeviceGetGpuInstanceId(mig) == _number(device, "gpu_instance_id")
                assert pynvml.nvmlDeviceGetComputeInstanceId(mig) == _number(
                    device, "compute_instance_id"
                )
                memory = pynvml.nvmlDeviceGetMemoryInfo(mig)
                assert memory.total // MIB == _number(device, "fb_memory_usage/total")
                assert memory.used // MIB == _number(device, "fb_memory_usage/used")


def test_every_dump_validates(dump: tuple[ET.Element, dict[str, Any]], tmp_path: Path) -> None:
    root, scenario = dump
    loaded = _load(scenario, tmp_path)
    for element, gpu in zip(root.findall("gpu"), loaded.gpus):
        # Board defaults must not override what the dump shows.
        assert gpu.name == _text(element, "product_name")
        assert gpu.memory_total_mib == _number(element, "fb_memory_usage/total")
        assert gpu.uuid == _text(element, "uuid")
        assert [p.pid for p in gpu.processes] == [
            _number(p, "pid") for p in element.findall("processes/process_info")
        ]


def test_a100_capture_has_two_3g_20gb_instances() -> None:
    # https://github.com/netdata/netdata/blob/master/src/go/plugin/go.d/collector/nvidia_smi/testdata/a100-sxm4-mig.xml
    path = CAPTURES / "a100-sxm4-40gb-mig-2x3g.20gb.xml"
    require_captures(path)
    (gpu,) = import_nvidia_smi_xml(path.read_text(), path.name)["gpus"]
    assert gpu["board"] == "A100-SXM4-40GB"
    assert gpu["mig"]["enabled"] is True
    assert [(gi["profile"], gi["id"], gi["start"]) for gi in gpu["mig"]["gpu_instances"]] == [
        ("3g.20gb", 1, 0),
        ("3g.20gb", 2, 4),
    ]
    # N/A in the dump: no fan, no utilization while in MIG mode; absent, so NotSupported.
    assert "fan_percent" not in gpu
    assert "utilization_gpu_percent" not in gpu


# --- hand-written dumps ---


def test_schema_variants_and_unavailable_values(tmp_path: Path) -> None:
    text = dump_xml(
        {
            "product_name": "Quadro RTX 8000",  # not in the catalogue
            "product_architecture": "Ada Lovelace",
            "fb_memory_usage/total": "46080 MiB",
            "pci/pci_bus_id": "0000:3b:00.0",
            "pci/pci_device_id": "0x1E3010DE",
            "utilization/gpu_util": "N/A",
            "utilization/memory_util": "[Not Supported]",
            "fan_speed": "N/A",
            "performance_state": "P2",
            # v13: the average is N/A here, so the instant reading stands in.
            "gpu_power_readings/average_power_draw": "N/A",
            "gpu_power_readings/instant_power_draw": "61.50 W",
            "gpu_power_readings/current_power_limit": "Requested functionality has been deprecated",
            "module_power_readings/current_power_limit": "260.00 W",
            "ecc_mode/current_ecc": "Enabled",
            "ecc_mode/pending_ecc": "Disabled",
            "ecc_errors/volatile/single_bit/total": "3",  # pre-Ampere schema
            "ecc_errors/volatile/double_bit/total": "1",
            "ecc_errors/aggregate/sram_correctable": "2",  # Ampere schema, split by memory kind
            "ecc_errors/aggregate/dram_correctable": "5",
            "ecc_errors/aggregate/sram_uncorrectable_parity": "N/A",
            "clocks_event_reasons/clocks_event_reason_gpu_idle": "Not Active",
            "clocks_event_reasons/clocks_event_reason_sw_power_cap": "Active",
            "clocks_event_reasons/clocks_event_reason_display_clocks_setting": "Active",
        },
        processes=[{"pid": "77", "type": "C+G", "process_name": "", "used_memory": "N/A"}],
    )
    gpu = import_nvidia_smi_xml(text, "variants.xml")["gpus"][0]
    assert "board" not in gpu
    assert gpu["architecture"] == "ada"
    assert gpu["pci_bus_id"] == "00000000:3B:00.0"
    assert gpu["pci_device_id"] == "0x1E3010DE"
    assert "utilization_gpu_percent" not in gpu and "utilization_memory_percent" not in gpu
    assert "fan_percent" not in gpu
    assert gpu["pstate"] == 2
    assert gpu["memory_reserved_mib"] == 0  # no <reserved> (before R510): "used" included it
    assert gpu["power_draw_w"] == 61.5
    assert gpu["power_limit_w"] == 260.0
    assert gpu["ecc"] == {
        "enabled": True,
        "pending": False,
        "volatile": {"corrected": 3, "uncorrected": 1},
        "aggregate": {"corrected": 7},
    }
    assert gpu["clock_event_reasons"] == ["sw_power_cap", "display_clock_setting"]
    assert "mig" not in gpu
    assert gpu["processes"] == [{"pid": 77, "type": "compute+graphics", "used_memory_mib": None}]
    loaded = _load(import_nvidia_smi_xml(text, "variants.xml"), tmp_path).gpus[0]
    assert loaded.board is None and loaded.name == "Quadro RTX 8000"
    assert loaded.utilization_gpu_percent is None  # without a board: NotSupported


def _log(inner: str) -> str:
    """A hand-written log around `inner`, with a driver version."""
    return f"<nvidia_smi_log><driver_version>550.54.15</driver_version>{inner}</nvidia_smi_log>"


_GPU = "<gpu id='0'><product_name>T</product_name><fb_memory_usage><total>{}</total>"
_END = "</fb_memory_usage>{}</gpu>"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nvidia-smi: command not found", "not XML"),
        ("<nvidia_smi_log><gpu>", "not XML"),
        ("<html><body>No devices were found</body></html>", "root element <html>"),
        (
            "<nvidia_smi_log><attached_gpus>1</attached_gpus></nvidia_smi_log>",
            "no driver version",
        ),
        (
            _log("<attached_gpus>0</attached_gpus>" + _GPU.format("1 MiB") + _END.format("")),
            "says 0 GPU(s) are attached but lists 1",
        ),
        (
            _log("<gpu id='0'><fb_memory_usage><total>1 MiB</total></fb_memory_usage></gpu>"),
            "gpu 0 (0): no <product_name> value",
        ),
        (
            _log(_GPU.format("lots") + _END.format("")),
            "<fb_memory_usage/total> is 'lots': expected a number in MiB",
        ),
        (
            _log(_GPU.format("1 MiB") + _END.format("<performance_state>P99</performance_state>")),
            "<performance_state> is 'P99'",
        ),
    ],
)
def test_malformed_dumps_are_rejected(text: str, message: str) -> None:
    with pytest.raises(DumpError, match=re.escape(message)) as caught:
        import_nvidia_smi_xml(text, "bad.xml")
    assert str(caught.value).startswith("bad.xml: ")
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


# --- dumps as nvidia-smi showed them ---

# https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h100-mig__590.48.01.txt
H100_MIG = CAPTURES / "text" / "linux-x86_64__nvidia-h100-mig__590.48.01.txt"


def _capture_text(path: Path) -> str:
    require_captures(path)
    return path.read_text()


def test_a_dump_of_one_gpu_of_several_imports(tmp_path: Path) -> None:
    """`nvidia-smi -q -x -i 1` keeps <attached_gpus> at 2 and lists one <gpu>."""
    # https://github.com/influxdata/telegraf/blob/58ff61d01be05ec0d4c2f57c8c89031e026fa0b9/plugins/inputs/nvidia_smi/testdata/dual_a5000-v13.xml
    root = ET.fromstring(_capture_text(CAPTURES / "dual-rtx-a5000-v13.xml"))
    root.remove(root.findall("gpu")[0])
    scenario = import_dump(ET.tostring(root, encoding="unicode"), "one.xml")
    assert scenario["imported"]["attached_gpus"] == 2
    assert [g["pci_bus_id"] for g in scenario["gpus"]] == ["00000000:C1:00.0"]
    assert "1 of 2 attached GPUs, taken with -i: 00000000:C1:00.0" in scenario["description"]
    assert _load(scenario, tmp_path).imported.attached_gpus == 2  # type: ignore[union-attr]


def test_power_draw_of_drivers_535_to_565(tmp_path: Path) -> None:
    """R535-R565 split GPU and module readings but keep the v12 names (power_draw)."""
    text = dump_xml(
        {
            "gpu_power_readings/power_draw": "71.25 W",
            "gpu_power_readings/current_power_limit": "400.00 W",
            "gpu_power_readings/default_power_limit": "400.00 W",
            "gpu_power_readings/min_power_limit": "N/A",
            "module_power_readings/power_draw": "150.50 W",
            "module_power_readings/min_power_limit": "100.00 W",
        }
    )
    gpu = import_dump(text, "r550.xml")["gpus"][0]
    assert (gpu["power_draw_w"], gpu["power_limit_w"], gpu["power_default_limit_w"]) == (
        71.25,
        400.0,
        400.0,
    )
    assert gpu["power_min_limit_w"] == 100.0  # the module's stands in for an N/A GPU reading
    module_only = import_dump(dump_xml({"module_power_readings/power_draw": "150.50 W"}), "grace.xml")[
        "gpus"
    ][0]
    assert module_only["power_draw_w"] == 150.5
    with _simulated(import_dump(text, "r550.xml"), tmp_path):
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        assert pynvml.nvmlDeviceGetPowerUsage(handle) == 71250


def test_absent_stays_absent_on_a_catalogue_board(tmp_path: Path) -> None:
    """A single A100 in a pass-through VM: the catalogue's 12 NVLinks, a PCIe device max
    generation and T.Limit-less thresholds must not appear from the catalogue."""
    text = dump_xml(
        {
            "product_name": "NVIDIA A100-SXM4-40GB",
            "pci/pci_device_id": "[REDACTED]",
            "pci/pci_gpu_link_info/pcie_gen/current_link_gen": "4",
            "temperature/gpu_temp": "36 C",
            "temperature/gpu_temp_tlimit": "-40 C",
        }
    )
    scenario = import_dump(text, "vm.xml")
    assert scenario["gpus"][0]["board"] == "A100-SXM4-40GB"
    gpu = _load(scenario, tmp_path).gpus[0]
    assert gpu.nvlink_links is None and gpu.pci_device_id is None and gpu.serial is None
    assert gpu.temperature_slowdown_c is None and gpu.temperature_shutdown_c is None
    assert gpu.pcie is not None and (gpu.pcie.gen, gpu.pcie.gpu_max_gen) == (4, None)
    assert gpu.cuda_compute_capability is None and gpu.energy_j is None
    with _simulated(scenario, tmp_path):
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        for query in (
            lambda: pynvml.nvmlDeviceGetNvLinkState(handle, 0),
            lambda: pynvml.nvmlDeviceGetGpuMaxPcieLinkGeneration(handle),
            lambda: pynvml.nvmlDeviceGetTemperatureThreshold(handle, 0),
            lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(handle),
        ):
            with pytest.raises(pynvml.NVMLError_NotSupported):
                query()
        assert pynvml.nvmlDeviceGetPciInfo(handle).pciDeviceId == 0  # masked: no id


def test_windows_process_names_keep_their_spaces(tmp_path: Path) -> None:
    name = r"C:\Program Files\NVIDIA Corporation\NVIDIA App\CEF\NVIDIA Overlay.exe"
    text = dump_xml(
        {},
        processes=[
            {"pid": "15964", "type": "C+G", "process_name": name, "used_memory": "N/A"},
        ],
    )
    scenario = import_dump(text, "windows.xml")
    assert scenario["gpus"][0]["processes"][0]["name"] == name
    with _simulated(scenario, tmp_path):
        assert pynvml.nvmlSystemGetProcessName(15964) in (name, name.encode())
    # The report names the program as Task Manager does, and --full-command keeps the
    # path NVML gives (a Windows driver gives no command line).
    path = tmp_path / "windows.json"
    path.write_text(json.dumps(scenario))
    for flags, command in (((), None), (("--full-command",), name)):
        done = subprocess.run(
            [sys.executable, "-m", "hwinfo", "report", "--simulate", str(path), "--format",
             "json", *flags], capture_output=True, text=True, timeout=60, check=False,
            env={k: v for k, v in os.environ.items() if not k.startswith("HWINFO")},
        )
        assert done.returncode == 0, done.stderr
        (process,) = json.loads(done.stdout)["gpu"]["gpus"][0]["processes"]
        assert (process["name"], process["command"]) == ("NVIDIA Overlay.exe", command)


def test_linux_process_names_are_command_lines(tmp_path: Path) -> None:
    """NVML's Linux process name is the whole command line, as for VS Code and Edge in telegraf's
    rtx-3080-v12.xml: the report names the program as ps does and keeps the whole string as the
    command.

    https://github.com/influxdata/telegraf/blob/master/plugins/inputs/nvidia_smi/testdata/rtx-3080-v12.xml
    """
    code = "/opt/visual-studio-code/code --type=gpu-process --gpu-preferences=WAAAAAAAAAAg"
    edge = "/opt/microsoft/msedge/msedge --type=gpu-process --crashpad-handler-pid=1234"
    text = dump_xml(
        {},
        processes=[
            {"pid": "3001", "type": "G", "process_name": code, "used_memory": "60 MiB"},
            {"pid": "3002", "type": "G", "process_name": edge, "used_memory": "40 MiB"},
        ],
    )
    scenario = import_dump(text, "linux.xml")
    with _simulated(scenario, tmp_path):  # what gpustat and nvitop read stays as printed
        assert pynvml.nvmlSystemGetProcessName(3001) in (code, code.encode())
    path = tmp_path / "linux.json"
    path.write_text(json.dumps(scenario))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWINFO")}

    def report(*flags: str) -> list[tuple[str, str | None]]:
        done = subprocess.run(
            [sys.executable, "-m", "hwinfo", "report", "--simulate", str(path), "--format",
             "json", *flags], capture_output=True, text=True, timeout=60, env=env, check=False,
        )
        assert done.returncode == 0, done.stderr
        gpu = json.loads(done.stdout)["gpu"]["gpus"][0]
        return sorted((p["name"], p["command"]) for p in gpu["processes"])

    assert report("--full-command") == [("code", code), ("msedge", edge)]
    assert report() == [("code", None), ("msedge", None)]


def _renumbered(text: str, ids: dict[int, int]) -> str:
    """The H100 MIG capture with other GPU-instance ids, as another real H100 numbered them."""
    return re.sub(
        r"(GPU Instance ID\s+: |GPU instance ID\s+: )(\d+)",
        lambda m: m.group(1) + str(ids.get(int(m.group(2)), int(m.group(2)))),
        text,
    )


def test_mig_placements_come_from_the_capture(tmp_path: Path) -> None:
    """A real H100 has GI 1 at 4:4, GI 5 at 0:2, GI 13 at 2:1 and GI 14 at 3:1: the -lgi
    listing says so, and the import keeps it rather than inferring from the ids."""
    text = _renumbered(_capture_text(H100_MIG), {2: 1, 3: 5, 9: 13, 10: 14}) + lgi_section(
        [
            ("3g.40gb", 9, 1, "4:4"),
            ("2g.20gb", 14, 5, "0:2"),
            ("1g.10gb", 19, 13, "2:1"),
            ("1g.10gb", 19, 14, "3:1"),
        ]
    )
    scenario = import_dump(text, "h100.txt")
    instances = scenario["gpus"][0]["mig"]["gpu_instances"]
    assert [(gi["profile"], gi["id"], gi["start"]) for gi in instances] == [
        ("3g.40gb", 1, 4),
        ("2g.20gb", 5, 0),
        ("1g.10gb", 13, 2),
        ("1g.10gb", 14, 3),
    ]
    with _simulated(scenario, tmp_path):
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        for index, (gi_id, start, size) in enumerate(
            [(1, 4, 4), (5, 0, 2), (13, 2, 1), (14, 3, 1)]
        ):
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)
            assert pynvml.nvmlDeviceGetGpuInstanceId(mig) == gi_id
            gi = pynvml.nvmlDeviceGetGpuInstanceById(handle, gi_id)
            info = pynvml.nvmlGpuInstanceGetInfo(gi)
            assert (info.placement.start, info.placement.size) == (start, size)
    # Without the listing the ids are kept as they are; placements that fit are inferred.
    bare = import_dump(_renumbered(_capture_text(H100_MIG), {2: 1, 3: 5, 9: 13, 10: 14}), "b.txt")
    loaded = _load(bare, tmp_path).gpus[0].mig
    assert loaded is not None and [gi.id for gi in loaded.gpu_instances] == [1, 5, 13, 14]
    # ... and the scenario says they are inferred, as it does not when the capture has them.
    assert "MIG placements (the dump has none)" in bare["imported"]["guessed"][0]
    assert "guessed" not in scenario["imported"]


def test_a_placement_the_table_lacks_is_refused_not_moved() -> None:
    text = _capture_text(H100_MIG) + lgi_section([("3g.40gb", 9, 2, "2:4")])
    with pytest.raises(DumpError, match=r"placed at 2:4, which the catalogue's table"):
        import_dump(text, "h100.txt")


def test_plain_q_text_and_capture_sections() -> None:
    """A pasted `nvidia-smi -q` imports like the capture's own section of it."""
    capture = _capture_text(H100_MIG)
    idle = import_dump(capture, "h100.txt", section="idle")
    body = capture.split("# $ nvidia-smi -q\n", 1)[1].split("#" * 80 + "\n", 1)[1]
    body = body.split("\n" + "#" * 80, 1)[0]
    pasted = import_dump(body, "pasted.txt")
    assert pasted["imported"]["kind"] == "text" and idle["imported"]["kind"] == "capture"
    # The capture adds what its `nvidia-smi -L` section lists: the MIG devices' UUIDs.
    listed = [ci.pop("uuid") for gi in idle["gpus"][0]["mig"]["gpu_instances"]
              for ci in gi["compute_instances"]]
    assert listed == [f"MIG-0000000{i}-0000-0000-0000-00000000000{i}" for i in range(4)]
    # Neither lists placements (no `mig -lgi`); the paste names no profile and lists no UUID
    # either: what each infers it says.
    inferred = [[gi.pop("guessed") for gi in scenario["gpus"][0]["mig"]["gpu_instances"]]
                for scenario in (idle, pasted)]
    assert inferred == [[["placement"]] * 4, [["placement", "profile", "uuid"]] * 4]
    assert pasted["gpus"] == idle["gpus"]
    assert idle["gpus"][0]["processes"] == []
    load = import_dump(capture, "h100.txt")  # the last -q section: under load
    assert [p["name"] for p in load["gpus"][0]["processes"]] == [
        "/root/tools/memhog",
        "/root/tools/memhog",
        "./gpu_burn",
    ]
    with pytest.raises(DumpError, match=r"no nvidia-smi -q section 'busy' \(sections: "):
        import_dump(capture, "h100.txt", section="busy")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "neither nvidia-smi -q -x XML"),
        ("# $ nvidia-smi -L\nGPU 0: X\n", "has no `nvidia-smi -q` section"),
        ("==============NVSMI LOG==============\nTimestamp : now\n", "no driver version"),
        (
            "==============NVSMI LOG==============\n"
            + "".join(f"{' ' * 2 * i}L{i}\n" for i in range(40)),
            "nested deeper than",
        ),
    ],
)
def test_malformed_text_dumps_are_rejected(text: str, message: str) -> None:
    with pytest.raises(DumpError, match=re.escape(message)) as caught:
        import_dump(text, "bad.txt")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("row", "read"), [
    ("15727, 71 %, 8 %, 0 MiB, 5270 ms", [(15727, 71, 8, 0, 5270)]),  # as nvidia-smi prints it
    ("15727, 7² %, 8 %, 0 MiB, 5270 ms", [(15727, None, 8, 0, 5270)]),  # only ASCII digits count
    ("1²3, 71 %, 8 %, 0 MiB, 5270 ms", []),
    ("15727, 71 %, 8 %, 0 MiB, " + "9" * 5000 + " ms", []),
    ("15727, 71 %, 8 %, 0 MiB, [N/A]", []),
    ("garbage", []),
])
def test_accounted_rows_without_a_pid_and_time_it_can_read_are_left_out(
    row: str, read: list[tuple[int | None, ...]]
) -> None:
    from hwinfo.sim.importer_capture import parse_capture

    command = ("nvidia-smi --query-accounted-apps=gpu_bus_id,pid,gpu_util,mem_util,"
               "max_memory_usage,time --format=csv")
    capture = parse_capture(capture_section("load :: query-accounted-apps", command, [
        "gpu_bus_id, pid, gpu_utilization [%], mem_utilization [%], max_memory_usage [MiB], time [ms]",
        f"00000000:01:00.0, {row}"]))
    apps = capture.accounted_apps("load :: query (-q)").get("00000000:01:00.0", [])
    assert [(a.pid, a.gpu_util_percent, a.memory_util_percent, a.max_memory_mib, a.time_ms)
            for a in apps] == read
