"""`hwinfo sim record`: a machine's NVML state as a scenario that replays to the same report."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
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


def _nvml(call: Callable[..., Any], *args: Any) -> Any:
    """What a pynvml call answers, or the name of the error it raises."""
    try:
        return call(*args)
    except pynvml.NVMLError as exc:
        return type(exc).__name__


def _fields(value: Any, *names: str) -> Any:
    """The named fields of a pynvml struct (or its error's name)."""
    return value if isinstance(value, str) else tuple(getattr(value, n) for n in names)


def _processes(handle: Any) -> Any:
    found = _nvml(pynvml.nvmlDeviceGetComputeRunningProcesses, handle)
    return found if isinstance(found, str) else sorted(
        (p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in found)


def _device(handle: Any) -> dict[str, Any]:
    """What raw pynvml reads of one GPU or MIG device, as a client such as gpustat reads it."""
    n = pynvml
    return {
        "name": _nvml(n.nvmlDeviceGetName, handle),
        "uuid": _nvml(n.nvmlDeviceGetUUID, handle),
        "memory": _fields(_nvml(n.nvmlDeviceGetMemoryInfo, handle), "total", "used", "free"),
        "bar1": _fields(_nvml(n.nvmlDeviceGetBAR1MemoryInfo, handle), "bar1Total"),
        "utilization": _fields(_nvml(n.nvmlDeviceGetUtilizationRates, handle), "gpu", "memory"),
        "temperature": _nvml(n.nvmlDeviceGetTemperature, handle, n.NVML_TEMPERATURE_GPU),
        "power": _nvml(n.nvmlDeviceGetPowerUsage, handle),
        "power_limit": _nvml(n.nvmlDeviceGetEnforcedPowerLimit, handle),
        "clocks": [_nvml(n.nvmlDeviceGetClockInfo, handle, c) for c in (0, 1, 2)],
        "max_clocks": [_nvml(n.nvmlDeviceGetMaxClockInfo, handle, c) for c in (0, 1, 2)],
        "pstate": _nvml(n.nvmlDeviceGetPerformanceState, handle),
        "fan": _nvml(n.nvmlDeviceGetFanSpeed, handle),
        "pcie": [_nvml(read, handle) for read in (
            n.nvmlDeviceGetCurrPcieLinkGeneration, n.nvmlDeviceGetCurrPcieLinkWidth,
            n.nvmlDeviceGetMaxPcieLinkGeneration, n.nvmlDeviceGetMaxPcieLinkWidth)],
        "ecc": [_nvml(n.nvmlDeviceGetTotalEccErrors, handle, kind, n.NVML_VOLATILE_ECC)
                for kind in (n.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                             n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)],
        "clock_reasons": _nvml(n.nvmlDeviceGetCurrentClocksEventReasons, handle),
        "persistence": _nvml(n.nvmlDeviceGetPersistenceMode, handle),
        "processes": _processes(handle),
        "mig_mode": _nvml(n.nvmlDeviceGetMigMode, handle),
    }


def _what_pynvml_reads(scenario: str) -> Any:
    """Every GPU and MIG device as raw pynvml reads them on the simulated scenario: a reader
    that shares nothing with hwinfo's collector, which `sim record` itself reads through."""
    hwinfo.sim.install(scenario)
    try:
        if isinstance(started := _nvml(pynvml.nvmlInit), str):
            return started
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gpu = _device(handle)
            if isinstance(gpu["mig_mode"], list) and gpu["mig_mode"][0]:
                handles = [_nvml(pynvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, i)
                           for i in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle))]
                gpu["mig_devices"] = [
                    {**_device(mig), "ids": (pynvml.nvmlDeviceGetGpuInstanceId(mig),
                                             pynvml.nvmlDeviceGetComputeInstanceId(mig))}
                    for mig in handles if not isinstance(mig, str)]
            gpus.append(gpu)
        system = (_nvml(pynvml.nvmlSystemGetDriverVersion),
                  _nvml(pynvml.nvmlSystemGetCudaDriverVersion))
        pynvml.nvmlShutdown()
        return system, gpus
    finally:
        hwinfo.sim.uninstall()


SCENARIOS = ["dgx-a100-mig", "h200-mig", "workstation-geforce", "vgpu-guest", "blackwell-mig",
             "no-driver", "dgx-spark"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_recording_replays_to_the_same_report(tmp_path: Path, scenario: str) -> None:
    recording = tmp_path / "recorded.json"
    run = _run("sim", "record", "--simulate", scenario, "-o", str(recording))
    assert run.returncode == 0, run.stderr
    assert run.stderr == f"wrote {recording}\n"
    assert _gpus(str(recording)) == _gpus(scenario)
    # The recording is written from what hwinfo's collector read, and the report above reads
    # through that collector again, so a fact the collector misreads would pass both ways.
    # Raw pynvml, reading the machine and its replay alike, shares nothing with it.
    assert _what_pynvml_reads(str(recording)) == _what_pynvml_reads(scenario)


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
