"""nvitop, a third-party pynvml client, runs unchanged through `hwinfo sim run` on every built-in
scenario, prints no error, and reads the device-level values `hwinfo report` reports.

Scenario PIDs do not exist on this host, so processes are not compared here.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CAPTURE_FILES, each_capture, imported_capture, require

from hwinfo import sim

HWINFO = [sys.executable, "-m", "hwinfo"]
SCENARIOS = [name for name, _ in sim.list_scenarios() if name != "no-driver"]
# nvitop's API, inside the simulated machine: what its screen shows, per device, as JSON.
PEEK = """
import json
from nvitop import NA, Device

def v(x):
    return None if x is NA else x

gpus = []
for d in Device.all():
    gpus.append({
        "index": d.index, "name": d.name(), "uuid": d.uuid(), "bus_id": v(d.bus_id()),
        "memory_total": v(d.memory_total()), "memory_used": v(d.memory_used()),
        "memory_free": v(d.memory_free()), "gpu_util": v(d.gpu_utilization()),
        "memory_util": v(d.memory_utilization()), "temperature": v(d.temperature()),
        "power_usage": v(d.power_usage()), "power_limit": v(d.power_limit()),
        "fan": v(d.fan_speed()), "persistence": v(d.persistence_mode()),
        "nvlinks": d.nvlink_link_count(), "mig_mode": v(d.mig_mode()),
        "mig": [{"uuid": m.uuid(), "name": m.name(), "memory_total": v(m.memory_total()),
                 "memory_used": v(m.memory_used())} for m in d.mig_devices()],
    })
print(json.dumps({"driver_version": Device.driver_version(),
                  "cuda_driver_version": Device.cuda_driver_version(), "gpus": gpus}))
"""


def nvitop_installed() -> None:
    require(importlib.util.find_spec("nvitop") is not None, "nvitop is not installed (test extra)")


def sim_run(scenario: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HWINFO, "sim", "run", scenario, "--", sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def report(scenario: str) -> dict[str, Any]:
    out = subprocess.run(
        [*HWINFO, "report", "--format", "json", "--simulate", scenario],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return json.loads(out)["gpu"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_nvitop_once_prints_no_error(name: str) -> None:
    nvitop_installed()
    result = sim_run(name, "-m", "nvitop", "--once")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    # How nvitop shows a lost GPU (faults-demo loses one 3 s in) is a value, not an error.
    screen = result.stdout.replace("ERROR: GPU is Lost", "")
    for word in ("Traceback", "ERROR", "FunctionNotFound", "Error"):
        assert word not in screen, result.stdout
    assert f"Driver Version: {report(name)['driver_version']}" in result.stdout


def test_nvitop_starting_late_sees_the_gpu_faults_demo_loses() -> None:
    nvitop_installed()
    late = (
        "import runpy, sys, time; time.sleep(3.5); sys.argv = ['nvitop', '--once']; "
        "runpy.run_module('nvitop', run_name='__main__')"
    )
    result = sim_run("faults-demo", "-c", late)  # it never enumerated before the loss
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = [line for line in result.stdout.splitlines() if "GPU is Lost" in line]
    assert len(lines) == 1 and lines[0].split()[1] == "2", result.stdout


def test_nvitop_on_a_machine_without_driver_says_so() -> None:
    nvitop_installed()
    result = sim_run("no-driver", "-m", "nvitop", "--once")
    assert result.returncode == 1
    assert "NVIDIA Management Library (NVML) not found" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def percent(ratio: float | None) -> int | None:
    return None if ratio is None else round(ratio * 100)


def milliwatts(watts: float | None) -> int | None:
    return None if watts is None else round(watts * 1000)


@pytest.mark.parametrize("name", SCENARIOS)
def test_nvitop_reads_what_hwinfo_reports(name: str) -> None:
    nvitop_installed()
    result = sim_run(name, "-c", PEEK)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    theirs, ours = json.loads(result.stdout), report(name)
    spec = sim.load_scenario(name).gpus
    assert theirs["driver_version"] == ours["driver_version"]
    assert theirs["cuda_driver_version"] == ours["cuda_driver_version"]
    assert [g["uuid"] for g in theirs["gpus"]] == [g["uuid"] for g in ours["gpus"]]
    for their, our in zip(theirs["gpus"], ours["gpus"]):
        if our["lost"]:
            continue  # faults-demo loses a GPU 3 s after the driver loads: timing decides
        assert (their["index"], their["name"], their["bus_id"]) == (
            our["index"],
            our["name"],
            our["pci_bus_id"],
        )
        memory = (their["memory_total"], their["memory_used"], their["memory_free"])
        if our["addressing_mode"] == "ats":
            # No framebuffer figure: nvitop shows the host's memory instead, hwinfo says so.
            assert our["memory_total_bytes"] is None and None not in memory
        else:
            assert memory == (
                our["memory_total_bytes"],
                our["memory_used_bytes"],
                our["memory_free_bytes"],
            )
        assert their["gpu_util"] == percent(our["utilization_gpu_ratio"])
        assert their["memory_util"] == percent(our["utilization_memory_ratio"])
        assert their["temperature"] == our["temperature_celsius"]
        assert their["power_limit"] == milliwatts(our["power_limit_watts"])
        if "power_draw_watts" not in our["unavailable"]:  # faults-demo fails it for a while
            assert their["power_usage"] == milliwatts(our["power_draw_watts"])
        assert their["fan"] == percent(our["fan_speed_ratio"])
        persistence = our["persistence_mode"]
        assert their["persistence"] == (
            None if persistence is None else ("Enabled" if persistence else "Disabled")
        )
        # nvitop counts the links the GPU has (NVML_FI_DEV_NVLINK_LINK_COUNT), hwinfo the active
        # ones: equal on NVLink servers; an RTX 3090 has 4 links, none bridged.
        board_links = spec[their["index"]].nvlink_max_links
        assert their["nvlinks"] == board_links >= (our["nvlink_links_active"] or 0)
        assert our["nvlink_links_active"] in (None, 0, board_links)
        mig = our["mig"]
        assert their["mig_mode"] == (
            None if mig is None else ("Enabled" if mig["enabled"] else "Disabled")
        )
        ours_mig = mig["devices"] if mig else []
        assert [m["uuid"] for m in their["mig"]] == [d["uuid"] for d in ours_mig]
        for their_dev, our_dev in zip(their["mig"], ours_mig):
            assert their_dev["name"].endswith(f" MIG {our_dev['profile']}")
            assert (their_dev["memory_total"], their_dev["memory_used"]) == (
                our_dev["memory_total_bytes"],
                our_dev["memory_used_bytes"],
            )


@pytest.mark.parametrize("capture", each_capture(CAPTURE_FILES))
def test_nvitop_on_every_imported_capture(capture: Path, tmp_path: Path) -> None:
    """Real machines as their dumps show them: nvitop's screen, with their processes backed
    by placeholders, and no error output."""
    nvitop_installed()
    result = subprocess.run(
        [*HWINFO, "sim", "run", "--live-processes", str(imported_capture(capture, tmp_path)),
         "--", sys.executable, "-m", "nvitop", "--once"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stdout[-2000:]
    assert "Traceback" not in result.stdout and "ERROR" not in result.stdout
