"""hwinfo on every binding a lab machine may carry (hwinfo/binding.py): nvidia-ml-py from the
floor pyproject.toml declares to the newest, and the deprecated `pynvml` 11.5.3 package
installed beside it, which shadows nvidia-ml-py's module. Each runs the real commands on the
simulator; what a binding cannot ask for reads as not available, never a crash. A binding
below the floor that cannot give the core facts (strings as bytes, wrappers missing) is one
line naming the package to change."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from conftest import require

REPO = Path(__file__).resolve().parents[1]
FLOOR = re.search(r'"nvidia-ml-py>=([\d.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
NEWEST = metadata.version("nvidia-ml-py")
# name -> the distributions installed together, as pip would put them in one site-packages.
BINDINGS = {
    "floor": [f"nvidia-ml-py=={FLOOR}"],
    "shadowed": [f"nvidia-ml-py=={NEWEST}", "pynvml==11.5.3"],
}
# Bindings too old for hwinfo: name -> (distributions, the package the line names).
TOO_OLD = {
    "nvidia-ml-py-11.450": (["nvidia-ml-py==11.450.51"], "pip install -U nvidia-ml-py"),
    "pynvml-11.4": (["pynvml==11.4.1"], "pip uninstall pynvml"),
}
# Facts a binding may lack the wrapper for (nvidia-ml-py before 12.550 and the 11.5.x
# package have no nvmlDeviceGetNumaNodeId): null there, whatever the newest binding reads.
MAY_LACK = {"numa_node"}


def _installed(name: str) -> Path:
    """The binding's packages in a directory kept between runs (under the ignored .venv),
    named by the exact versions it holds, so a changed floor or newest is installed anew."""
    specs = BINDINGS[name] if name in BINDINGS else TOO_OLD[name][0]
    target = REPO / ".venv" / "bindings" / "+".join(specs).replace("==", "-")
    if not (target / ".complete").exists():
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
             *specs],
            check=False, capture_output=True, text=True, timeout=300,
        )
        require(done.returncode == 0, f"pip could not install {specs}: "
                                      f"{done.stderr.strip()[-300:]}")
        (target / ".complete").touch()
    return target


def _hwinfo(binding: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if binding is not None:
        env["PYTHONPATH"] = str(binding)
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], check=False,
                          capture_output=True, text=True, timeout=120, env=env)


def _gpus(binding: Path | None) -> list[dict[str, Any]]:
    run = _hwinfo(binding, "report", "--simulate", "dgx-a100-mig", "--format", "json")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    gpus = json.loads(run.stdout)["gpu"]["gpus"]
    for gpu in gpus:
        gpu.pop("energy_joules")  # grows between the two runs
    return gpus


@pytest.mark.parametrize("name", sorted(BINDINGS))
def test_report_and_check_run_on_the_binding(name: str) -> None:
    binding = _installed(name)
    which = subprocess.run(
        [sys.executable, "-c", "import pynvml; print(pynvml.__file__)"], check=True,
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(binding)},
    ).stdout.strip()
    assert which.startswith(str(binding)), which  # this binding, not the venv's, is imported
    ours, newest = _gpus(binding), _gpus(None)
    for got, expected in zip(ours, newest, strict=True):
        for key in MAY_LACK:
            assert got[key] in (None, expected[key]), key
            got[key] = expected[key]
        assert got == expected
    # check's verdict on a faulty machine is the same, and nothing is printed to stderr.
    check = _hwinfo(binding, "check", "--simulate", "faults-demo")
    assert (check.returncode, check.stderr) == (2, ""), check.stderr


def test_the_simulator_installs_under_the_shadowing_package() -> None:
    binding = _installed("shadowed")
    code = ("import pynvml, hwinfo.sim; hwinfo.sim.install('cloud-t4'); pynvml.nvmlInit(); "
            "print(pynvml.__name__, pynvml.nvmlDeviceGetCount())")
    run = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(binding)}, timeout=60)
    assert run.stdout.split() == ["pynvml", "1"], run.stderr


@pytest.mark.parametrize("name", sorted(TOO_OLD))
def test_a_binding_too_old_is_one_line_naming_the_package(name: str) -> None:
    binding = _installed(name)
    specs, fix = TOO_OLD[name]
    version = specs[0].split("==")[1]
    line = f"pynvml binding {version} ("
    report = _hwinfo(binding, "report", "--simulate", "dgx-h100", "--format", "json")
    assert (report.returncode, report.stderr) == (0, "")
    gpu = json.loads(report.stdout)["gpu"]
    assert gpu["status"] == "error" and gpu["gpus"] == []
    assert gpu["message"].startswith(line) and fix in gpu["message"], gpu["message"]
    assert "\n" not in gpu["message"]
    check = _hwinfo(binding, "check", "--simulate", "faults-demo")
    assert (check.returncode, check.stderr) == (3, "") and line in check.stdout
    record = _hwinfo(binding, "sim", "record", "--simulate", "cloud-t4")
    assert record.returncode == 1 and record.stdout == ""
    assert record.stderr.startswith(f"Error: {line}") and len(record.stderr.splitlines()) == 1
