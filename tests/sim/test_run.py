"""`hwinfo sim run`: a third-party pynvml client (gpustat) runs unchanged on the simulator."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import require

from hwinfo import sim

MIB = 1 << 20
HWINFO = [sys.executable, "-m", "hwinfo"]


def _builtin(name: str) -> dict[str, Any]:
    return json.loads((Path(sim.__file__).parent / "scenarios" / f"{name}.json").read_text())


@pytest.fixture
def live_scenario(tmp_path: Path) -> Iterator[Any]:
    """A built-in scenario whose PIDs are rebound to live processes of ours.

    gpustat (like nvidia-smi users' scripts) drops PIDs that do not exist on the host, so
    to compare process lists the scenario's PIDs must be real ones; everything else is
    the built-in scenario's own data.
    """
    children: list[subprocess.Popen[bytes]] = []

    def make(name: str) -> Path:
        doc = _builtin(name)
        for gpu in doc["gpus"]:
            for proc in gpu.get("processes", []):
                child = subprocess.Popen(["sleep", "120"])
                children.append(child)
                proc["pid"] = child.pid
                proc["visible"] = True
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        return path

    yield make
    for child in children:
        child.kill()
        child.wait()


def _gpustat(scenario: Path) -> dict[str, Any]:
    require(importlib.util.find_spec("gpustat") is not None, "gpustat is not installed (test extra)")
    out = subprocess.run(
        [*HWINFO, "sim", "run", str(scenario), "--", sys.executable, "-m", "gpustat", "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out)


def _hwinfo(scenario: Path) -> dict[str, Any]:
    out = subprocess.run(
        [*HWINFO, "report", "--format", "json", "--simulate", str(scenario)],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out)["gpu"]


def _processes(gpu: dict[str, Any]) -> dict[int, int | None]:
    procs = list(gpu["processes"])
    if gpu["mig"]:
        procs += [p for dev in gpu["mig"]["devices"] for p in dev["processes"]]
    return {p["pid"]: p["used_memory_bytes"] for p in procs}


@pytest.mark.parametrize("name", ["dgx-a100-mig", "workstation-geforce", "cloud-t4"])
def test_gpustat_sees_what_hwinfo_reports(name: str, live_scenario: Any) -> None:
    scenario = live_scenario(name)
    theirs, ours = _gpustat(scenario), _hwinfo(scenario)
    assert theirs["driver_version"] == ours["driver_version"]
    assert len(theirs["gpus"]) == len(ours["gpus"]) > 0
    for their, our in zip(theirs["gpus"], ours["gpus"]):
        assert (their["index"], their["name"], their["uuid"]) == (our["index"], our["name"], our["uuid"])
        assert their["memory.total"] == our["memory_total_bytes"] // MIB
        assert their["memory.used"] == our["memory_used_bytes"] // MIB
        util = our["utilization_gpu_ratio"]
        assert their["utilization.gpu"] == (None if util is None else round(util * 100))
        expected = {pid: None if mem is None else mem // MIB for pid, mem in _processes(our).items()}
        got = {p["pid"]: p["gpu_memory_usage"] for p in their["processes"]}
        assert got == expected


def test_bad_scenario_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 1, "gpus": [{"board": "A100-SXM4-81GB"}]}')
    result = subprocess.run([*HWINFO, "sim", "run", str(broken), "--", "true"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "A100-SXM4-81GB" in result.stderr


def test_missing_command_is_one_line() -> None:
    result = subprocess.run([*HWINFO, "sim", "run", "cloud-t4", "--", "no-such-command-here"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == "Error: command not found: no-such-command-here"


def test_exit_status_is_the_childs() -> None:
    result = subprocess.run(
        [*HWINFO, "sim", "run", "cloud-t4", "--", sys.executable, "-c",
         "import pynvml, sys; pynvml.nvmlInit(); sys.exit(pynvml.nvmlDeviceGetCount() + 40)"],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 41, result.stderr


def test_the_child_keeps_its_own_packages(tmp_path: Path) -> None:
    """Only the bootstrap goes on the child's path: another interpreter with another
    nvidia-ml-py imports its own, and sees none of hwinfo's site-packages."""
    from test_bindings import _installed

    binding = _installed("floor")
    base = sys._base_executable  # the interpreter under this venv, without its site-packages
    code = ("import importlib.util, pynvml; pynvml.nvmlInit(); "
            "print(pynvml.__file__, pynvml.nvmlDeviceGetCount(), "
            "importlib.util.find_spec('psutil') is not None)")
    run = subprocess.run(
        [sys.executable, "-m", "hwinfo", "sim", "run", "cloud-t4", "--", base, "-c", code],
        check=False, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(binding)},
    )
    assert run.returncode == 0, run.stderr
    pynvml_file, count, psutil_seen = run.stdout.split()
    assert pynvml_file.startswith(str(binding)) and count == "1"
    alone = subprocess.run([base, "-c", ("import importlib.util; "
                            "print(importlib.util.find_spec('psutil') is not None)")],
                           check=True, capture_output=True, text=True).stdout.strip()
    assert psutil_seen == alone  # hwinfo's own site-packages (with psutil) stayed out
