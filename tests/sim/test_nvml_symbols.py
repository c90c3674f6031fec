"""The simulated library exports, per driver branch, exactly the functions the real one does.

The real symbol tables are the `nvml-symbols` sections of the text captures (readelf of
libnvidia-ml.so.1 on real machines, from
https://github.com/utkuozdemir/nvidia_gpu_exporter/tree/e656cd8/internal/captures); older
branches follow nvml.h's history (hwinfo/sim/nvml_symbols.py).
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterator
from typing import Any

import pynvml as N
import pytest
from conftest import CAPTURES, TEXT_CAPTURES, each_capture, require, require_captures

import hwinfo.sim
from hwinfo.sim import Machine
from hwinfo.sim.nvml_lib import IMPLEMENTED, FakeLib
from hwinfo.sim.nvml_symbols import SINCE, exported
from hwinfo.sim.scenario import parse_scenario

SECTION = "# capabilities :: nvml-symbols"
DRIVER_IN_NAME = re.compile(r"__(\d+(?:\.\d+)+)\.txt$")


def capture_symbol_tables() -> dict[str, frozenset[str]]:
    """Driver version -> the nvml* functions its real library exports, from every capture."""
    tables: dict[str, frozenset[str]] = {}
    for path in TEXT_CAPTURES:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if SECTION not in lines:
            continue
        names: set[str] = set()
        for line in lines[lines.index(SECTION) + 1 :]:
            if line.startswith("#") and not names:
                continue  # the section's header lines
            if not line.startswith("nvml"):
                break
            names.add(line.strip())
        match = DRIVER_IN_NAME.search(path.name)
        assert match and names, f"{path.name}: no driver version or empty symbol list"
        tables[match.group(1)] = frozenset(names)
    return tables


TABLES = capture_symbol_tables()


def machine(driver: str, **top: Any) -> Machine:
    gpus = top.pop("gpus", [{"board": "H100-SXM5-80GB"}])
    doc = {"format": 1, "driver": {"version": driver}, "gpus": gpus, **top}
    return Machine(parse_scenario(doc, "t.json", "t"))


def exports(driver: str) -> set[str]:
    return {name for name in vars(FakeLib(machine(driver))) if name.startswith("nvml")}


def test_captures_hold_symbol_tables_of_two_branches_at_least() -> None:
    require_captures()
    require(bool(TABLES), f"no captures with NVML symbol tables under {CAPTURES / 'text'}")
    assert len({v.split(".")[0] for v in TABLES}) >= 2, sorted(TABLES)


@pytest.mark.parametrize("driver", each_capture(sorted(TABLES)))
def test_exports_exactly_what_the_real_library_exports(driver: str) -> None:
    real = TABLES[driver]
    simulated = exports(driver)
    assert not simulated - real, f"{driver}: exported, the real library lacks them"
    assert not real - simulated, f"{driver}: the real library exports them, the simulator not"


def test_every_implemented_function_is_a_real_nvml_function() -> None:
    assert set(IMPLEMENTED) <= set(SINCE), sorted(set(IMPLEMENTED) - set(SINCE))


@pytest.mark.parametrize(
    ("name", "absent_in", "present_in"),
    [
        # nvitop asks for _v2 first, then the unversioned one that every branch has.
        ("nvmlDeviceGetDriverModel_v2", "550.54.15", "555.42.02"),
        # CUDA 12.2 (R535) brought confidential computing.
        ("nvmlDeviceGetConfComputeMemSizeInfo", "530.30.02", "535.161.07"),
        ("nvmlSystemGetConfComputeState", "530.30.02", "560.35.03"),
        ("nvmlDeviceGetTemperatureV", "560.35.03", "570.124.06"),
        ("nvmlDeviceGetCurrentClocksEventReasons", "530.30.02", "535.43.02"),
        ("nvmlDeviceGetMemoryInfo_v2", "470.223.02", "510.39.01"),
        ("nvmlDeviceGetComputeRunningProcesses_v2", "450.51.06", "450.66"),
        ("nvmlDeviceGetMigMode", "440.64", "450.51.06"),
        ("nvmlDeviceGetGpuInstanceProfileInfoByIdV", "575.51.03", "580.65.06"),
        # Declared by CUDA 11.8's nvml.h only; gone from 590 and 610.
        ("nvmlDeviceGetPowerMode", "515.105.01", "520.61.05"),
    ],
)
def test_first_branch_of_a_function(name: str, absent_in: str, present_in: str) -> None:
    assert name not in exports(absent_in)
    assert name in exports(present_in)


def test_a_removed_function_is_gone_from_later_branches() -> None:
    assert "nvmlDeviceGetPowerMode" not in exported((525, 60, 13))
    assert "nvmlDeviceCcuGetStreamState" in exported((530, 30, 2))
    assert "nvmlDeviceCcuGetStreamState" not in exported((535, 43, 2))


# --- how exported but unimplemented functions answer ------------------------------------------


@pytest.fixture
def installed() -> Iterator[Machine]:
    machine = hwinfo.sim.install(
        parse_scenario(
            {
                "format": 1,
                "driver": {"version": "590.48.01"},
                "gpus": [{"board": "H100-SXM5-80GB"}, {"board": "H100-SXM5-80GB", "lost": True}],
            },
            "t.json",
            "t",
        )
    )
    N.nvmlInit()
    yield machine
    hwinfo.sim.uninstall()


def test_driver_model_is_not_supported_on_linux(installed: Machine) -> None:
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetDriverModel(gpu)  # pynvml 13.595 and later call _v2
    current, pending = ctypes.c_uint(), ctypes.c_uint()
    rc = N.nvmlLib.nvmlDeviceGetDriverModel(gpu, ctypes.byref(current), ctypes.byref(pending))
    assert rc == N.NVML_ERROR_NOT_SUPPORTED


def test_unimplemented_functions_pass_the_common_gate(installed: Machine) -> None:
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetBrand(gpu)
    lost = ctypes.cast(ctypes.c_void_p(installed.gpus[1].handle), type(gpu))
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetBrand(lost)
    stale = ctypes.cast(ctypes.c_void_p(0xDEAD0), type(gpu))
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetBrand(stale)
    N.nvmlShutdown()
    with pytest.raises(N.NVMLError_Uninitialized):
        N.nvmlDeviceGetBrand(gpu)
    N.nvmlInit()


def test_system_answers_of_a_machine_without_extras(installed: Machine) -> None:
    state = N.nvmlSystemGetConfComputeState()
    assert (state.environment, state.ccFeature, state.devToolsMode) == (0, 0, 0)
    assert N.nvmlGetExcludedDeviceCount() == 0
    assert N.nvmlUnitGetCount() == 0
    # The unversioned C functions of old callers find the same GPUs.
    count, handle = ctypes.c_uint(), N.c_nvmlDevice_t()
    assert N.nvmlLib.nvmlDeviceGetCount(ctypes.byref(count)) == N.NVML_SUCCESS
    assert count.value == 2
    assert N.nvmlLib.nvmlDeviceGetHandleByIndex(0, ctypes.byref(handle)) == N.NVML_SUCCESS
    assert N.nvmlDeviceGetIndex(handle) == 0


def test_every_unimplemented_function_answers_without_crashing(installed: Machine) -> None:
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    lib = N.nvmlLib
    for name in sorted(exported((590, 48, 1)) - set(IMPLEMENTED)):
        fn = getattr(lib, name)
        # Handle-less calls get a NULL pointer; a device handle where the first argument is one.
        first = gpu if name.startswith("nvmlDevice") else None
        rc = fn(first, None, None)
        assert rc in (N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_INVALID_ARGUMENT), (name, rc)
