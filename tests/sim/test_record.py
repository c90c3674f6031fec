"""`hwinfo sim record`: a machine's NVML state as a scenario that replays to the same report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pynvml
import pytest

import hwinfo.sim
from hwinfo.sim.nvml_symbols import exported

HWINFO = [sys.executable, "-m", "hwinfo"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWINFO, *args], check=False, capture_output=True, text=True,
                          timeout=120)


def _gpus(simulate: str) -> dict[str, Any]:
    """The report's GPU section, less what moves on by itself between two reads."""
    run = _run("report", "--simulate", simulate, "--format", "json")
    assert run.returncode == 0, run.stderr
    system = json.loads(run.stdout)["gpu"]
    for gpu in system["gpus"]:
        gpu.pop("energy_joules", None)  # grows with time
        activities = [gpu.get("activity")] + [
            d.get("activity") for d in (gpu.get("mig") or {}).get("devices", [])]
        for activity in filter(None, activities):
            activity.pop("window_seconds")  # how long the report waited for GPM
    return system


@pytest.mark.parametrize("scenario", [
    "dgx-a100-mig", "h200-mig", "workstation-geforce", "vgpu-guest", "blackwell-mig", "no-driver",
    "dgx-spark",
])
def test_a_recording_replays_to_the_same_report(tmp_path: Path, scenario: str) -> None:
    recording = tmp_path / "recorded.json"
    run = _run("sim", "record", "--simulate", scenario, "-o", str(recording))
    assert run.returncode == 0, run.stderr
    assert run.stderr == f"wrote {recording}\n"
    assert _gpus(str(recording)) == _gpus(scenario)


def test_the_replay_exports_what_the_recorded_library_exported(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": 1, "driver": {"version": "470.57.02"},
                               "gpus": [{"board": "A100-SXM4-40GB"}]}))
    recording = tmp_path / "recorded.json"
    assert _run("sim", "record", "--simulate", str(old), "-o", str(recording)).returncode == 0
    symbols = json.loads(recording.read_text())["driver"]["symbols"]
    assert set(symbols) == exported((470, 57, 2))
    hwinfo.sim.install(str(recording))
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_FunctionNotFound):  # the V call came with R510
            pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, 0)
        pynvml.nvmlShutdown()
    finally:
        hwinfo.sim.uninstall()


def test_command_lines_only_when_asked() -> None:
    def commands(*extra: str) -> set[str | None]:
        run = _run("sim", "record", "--simulate", "workstation-geforce", *extra)
        procs = [p for gpu in json.loads(run.stdout)["gpus"] for p in gpu["processes"]]
        return {p.get("command") for p in procs}

    assert commands() == {None}
    assert any(c and " " in c for c in commands("--full-command"))


def test_dash_is_standard_output_not_a_file(tmp_path: Path) -> None:
    result = subprocess.run([*HWINFO, "sim", "record", "--simulate", "cloud-t4", "-o", "-"],
                            cwd=tmp_path, check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["format"] == 1
    assert result.stderr == "" and list(tmp_path.iterdir()) == []


def test_bad_inputs_are_one_line(tmp_path: Path) -> None:
    hang = tmp_path / "hang.json"
    hang.write_text(json.dumps({"format": 1, "gpus": [{"board": "T4"}], "faults": [
        {"call": "nvmlDeviceGetTemperature", "delay_seconds": 30}]}))
    cases = [
        (["-o", "/nonexistent/dir/x.json", "--simulate", "cloud-t4"], 1, "/nonexistent/dir"),
        (["--simulate", ""], 2, "--simulate"),
        (["--simulate", "cloud-t4", "--nvml-timeout", "nan"], 2, "--nvml-timeout"),
        (["--simulate", str(hang), "--nvml-timeout", "1"], 1, "nothing recorded"),
    ]
    for args, code, message in cases:
        run = _run("sim", "record", *args)
        assert run.returncode == code, (args, run.stderr)
        # One error line (click puts its usage lines before a usage error's), no traceback.
        error = run.stderr.strip().splitlines()[-1]
        assert error.startswith("Error: ") and message in error, run.stderr
        assert "Traceback" not in run.stderr and run.stdout == ""
