"""`hwinfo sim list/import`: real dumps in, a report that shows what nvidia-smi showed out."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import XML_CAPTURES, each_capture, needs

from hwinfo.sim import list_scenarios

HWINFO = [sys.executable, "-m", "hwinfo"]
MIB = 1 << 20


def _number(text: str | None) -> int | None:
    """"12 MiB", "8x", "43 %" -> the number; N/A -> None."""
    match = re.match(r"\s*(\d+)", text or "")
    return int(match.group(1)) if match else None


def _import_and_report(dump: Path, tmp_path: Path) -> dict[str, Any]:
    scenario = tmp_path / (dump.stem + ".json")
    subprocess.run([*HWINFO, "sim", "import", str(dump), "-o", str(scenario)],
                   check=True, capture_output=True)
    out = subprocess.run([*HWINFO, "report", "--format", "json", "--simulate", str(scenario)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["gpu"]


@pytest.mark.parametrize("dump", each_capture(XML_CAPTURES))
def test_imported_dump_reports_what_nvidia_smi_showed(dump: Path, tmp_path: Path) -> None:
    root = ET.parse(dump).getroot()
    report = _import_and_report(dump, tmp_path)
    assert report["driver_version"] == root.findtext("driver_version")
    xml_gpus = root.findall("gpu")
    assert len(report["gpus"]) == len(xml_gpus)
    for xml_gpu, gpu in zip(xml_gpus, report["gpus"]):
        assert gpu["name"] == xml_gpu.findtext("product_name")
        assert gpu["memory_total_bytes"] == _number(xml_gpu.findtext("fb_memory_usage/total")) * MIB
        assert gpu["memory_used_bytes"] == _number(xml_gpu.findtext("fb_memory_usage/used")) * MIB
        util = _number(xml_gpu.findtext("utilization/gpu_util"))
        assert gpu["utilization_gpu_ratio"] == (None if util is None else util / 100)
        link = xml_gpu.find("pci/pci_gpu_link_info")
        shown_link = {
            key: _number(link.findtext(path))
            for key, path in (
                ("generation", "pcie_gen/current_link_gen"),
                ("max_generation", "pcie_gen/max_link_gen"),
                ("width", "link_widths/current_link_width"),
                ("max_width", "link_widths/max_link_width"),
            )
        }
        if all(v is None for v in shown_link.values()):  # a vGPU guest sees no link
            assert gpu["pcie"] is None
        else:
            assert {key: gpu["pcie"][key] for key in shown_link} == shown_link
        shown = {
            _number(p.findtext("pid")): _number(p.findtext("used_memory"))
            for p in xml_gpu.findall("processes/process_info")
        }
        procs = gpu["processes"] + [
            p for dev in (gpu["mig"] or {}).get("devices", []) for p in dev["processes"]
        ]
        assert {p["pid"]: p["used_memory_bytes"] and p["used_memory_bytes"] // MIB
                for p in procs} == shown
        xml_migs = xml_gpu.findall("mig_devices/mig_device")
        devices = (gpu["mig"] or {}).get("devices", [])
        assert [d["gpu_instance_id"] for d in devices] == [
            _number(m.findtext("gpu_instance_id")) for m in xml_migs]
        assert [d["memory_total_bytes"] // MIB for d in devices] == [
            _number(m.findtext("fb_memory_usage/total")) for m in xml_migs]


@needs(XML_CAPTURES)
def test_import_to_stdout_is_a_scenario(tmp_path: Path) -> None:
    out = subprocess.run([*HWINFO, "sim", "import", str(XML_CAPTURES[0])],
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out)["format"] == 1


@needs(XML_CAPTURES)
def test_import_dash_is_standard_output_not_a_file(tmp_path: Path) -> None:
    result = subprocess.run([*HWINFO, "sim", "import", str(XML_CAPTURES[0]), "-o", "-"], cwd=tmp_path,
                            check=True, capture_output=True, text=True)
    assert json.loads(result.stdout)["format"] == 1
    assert result.stderr == ""  # no "wrote -"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "says"), [
    (["run", "", "--", "true"], "SCENARIO needs a value, not an empty string"),
    (["run", " ", "--", "true"], "SCENARIO needs a value, not an empty string"),
    (["run", "cloud-t4", "--", ""], "COMMAND needs a value, not an empty string"),
    (["import", ""], "DUMP needs a value, not an empty string"),
    (["import", "x.xml", "-o", ""], "-o needs a value, not an empty string"),
    (["import", "x.xml", "--section", ""], "--section needs a value, not an empty string"),
    (["record", "--simulate", "cloud-t4", "-o", ""], "-o needs a value, not an empty string"),
])
def test_empty_arguments_are_usage_errors(args: list[str], says: str, tmp_path: Path) -> None:
    result = subprocess.run([*HWINFO, "sim", *args], capture_output=True, text=True, check=False,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"Error: {says}"
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_an_empty_argument_to_the_command_run_is_passed_on() -> None:
    # Only the program must be named: the arguments after it are the command's own.
    result = subprocess.run([*HWINFO, "sim", "run", "cloud-t4", "--", "printf", "[%s]", ""],
                            capture_output=True, text=True, check=False, timeout=60)
    assert (result.returncode, result.stdout) == (0, "[]")


def test_import_garbage_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "log.xml"
    junk.write_text("<nvidia_smi_log><gpu>")
    result = subprocess.run([*HWINFO, "sim", "import", str(junk)], capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "log.xml" in result.stderr


def test_list_names_every_builtin() -> None:
    out = subprocess.run([*HWINFO, "sim", "list"], check=True, capture_output=True, text=True).stdout
    assert [line.split()[0] for line in out.splitlines()] == [name for name, _ in list_scenarios()]
