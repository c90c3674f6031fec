"""The fake libnvidia-ml under the real pynvml module: every call goes through pynvml.

The fixture machine (fixtures/mig-a100-40gb.json):
  GPU 0, A100-SXM4-40GB, MIG on: GI 1 = 3g.20gb at slot 0 split into CI 0 (2 slices) and CI 1
  (1 slice); GI 5 = 2g.10gb at slot 4; GI 13 = 1g.5gb at slot 6; pids 100/101 in GI 1,
  102 (memory unknown, not visible) in GI 5, 103 in GI 13; an XID 31 in GI 5 after 3 samples.
  GPU 1, A100-SXM4-40GB, MIG off (pending on): pids 200 (compute), 201 (compute+graphics),
  202 (graphics, memory unknown); an XID 13 after 2 samples.
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvml as N
import pytest

import hwinfo.sim
from hwinfo.sim import Machine, load_scenario
from hwinfo.sim.machine import SAMPLE_SECONDS
from hwinfo.sim.nvml_lib_processes import ProcessInfoV1
from hwinfo.sim.scenario import parse_scenario

FIXTURE = Path(__file__).parent / "fixtures" / "mig-a100-40gb.json"
MIB = 1 << 20
NO_INSTANCE = 0xFFFFFFFF
A100_40 = {"board": "A100-SXM4-40GB"}

Simulate = Callable[..., Machine]


@pytest.fixture
def simulate() -> Iterator[Simulate]:
    """install() a scenario (dict of top-level keys, or a path) and nvmlInit() unless told not to."""
    installed = 0

    def make(data: dict[str, Any] | Path = FIXTURE, init: bool = True) -> Machine:
        nonlocal installed
        scenario = (
            load_scenario(data)
            if isinstance(data, Path)
            else parse_scenario({"format": 1, **data}, "t.json", "t")
        )
        machine = hwinfo.sim.install(scenario)
        installed += 1
        if init:
            N.nvmlInit()
        return machine

    yield make
    for _ in range(installed):
        hwinfo.sim.uninstall()


def handles() -> list[Any]:
    return [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]


def mig_handles(gpu: Any) -> list[Any]:
    out = []
    for i in range(N.nvmlDeviceGetMaxMigDeviceCount(gpu)):
        try:
            out.append(N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i))
        except N.NVMLError_NotFound:
            break
    return out


# --- library, init, system ---------------------------------------------------------------------


def test_system_calls_and_count(simulate: Simulate) -> None:
    simulate({"driver": {"version": "535.161.08"}, "gpus": [A100_40, A100_40]})
    assert N.nvmlSystemGetDriverVersion() == "535.161.08"
    assert N.nvmlSystemGetNVMLVersion() == "12.535.161.08"
    assert N.nvmlSystemGetCudaDriverVersion() == N.nvmlSystemGetCudaDriverVersion_v2() == 12020
    assert N.nvmlDeviceGetCount() == 2
    N.nvmlShutdown()
    with pytest.raises(N.NVMLError_Uninitialized):
        N.nvmlDeviceGetCount()


def test_calls_before_init_are_uninitialized(simulate: Simulate) -> None:
    simulate(init=False)
    with pytest.raises(N.NVMLError_Uninitialized):
        N.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(N.NVMLError_Uninitialized):
        N.nvmlSystemGetDriverVersion()
    N.nvmlInit()
    N.nvmlInit()  # reference counted, as in NVML
    N.nvmlShutdown()
    assert N.nvmlDeviceGetCount() == 2
    N.nvmlShutdown()
    with pytest.raises(N.NVMLError_Uninitialized):
        N.nvmlShutdown()


def test_error_strings_and_missing_symbols(simulate: Simulate) -> None:
    simulate()
    # pynvml sets nvmlErrorString's restype; the plain function must take that and still work.
    assert N.nvmlErrorString(N.NVML_ERROR_NOT_SUPPORTED) == "Not Supported"
    assert N.nvmlErrorString(N.NVML_ERROR_GPU_IS_LOST) == "GPU is lost"
    assert str(N.NVMLError(N.NVML_ERROR_NO_DATA)) == "No data"  # pynvml asks the library
    assert N.nvmlErrorString(12345) == "Unknown Error"
    (gpu, _) = handles()
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetBrand(gpu)  # exported by every driver but not simulated
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetTemperatureV(gpu, N.NVML_TEMPERATURE_GPU)  # R570 on: not this driver's
    assert not hasattr(N.nvmlLib, "nvmlDeviceGetTemperatureV")


def test_init_error_then_recovery(simulate: Simulate) -> None:
    simulate(
        {"init_error": "DriverNotLoaded", "init_error_attempts": 2, "gpus": [A100_40]}, init=False
    )
    for _ in range(2):
        with pytest.raises(N.NVMLError_DriverNotLoaded):
            N.nvmlInit()
    N.nvmlInit()
    assert N.nvmlDeviceGetCount() == 1


@pytest.mark.parametrize(
    ("error", "cls"),
    [("LibRmVersionMismatch", "NVMLError_LibRmVersionMismatch"), ("Unknown", "NVMLError_Unknown"),
     ("NoPermission", "NVMLError_NoPermission")],
)  # fmt: skip
def test_init_error_for_good(simulate: Simulate, error: str, cls: str) -> None:
    simulate({"init_error": error, "gpus": [A100_40]}, init=False)
    for _ in range(3):
        with pytest.raises(getattr(N, cls)):
            N.nvmlInit()


def test_library_missing(simulate: Simulate) -> None:
    simulate({"library": "missing"}, init=False)
    with pytest.raises(N.NVMLError_LibraryNotFound):
        N.nvmlInit()
    with pytest.raises(N.NVMLError_Uninitialized):
        N.nvmlDeviceGetCount()


def test_install_over_an_initialised_library_and_uninstall() -> None:
    before = N.nvmlLib
    one, two = ({"format": 1, "gpus": [A100_40] * n} for n in (1, 2))
    first = hwinfo.sim.install(parse_scenario(one, "one.json", "one"))
    try:
        N.nvmlInit()
        first_lib = N.nvmlLib
        assert first.initialized == 1 and N._nvmlLib_refcount == 1
        second = hwinfo.sim.install(parse_scenario(two, "two.json", "two"))
        try:
            assert first.initialized == 0 and N._nvmlLib_refcount == 0  # the old one shut down
            with pytest.raises(N.NVMLError_Uninitialized):
                N.nvmlDeviceGetCount()
            N.nvmlInit()
            assert N.nvmlDeviceGetCount() == 2 and second.initialized == 1
        finally:
            hwinfo.sim.uninstall()
        assert N.nvmlLib is first_lib and second.initialized == 0
    finally:
        hwinfo.sim.uninstall()
    assert N.nvmlLib is before


def test_install_from_env(simulate: Simulate, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hwinfo.sim.ENV_VAR, raising=False)
    assert hwinfo.sim.install_from_env() is None
    monkeypatch.setenv(hwinfo.sim.ENV_VAR, str(FIXTURE))
    machine = hwinfo.sim.install_from_env()
    try:
        assert machine is not None and machine.scenario.name == "mig-a100-40gb"
        N.nvmlInit()
        assert N.nvmlDeviceGetCount() == 2
    finally:
        hwinfo.sim.uninstall()


# --- handles ---------------------------------------------------------------------------------


def test_handles_by_index_uuid_and_pci_bus_id(simulate: Simulate) -> None:
    simulate()
    _gpu0, gpu1 = handles()
    assert N.nvmlDeviceGetIndex(gpu1) == 1
    assert N.nvmlDeviceGetIndex(N.nvmlDeviceGetHandleByUUID(N.nvmlDeviceGetUUID(gpu1))) == 1
    for bus_id in ("00000000:0F:00.0", "0000:0f:00.0", "0F:00.0"):
        assert N.nvmlDeviceGetIndex(N.nvmlDeviceGetHandleByPciBusId(bus_id)) == 1
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetHandleByIndex(2)
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetHandleByPciBusId("00000000:99:00.0")
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetName(N.c_nvmlDevice_t())  # NULL handle


def test_string_buffer_too_small(simulate: Simulate) -> None:
    simulate()
    gpu = handles()[0]
    buf = ctypes.create_string_buffer(8)
    assert N.nvmlLib.nvmlDeviceGetName(gpu, buf, ctypes.c_uint(8)) == N.NVML_ERROR_INSUFFICIENT_SIZE


# --- device telemetry -------------------------------------------------------------------------


def test_a100_board_defaults_through_pynvml(simulate: Simulate) -> None:
    simulate(
        {
            "gpus": [
                {
                    **A100_40,
                    "serial": "1324321002473",
                    "clock_event_reasons": ["gpu_idle", "sw_power_cap"],
                }
            ]
        }
    )
    (gpu,) = handles()
    assert N.nvmlDeviceGetName(gpu) == "NVIDIA A100-SXM4-40GB"
    assert N.nvmlDeviceGetSerial(gpu) == "1324321002473"
    assert N.nvmlDeviceGetVbiosVersion(gpu) == "92.00.45.00.03"
    pci = N.nvmlDeviceGetPciInfo(gpu)
    assert (pci.busId, pci.busIdLegacy, pci.bus, pci.pciDeviceId) == (
        "00000000:01:00.0",
        "0000:01:00.0",
        1,
        0x20B010DE,
    )
    assert N.nvmlDeviceGetArchitecture(gpu) == N.NVML_DEVICE_ARCH_AMPERE
    assert N.nvmlDeviceGetCudaComputeCapability(gpu) == (8, 0)
    assert (N.nvmlDeviceGetNumGpuCores(gpu), N.nvmlDeviceGetMemoryBusWidth(gpu)) == (6912, 5120)
    v1 = N.nvmlDeviceGetMemoryInfo(gpu)
    v2 = N.nvmlDeviceGetMemoryInfo(gpu, version=N.nvmlMemory_v2)
    assert v1.total == v2.total == 40960 * MIB
    assert (v2.reserved, v2.used) == (
        605 * MIB,
        0,
    ) and v1.used == v2.reserved + v2.used  # v1 used includes reserved
    assert v1.free == v2.free == v1.total - v1.used
    assert N.nvmlDeviceGetBAR1MemoryInfo(gpu).bar1Total == 65536 * MIB
    util = N.nvmlDeviceGetUtilizationRates(gpu)
    assert (util.gpu, util.memory) == (0, 0)
    assert N.nvmlDeviceGetEncoderUtilization(gpu) == [0, 167000]
    assert N.nvmlDeviceGetTemperature(gpu, N.NVML_TEMPERATURE_GPU) == 36
    thresholds = [N.nvmlDeviceGetTemperatureThreshold(gpu, t) for t in range(4)]
    assert thresholds == [92, 89, 95, 85]  # shutdown, slowdown, memory max, GPU max
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetTemperatureThreshold(gpu, N.NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN)
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetTemperatureThreshold(gpu, N.NVML_TEMPERATURE_THRESHOLD_COUNT)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetFanSpeed(gpu)  # SXM: no fan
    assert N.nvmlDeviceGetNumFans(gpu) == 0
    assert N.nvmlDeviceGetPowerUsage(gpu) == 66920
    assert (
        N.nvmlDeviceGetEnforcedPowerLimit(gpu) == N.nvmlDeviceGetPowerManagementLimit(gpu) == 400000
    )
    assert N.nvmlDeviceGetPowerManagementLimitConstraints(gpu) == [100000, 400000]
    assert [N.nvmlDeviceGetClockInfo(gpu, t) for t in range(4)] == [1410, 1410, 1215, 1275]
    assert [N.nvmlDeviceGetMaxClockInfo(gpu, t) for t in range(4)] == [1410, 1410, 1215, 1290]
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetClockInfo(gpu, N.NVML_CLOCK_COUNT)
    assert N.nvmlDeviceGetPerformanceState(gpu) == 0
    link = [N.nvmlDeviceGetCurrPcieLinkGeneration(gpu), N.nvmlDeviceGetMaxPcieLinkGeneration(gpu),
            N.nvmlDeviceGetGpuMaxPcieLinkGeneration(gpu), N.nvmlDeviceGetCurrPcieLinkWidth(gpu),
            N.nvmlDeviceGetMaxPcieLinkWidth(gpu), N.nvmlDeviceGetPcieReplayCounter(gpu)]  # fmt: skip
    assert link == [4, 4, 4, 16, 16, 0]
    assert N.nvmlDeviceGetPcieThroughput(gpu, N.NVML_PCIE_UTIL_TX_BYTES) == 0
    reasons = N.nvmlClocksEventReasonGpuIdle | N.nvmlClocksEventReasonSwPowerCap
    assert (
        N.nvmlDeviceGetCurrentClocksEventReasons(gpu)
        == N.nvmlDeviceGetCurrentClocksThrottleReasons(gpu)
        == reasons
    )
    assert N.nvmlDeviceGetEccMode(gpu) == [1, 1]
    assert (
        N.nvmlDeviceGetTotalEccErrors(gpu, N.NVML_MEMORY_ERROR_TYPE_CORRECTED, N.NVML_AGGREGATE_ECC)
        == 0
    )
    assert N.nvmlDeviceGetRemappedRows(gpu) == (0, 0, 0, 0)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetRetiredPages(gpu, 0)  # Ampere remaps rows instead
    assert N.nvmlDeviceGetPersistenceMode(gpu) == 0 and N.nvmlDeviceGetComputeMode(gpu) == 0
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetNumaNodeId(gpu)
    assert N.nvmlDeviceGetSupportedEventTypes(gpu) & N.nvmlEventTypeXidCriticalError


def test_nvlink_states(simulate: Simulate) -> None:
    simulate({"gpus": [{**A100_40, "nvlink_links": 8}, {"board": "RTX-3090"}]})
    a100, rtx = handles()
    assert [N.nvmlDeviceGetNvLinkState(a100, link) for link in range(12)] == [1] * 8 + [0] * 4
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetNvLinkState(a100, 12)  # past the board's links
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetNvLinkState(a100, 18)  # past NVML_NVLINK_MAX_LINKS
    assert [N.nvmlDeviceGetNvLinkState(rtx, link) for link in range(4)] == [0] * 4


def test_consumer_and_pre_ampere_boards(simulate: Simulate) -> None:
    simulate(
        {
            "gpus": [
                {"board": "RTX-4090"},
                {"board": "T4", "retired_pages": {"single_bit": 2, "pending": True}},
            ]
        }
    )
    rtx, t4 = handles()
    assert (
        N.nvmlDeviceGetName(rtx) == "NVIDIA GeForce RTX 4090" and N.nvmlDeviceGetFanSpeed(rtx) == 30
    )
    assert N.nvmlDeviceGetFanSpeed_v2(rtx, 0) == 30 and N.nvmlDeviceGetNumFans(rtx) == 1
    for call in (
        N.nvmlDeviceGetEccMode,
        N.nvmlDeviceGetRemappedRows,
        N.nvmlDeviceGetMigMode,
        N.nvmlDeviceGetSerial,
    ):
        with pytest.raises(N.NVMLError_NotSupported):
            call(rtx)
    assert N.nvmlDeviceGetMaxMigDeviceCount(rtx) == 0
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetMigDeviceHandleByIndex(rtx, 0)
    pages = N.nvmlDeviceGetRetiredPages(
        t4, N.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
    )
    assert len(pages) == 2 and len(set(pages)) == 2
    assert N.nvmlDeviceGetRetiredPages(t4, N.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR) == []
    assert [p["address"] for p in N.nvmlDeviceGetRetiredPages_v2(t4, 0)] == pages
    assert N.nvmlDeviceGetRetiredPagesPendingStatus(t4) == 1
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetRemappedRows(t4)
    assert N.nvmlDeviceGetCudaComputeCapability(t4) == (7, 5)


def test_board_less_gpu_answers_not_supported(simulate: Simulate) -> None:
    simulate(
        {"gpus": [{"name": "GRID P4-1Q", "memory_total_mib": 1024, "memory_reserved_mib": 110}]}
    )
    (gpu,) = handles()
    assert N.nvmlDeviceGetName(gpu) == "GRID P4-1Q"
    assert N.nvmlDeviceGetMemoryInfo(gpu).total == 1024 * MIB
    calls = [(N.nvmlDeviceGetTemperature, 0), (N.nvmlDeviceGetPowerUsage,), (N.nvmlDeviceGetClockInfo, 0),
             (N.nvmlDeviceGetUtilizationRates,), (N.nvmlDeviceGetCurrPcieLinkGeneration,),
             (N.nvmlDeviceGetTotalEnergyConsumption,), (N.nvmlDeviceGetMigMode,), (N.nvmlDeviceGetEccMode,),
             (N.nvmlDeviceGetCpuAffinity, 1), (N.nvmlDeviceGetNvLinkState, 0)]  # fmt: skip
    for call, *args in calls:
        with pytest.raises(N.NVMLError_NotSupported):
            call(gpu, *args)


def test_energy_counts_from_the_driver_load(simulate: Simulate) -> None:
    loading = time.monotonic()
    machine = simulate({"gpus": [{**A100_40, "energy_j": 1000, "power_draw_w": 100}]})
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    first = time.monotonic()
    start = N.nvmlDeviceGetTotalEnergyConsumption(gpu)
    # The load's value, and 100 W (100 mJ a ms) for the time since the load.
    assert 1_000_000 <= start <= 1_000_000 + 100_000 * (time.monotonic() - loading)
    machine.advance(10)
    grown = N.nvmlDeviceGetTotalEnergyConsumption(gpu) - start
    # 100 W x 10 s, in mJ, and the wall time between the two reads; each read is whole mJ
    # (cut, as NVML's unsigned long long is), so their difference may be 1 mJ over.
    assert 1_000_000 <= grown <= 1_000_000 + 100_000 * (time.monotonic() - first) + 1
    time.sleep(0.1)
    assert N.nvmlDeviceGetTotalEnergyConsumption(gpu) - start >= grown + 9_000  # and wall time


def test_cpu_affinity_and_numa(simulate: Simulate) -> None:
    simulate()
    gpu1 = handles()[1]
    assert list(N.nvmlDeviceGetCpuAffinity(gpu1, 2)) == [0xF, 0x1]
    assert N.nvmlDeviceGetNumaNodeId(gpu1) == 1


def test_temperature_v_exists_from_r570(simulate: Simulate) -> None:
    simulate({"driver": {"version": "560.35.03"}, "gpus": [A100_40]})
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetTemperatureV(handles()[0], N.NVML_TEMPERATURE_GPU)
    simulate({"driver": {"version": "570.124.06"}, "gpus": [A100_40]})
    assert N.nvmlDeviceGetTemperatureV(handles()[0], N.NVML_TEMPERATURE_GPU) == 36


# --- driver versions --------------------------------------------------------------------------


def test_driver_before_450_66_has_only_v1_process_lists(simulate: Simulate) -> None:
    simulate(
        {
            "driver": {"version": "440.64"},
            "gpus": [{"board": "T4", "processes": [{"pid": 7, "used_memory_mib": 9}]}],
        }
    )
    (gpu,) = handles()
    with pytest.raises(N.NVMLLibraryMismatchError):
        N.nvmlDeviceGetComputeRunningProcesses(gpu)  # pynvml calls _v3
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetComputeRunningProcesses_v2(gpu)
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetMemoryInfo(gpu, version=N.nvmlMemory_v2)
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetMigMode(gpu)
    assert N.nvmlDeviceGetMemoryInfo(gpu).total == 15360 * MIB
    # The unversioned C symbol is there, with the v1 layout (pid, usedGpuMemory).
    count = ctypes.c_uint(0)
    fn = N.nvmlLib.nvmlDeviceGetComputeRunningProcesses
    assert fn(gpu, ctypes.byref(count), None) == N.NVML_ERROR_INSUFFICIENT_SIZE and count.value == 1
    infos = (ProcessInfoV1 * 1)()
    assert fn(gpu, ctypes.byref(count), infos) == N.NVML_SUCCESS
    assert (infos[0].pid, infos[0].usedGpuMemory) == (7, 9 * MIB)


def test_driver_470_has_v2_but_not_v3(simulate: Simulate) -> None:
    simulate(
        {
            "driver": {"version": "470.82.01"},
            "gpus": [{**A100_40, "processes": [{"pid": 7, "used_memory_mib": 9}]}],
        }
    )
    (gpu,) = handles()
    assert not hasattr(N.nvmlLib, "nvmlDeviceGetComputeRunningProcesses_v3")
    assert not hasattr(N.nvmlLib, "nvmlDeviceGetMemoryInfo_v2")
    (proc,) = N.nvmlDeviceGetComputeRunningProcesses_v2(gpu)
    assert (proc.pid, proc.usedGpuMemory, proc.gpuInstanceId) == (7, 9 * MIB, NO_INSTANCE)
    with pytest.raises(N.NVMLLibraryMismatchError):
        N.nvmlDeviceGetGraphicsRunningProcesses(gpu)


def test_clock_event_reasons_need_r535(simulate: Simulate) -> None:
    simulate({"driver": {"version": "530.30.02"}, "gpus": [A100_40]})
    (gpu,) = handles()
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetCurrentClocksEventReasons(gpu)
    assert N.nvmlDeviceGetCurrentClocksThrottleReasons(gpu) == 0


def test_mig_uuids_before_and_after_r470(simulate: Simulate) -> None:
    one_gi = {
        "gpus": [{**A100_40, "mig": {"enabled": True, "gpu_instances": [{"profile": "7g.40gb"}]}}]
    }
    simulate({"driver": {"version": "460.32.03"}, **one_gi})
    (gpu,) = handles()
    (dev,) = mig_handles(gpu)
    old = N.nvmlDeviceGetUUID(dev)
    assert old == f"MIG-{N.nvmlDeviceGetUUID(gpu)}/0/0"
    assert (
        N.nvmlDeviceGetName(N.nvmlDeviceGetHandleByUUID(old)) == "NVIDIA A100-SXM4-40GB MIG 7g.40gb"
    )
    assert not hasattr(N.nvmlLib, "nvmlDeviceGetGpuInstancePossiblePlacements_v2")
    simulate({"driver": {"version": "470.82.01"}, **one_gi})
    (gpu,) = handles()
    (dev,) = mig_handles(gpu)
    new = N.nvmlDeviceGetUUID(dev)
    assert new.startswith("MIG-") and not new.startswith("MIG-GPU-") and len(new) == 40
    for text in (new, f"MIG-{N.nvmlDeviceGetUUID(gpu)}/0/0"):  # both forms are accepted
        assert N.nvmlDeviceGetUUID(N.nvmlDeviceGetHandleByUUID(text)) == new


# --- processes --------------------------------------------------------------------------------


def test_process_lists(simulate: Simulate) -> None:
    simulate()
    gpu0, gpu1 = handles()
    compute = N.nvmlDeviceGetComputeRunningProcesses(gpu1)
    graphics = N.nvmlDeviceGetGraphicsRunningProcesses(gpu1)
    assert [(p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in compute] == [
        (200, 4096 * MIB, NO_INSTANCE, NO_INSTANCE),
        (201, 512 * MIB, NO_INSTANCE, NO_INSTANCE),
    ]
    assert [(p.pid, p.usedGpuMemory) for p in graphics] == [(201, 512 * MIB), (202, None)]
    assert N.nvmlDeviceGetMPSComputeRunningProcesses(gpu1) == []
    # The parent of a MIG GPU lists every instance's processes, with their GI/CI ids.
    rows = {
        (p.pid, p.gpuInstanceId, p.computeInstanceId)
        for p in N.nvmlDeviceGetComputeRunningProcesses(gpu0)
    }
    assert rows == {(100, 1, 0), (101, 1, 1), (102, 5, 0), (103, 13, 0)}
    assert N.nvmlDeviceGetGraphicsRunningProcesses(gpu0) == []


def test_process_detail_list_matches_the_process_lists(simulate: Simulate) -> None:
    # Driver 550: the call exists from R535 (CUDA 12.2). Every process's memory is known: for
    # NVML_VALUE_NOT_AVAILABLE pynvml's own wrapper fails (it stores None into a C integer).
    mig = {"enabled": True, "gpu_instances": [{"profile": "7g.40gb"}]}
    simulate(
        {
            "gpus": [
                {
                    **A100_40,
                    "processes": [
                        {"pid": 7, "used_memory_mib": 100},
                        {"pid": 8, "used_memory_mib": 50, "type": "compute+graphics"},
                    ],
                },
                {
                    **A100_40,
                    "mig": mig,
                    "processes": [
                        {
                            "pid": 9,
                            "used_memory_mib": 10,
                            "gpu_instance_id": 0,
                            "compute_instance_id": 0,
                        }
                    ],
                },
            ]
        }
    )
    for gpu in handles():
        for mode, listed in (
            (N.NVML_PROCESS_MODE_COMPUTE, N.nvmlDeviceGetComputeRunningProcesses),
            (N.NVML_PROCESS_MODE_GRAPHICS, N.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            details = N.nvmlDeviceGetRunningProcessDetailList(gpu, N.nvmlProcessDetailList_v1, mode)
            rows = [(p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in details]
            assert rows == [
                (p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in listed(gpu)
            ]
            assert all(p.usedGpuCcProtectedMemory == 0 for p in details)
        assert (
            N.nvmlDeviceGetRunningProcessDetailList(
                gpu, N.nvmlProcessDetailList_v1, N.NVML_PROCESS_MODE_MPS
            )
            == []
        )
    with pytest.raises(N.NVMLError_ArgumentVersionMismatch):
        N.nvmlDeviceGetRunningProcessDetailList(handles()[1], 1, N.NVML_PROCESS_MODE_COMPUTE)


def test_two_call_protocol_at_the_c_level(simulate: Simulate) -> None:
    simulate({"gpus": [{**A100_40, "processes": [{"pid": 1}, {"pid": 2}, {"pid": 3}]}, A100_40]})
    busy, idle = handles()
    fn = N.nvmlLib.nvmlDeviceGetComputeRunningProcesses_v3
    count = ctypes.c_uint(0)
    assert (
        fn(busy, ctypes.byref(count), None) == N.NVML_ERROR_INSUFFICIENT_SIZE and count.value == 3
    )
    small = (N.c_nvmlProcessInfo_v3_t * 2)()
    count.value = 2
    assert (
        fn(busy, ctypes.byref(count), small) == N.NVML_ERROR_INSUFFICIENT_SIZE and count.value == 3
    )
    room = (N.c_nvmlProcessInfo_v3_t * 8)()
    count.value = 8
    assert fn(busy, ctypes.byref(count), room) == N.NVML_SUCCESS and count.value == 3
    assert [room[i].pid for i in range(3)] == [1, 2, 3]
    assert room[0].usedGpuMemory == 2**64 - 1  # no used_memory_mib: NVML_VALUE_NOT_AVAILABLE
    count.value = 0
    assert fn(idle, ctypes.byref(count), None) == N.NVML_SUCCESS and count.value == 0


def test_process_names_and_owners(simulate: Simulate) -> None:
    machine = simulate()
    assert N.nvmlSystemGetProcessName(100) == "/usr/bin/python3"
    for pid in (102, 999):  # not visible here; unknown
        with pytest.raises(N.NVMLError_NotFound):
            N.nvmlSystemGetProcessName(pid)
    assert machine.process_owner(100) == ("alice", "/usr/bin/python3 train.py --epochs 3")
    assert machine.process_owner(102) is None and machine.process_owner(999) is None


def test_process_utilization(simulate: Simulate) -> None:
    simulate()
    gpu0, gpu1 = handles()
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetProcessUtilization(gpu1, 0)  # no samples in a scenario
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetProcessUtilization(gpu0, 0)  # MIG-enabled GPU (nvml.h)


# --- MIG --------------------------------------------------------------------------------------


def test_mig_devices(simulate: Simulate) -> None:
    simulate()
    gpu0, gpu1 = handles()
    assert N.nvmlDeviceGetMigMode(gpu0) == [1, 1] and N.nvmlDeviceGetMigMode(gpu1) == [0, 1]
    assert (
        N.nvmlDeviceGetMaxMigDeviceCount(gpu0) == 7 and N.nvmlDeviceGetMaxMigDeviceCount(gpu1) == 0
    )
    devs = mig_handles(gpu0)
    names = [N.nvmlDeviceGetName(d).removeprefix("NVIDIA A100-SXM4-40GB MIG ") for d in devs]
    assert names == ["2c.3g.20gb", "1c.3g.20gb", "2g.10gb", "1g.5gb"]
    assert [(N.nvmlDeviceGetGpuInstanceId(d), N.nvmlDeviceGetComputeInstanceId(d)) for d in devs] == [
        (1, 0), (1, 1), (5, 0), (13, 0)
    ]  # fmt: skip
    assert [N.nvmlDeviceGetIndex(d) for d in devs] == [0, 1, 2, 3]  # dense MIG indices
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetMigDeviceHandleByIndex(gpu0, 4)
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetMigDeviceHandleByIndex(gpu1, 0)
    uuids = [N.nvmlDeviceGetUUID(d) for d in devs]
    assert all(u.startswith("MIG-") for u in uuids) and len(set(uuids)) == 4
    assert N.nvmlDeviceGetIndex(N.nvmlDeviceGetHandleByUUID(uuids[2])) == 2
    flag = N.nvmlDeviceIsMigDeviceHandle(devs[0])
    assert bool(flag) and isinstance(flag, ctypes.c_uint)  # pynvml returns the c_uint itself
    assert not N.nvmlDeviceIsMigDeviceHandle(gpu0)
    assert N.nvmlDeviceGetIndex(N.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(devs[3])) == 0
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(gpu0)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetGpuInstanceId(gpu0)


def test_mig_device_memory_processes_and_attributes(simulate: Simulate) -> None:
    simulate()
    gpu0 = handles()[0]
    devs = mig_handles(gpu0)
    # Both compute instances of GI 1 report its memory: 19968 MiB, 19 idle + 2048 + 1024 used.
    for dev in devs[:2]:
        mem = N.nvmlDeviceGetMemoryInfo(dev, version=N.nvmlMemory_v2)
        assert (mem.total, mem.reserved, mem.used) == (19968 * MIB, 0, 3091 * MIB)
    assert N.nvmlDeviceGetMemoryInfo(devs[2]).used == 15 * MIB  # only a process of unknown memory
    assert (
        N.nvmlDeviceGetBAR1MemoryInfo(devs[0]).bar1Total == 32767 * MIB
    )  # as captured on a 3g.20gb
    # The parent's memory is the aggregate.
    parent = N.nvmlDeviceGetMemoryInfo(gpu0, version=N.nvmlMemory_v2)
    assert (parent.total, parent.reserved, parent.used) == (
        40960 * MIB,
        605 * MIB,
        (3091 + 15 + 525) * MIB,
    )
    # Each MIG device lists its own compute instance's processes.
    lists = [
        [
            (p.pid, p.gpuInstanceId, p.computeInstanceId)
            for p in N.nvmlDeviceGetComputeRunningProcesses(d)
        ]
        for d in devs
    ]
    assert lists == [[(100, 1, 0)], [(101, 1, 1)], [(102, 5, 0)], [(103, 13, 0)]]
    assert N.nvmlDeviceGetComputeRunningProcesses(devs[2])[0].usedGpuMemory is None
    attrs = N.nvmlDeviceGetAttributes(devs[1])
    assert (attrs.multiprocessorCount, attrs.sharedCopyEngineCount, attrs.sharedDecoderCount,
            attrs.gpuInstanceSliceCount, attrs.computeInstanceSliceCount, attrs.memorySizeMB) == (14, 3, 2, 3, 1, 19968)  # fmt: skip
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetAttributes(gpu0)  # nvml.h: MIG device handles only


MIG_NOT_SUPPORTED = [
    ("nvmlDeviceGetUtilizationRates", ()),
    ("nvmlDeviceGetEncoderUtilization", ()),
    ("nvmlDeviceGetDecoderUtilization", ()),
    ("nvmlDeviceGetTemperature", (0,)),
    ("nvmlDeviceGetPowerUsage", ()),
    ("nvmlDeviceGetTotalEnergyConsumption", ()),
    ("nvmlDeviceGetFanSpeed", ()),
    ("nvmlDeviceGetClockInfo", (0,)),
    ("nvmlDeviceGetMaxClockInfo", (0,)),
    ("nvmlDeviceGetPerformanceState", ()),
    ("nvmlDeviceGetPersistenceMode", ()),
    ("nvmlDeviceGetPciInfo", ()),
    ("nvmlDeviceGetMigMode", ()),
    ("nvmlDeviceGetNumGpuCores", ()),
    ("nvmlDeviceGetEccMode", ()),
    ("nvmlDeviceGetTotalEccErrors", (1, 0)),
    ("nvmlDeviceGetRemappedRows", ()),
]


@pytest.mark.parametrize(("call", "args"), MIG_NOT_SUPPORTED)
def test_calls_not_supported_on_mig_devices(
    simulate: Simulate, call: str, args: tuple[int, ...]
) -> None:
    simulate()
    dev = mig_handles(handles()[0])[0]
    with pytest.raises(N.NVMLError_NotSupported):
        getattr(N, call)(dev, *args)


def test_parent_in_mig_mode(simulate: Simulate) -> None:
    simulate({"gpus": [
        {**A100_40, "mig": {"enabled": True, "gpu_instances": [{"profile": "7g.40gb"}]}},
        {**A100_40, "mig": {"enabled": True}, "compute_mode": "prohibited"},
    ]})  # fmt: skip
    busy, empty = handles()
    for gpu in (busy, empty):
        for call in (
            N.nvmlDeviceGetUtilizationRates,
            N.nvmlDeviceGetEncoderUtilization,
            N.nvmlDeviceGetDecoderUtilization,
        ):
            with pytest.raises(N.NVMLError_NotSupported):
                call(gpu)
        with pytest.raises(N.NVMLError_NotSupported):
            N.nvmlDeviceGetTotalEccErrors(
                gpu, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_VOLATILE_ECC
            )
        assert (
            N.nvmlDeviceGetTotalEccErrors(
                gpu, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_AGGREGATE_ECC
            )
            == 0
        )
        assert N.nvmlDeviceGetComputeMode(gpu) == N.NVML_COMPUTEMODE_DEFAULT
        assert N.nvmlDeviceGetTemperature(gpu, 0) == 36  # the parent keeps its sensors
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetRemappedRows(busy)  # while instances exist
    assert N.nvmlDeviceGetRemappedRows(empty) == (0, 0, 0, 0)


def test_unprivileged_mig(simulate: Simulate) -> None:
    simulate({"privileged": False, "gpus": [{**A100_40, "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.20gb"}]},
              "processes": [{"pid": 9, "used_memory_mib": 100, "gpu_instance_id": 1, "compute_instance_id": 0}]}]})  # fmt: skip
    (gpu,) = handles()
    for call, args in [
        (N.nvmlDeviceGetMemoryInfo, ()),
        (N.nvmlDeviceGetComputeRunningProcesses, ()),
        (N.nvmlDeviceGetGpuInstanceRemainingCapacity, (9,)),
        (N.nvmlDeviceGetGpuInstanceById, (1,)),
        (
            N.nvmlDeviceGetGpuInstances,
            (9, (N.c_nvmlGpuInstance_t * 2)(), ctypes.byref(ctypes.c_uint())),
        ),
        (N.nvmlDeviceGetGpuInstancePossiblePlacements, (9, None, ctypes.byref(ctypes.c_uint()))),
    ]:
        with pytest.raises(N.NVMLError_NoPermission):
            call(gpu, *args)
    # MIG device handles still work, which is how an unprivileged collector enumerates MIG.
    (dev,) = mig_handles(gpu)
    assert N.nvmlDeviceGetMemoryInfo(dev).used == (19 + 100) * MIB
    assert [p.pid for p in N.nvmlDeviceGetComputeRunningProcesses(dev)] == [9]
    assert N.nvmlDeviceGetGpuInstanceProfileInfo(gpu, N.NVML_GPU_INSTANCE_PROFILE_3_SLICE).id == 9


def test_gpu_instance_profile_info(simulate: Simulate) -> None:
    simulate()
    gpu0, gpu1 = handles()
    found = {}
    for index in range(N.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = N.nvmlDeviceGetGpuInstanceProfileInfo(gpu0, index)
        except N.NVMLError_NotSupported:
            continue
        found[index] = (info.id, info.name, info.memorySizeMB, info.instanceCount, info.sliceCount)
    assert found == {
        0: (19, "MIG 1g.5gb", 4864, 7, 1),
        1: (14, "MIG 2g.10gb", 9856, 3, 2),
        2: (9, "MIG 3g.20gb", 19968, 2, 3),
        3: (5, "MIG 4g.20gb", 19968, 1, 4),
        4: (0, "MIG 7g.40gb", 40192, 1, 7),
        7: (20, "MIG 1g.5gb+me", 4864, 1, 1),
        9: (15, "MIG 1g.10gb", 9856, 4, 1),
    }
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetGpuInstanceProfileInfo(gpu0, N.NVML_GPU_INSTANCE_PROFILE_COUNT)
    v1 = N.nvmlDeviceGetGpuInstanceProfileInfo(gpu0, N.NVML_GPU_INSTANCE_PROFILE_7_SLICE, version=1)
    assert (v1.id, v1.multiprocessorCount, v1.copyEngineCount, v1.isP2pSupported) == (0, 98, 7, 0)
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetGpuInstanceProfileInfoById(gpu0, 9)  # R580 on (nvml.h of CUDA 13.0)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetGpuInstanceProfileInfo(gpu1, 0)  # MIG not enabled on this GPU
    assert (
        N.nvmlDeviceGetGpuInstanceProfileInfo(gpu1, 0, version=1).id == 19
    )  # v1 only needs MIG support
    simulate({**json.loads(FIXTURE.read_text()), "driver": {"version": "580.65.06"}})
    assert N.nvmlDeviceGetGpuInstanceProfileInfoById(handles()[0], 9).name == "MIG 3g.20gb"


def test_gpu_instances_info_and_placements(simulate: Simulate) -> None:
    simulate()
    gpu0 = handles()[0]
    array, count = (N.c_nvmlGpuInstance_t * 2)(), ctypes.c_uint()
    N.nvmlDeviceGetGpuInstances(gpu0, 9, array, ctypes.byref(count))
    assert count.value == 1
    info = N.nvmlGpuInstanceGetInfo(array[0])
    assert (info.id, info.profileId, info.placement.start, info.placement.size) == (1, 9, 0, 4)
    assert N.nvmlDeviceGetIndex(info.device) == 0
    N.nvmlDeviceGetGpuInstances(gpu0, 0, array, ctypes.byref(count))
    assert count.value == 0
    assert N.nvmlGpuInstanceGetInfo(N.nvmlDeviceGetGpuInstanceById(gpu0, 5)).profileId == 14
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetGpuInstanceById(gpu0, 2)
    count.value = 0
    N.nvmlDeviceGetGpuInstancePossiblePlacements(gpu0, 9, None, ctypes.byref(count))
    assert count.value == 2
    placements = (N.c_nvmlGpuInstancePlacement_t * count.value)()
    N.nvmlDeviceGetGpuInstancePossiblePlacements(gpu0, 9, placements, ctypes.byref(count))
    assert [(p.start, p.size) for p in placements] == [
        (0, 4),
        (4, 4),
    ]  # every placement, used or not
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu0, 1)  # no such profile id on this board
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlGpuInstanceGetInfo(N.c_nvmlGpuInstance_t())


def test_remaining_capacity_follows_placements(simulate: Simulate) -> None:
    machine = simulate(
        {
            "gpus": [
                {
                    "board": "A100-SXM4-80GB",
                    "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.40gb", "start": 4}]},
                }
            ]
        }
    )
    (gpu,) = handles()
    capacity = {
        pid: N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, pid)
        for pid in (19, 20, 15, 14, 9, 5, 0)
    }
    assert capacity == {19: 4, 20: 1, 15: 2, 14: 2, 9: 1, 5: 1, 0: 0}
    machine.reconfigure_mig(
        0, {"enabled": True, "gpu_instances": [{"profile": "1g.10gb+me", "start": 0}]}
    )
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, 20) == 0  # one +me per GPU
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, 19) == 6
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, 5) == 0


def test_compute_instances(simulate: Simulate) -> None:
    simulate()
    gpu0 = handles()[0]
    gi = N.nvmlDeviceGetGpuInstanceById(gpu0, 1)
    info = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, N.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 0
    )
    assert (info.id, info.name, info.sliceCount, info.instanceCount, info.multiprocessorCount, info.sharedCopyEngineCount) == (
        1, "MIG 2c.3g.20gb", 2, 1, 28, 3
    )  # fmt: skip
    assert N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 2, 0).name == "MIG 3g.20gb"
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gi, N.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 0
        )
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_COUNT, 0)
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 0, 1)  # engine profile
    array, count = (N.c_nvmlComputeInstance_t * 3)(), ctypes.c_uint()
    N.nvmlGpuInstanceGetComputeInstances(
        gi, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, array, ctypes.byref(count)
    )
    assert count.value == 1
    ci = N.nvmlComputeInstanceGetInfo(array[0])
    assert (ci.id, ci.profileId, ci.placement.start, ci.placement.size) == (1, 0, 2, 1)
    assert N.nvmlGpuInstanceGetInfo(ci.gpuInstance).id == 1 and N.nvmlDeviceGetIndex(ci.device) == 0
    assert (
        N.nvmlComputeInstanceGetInfo(N.nvmlGpuInstanceGetComputeInstanceById(gi, 0)).profileId == 1
    )
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlGpuInstanceGetComputeInstanceById(gi, 2)
    assert N.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, 0) == 0  # slices 0-2 all taken
    count.value = 0
    N.nvmlGpuInstanceGetComputeInstancePossiblePlacements(gi, 0, None, ctypes.byref(count))
    assert count.value == 3


# --- faults, lost GPUs ------------------------------------------------------------------------


def test_fault_window_counts_samples(simulate: Simulate) -> None:
    fault = {
        "call": "nvmlDeviceGetPowerUsage",
        "gpu": 0,
        "error": "Unknown",
        "after_samples": 2,
        "for_samples": 1,
    }
    machine = simulate({"faults": [fault], "gpus": [A100_40, A100_40]})
    gpu0, gpu1 = handles()
    results = []
    for _ in range(4):  # samples 1 to 4: the fault covers sample 3
        try:
            N.nvmlDeviceGetPowerUsage(gpu0)
            results.append("ok")
        except N.NVMLError_Unknown:
            results.append("Unknown")
        N.nvmlDeviceGetPowerUsage(gpu1)  # the other GPU is never affected
        machine.advance(SAMPLE_SECONDS)
    assert results == ["ok", "ok", "Unknown", "ok"]


def test_fault_matches_versioned_symbols_and_lookups(simulate: Simulate) -> None:
    faults = [
        {"call": "nvmlDeviceGetComputeRunningProcesses", "error": "NotSupported"},
        {"call": "nvmlDeviceGetHandleByIndex", "gpu": 1, "error": "GpuIsLost"},
    ]
    simulate({"faults": faults, "gpus": [A100_40, A100_40]})
    gpu0 = N.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetComputeRunningProcesses(gpu0)  # pynvml calls _v3
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetHandleByIndex(1)


def in_call(thread: threading.Thread, function: str) -> bool:
    """Whether the thread is inside a call of the function of that name now."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None and frame.f_code.co_name != function:
        frame = frame.f_back
    return frame is not None


# Long enough that the other calls below are all answered within it on any machine.
DELAY = 2.0


def test_fault_delay_hangs_one_call_only(simulate: Simulate) -> None:
    simulate(
        {
            "faults": [{"call": "nvmlDeviceGetTemperature", "gpu": 0, "delay_seconds": DELAY}],
            "gpus": [A100_40, A100_40],
        }
    )
    gpu0, gpu1 = handles()
    done = threading.Event()

    def hang() -> None:
        assert N.nvmlDeviceGetTemperature(gpu0, 0) == 36  # answers after the delay
        done.set()

    start = time.monotonic()
    worker = threading.Thread(target=hang)
    worker.start()
    deadline = time.monotonic() + 60
    while not in_call(worker, "apply_faults"):  # the fault's delay has begun
        assert time.monotonic() < deadline and worker.is_alive()
        time.sleep(0.001)
    for _ in range(100):  # other calls, and the same call on another GPU, do not wait
        N.nvmlDeviceGetPowerUsage(gpu0)
        N.nvmlDeviceGetTemperature(gpu1, 0)
    assert not done.is_set()  # answered while the delayed call still waits
    worker.join(60)
    assert done.is_set() and time.monotonic() - start >= DELAY


def test_init_hang(simulate: Simulate) -> None:
    simulate(
        {
            "faults": [{"call": "nvmlInit", "delay_seconds": 0.2, "for_samples": 1}],
            "gpus": [A100_40],
        },
        init=False,
    )
    start = time.monotonic()
    N.nvmlInit()
    assert time.monotonic() - start >= 0.2


def test_lost_gpu_while_others_work(simulate: Simulate) -> None:
    machine = simulate(
        {
            "gpus": [
                A100_40,
                {**A100_40, "lost": True},
                {**A100_40, "lost": {"after_samples": 1, "for_samples": 2}},
            ]
        }
    )
    gpu0 = N.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetHandleByUUID(machine.gpus[1].spec.uuid)
    gpu2 = N.nvmlDeviceGetHandleByIndex(2)
    states = []
    for _ in range(4):
        assert N.nvmlDeviceGetCount() == 3  # lost GPUs are still counted
        assert N.nvmlDeviceGetName(gpu0) == "NVIDIA A100-SXM4-40GB"
        try:
            N.nvmlDeviceGetTemperature(gpu2, 0)
            states.append("ok")
        except N.NVMLError_GpuIsLost:
            states.append("lost")
        machine.advance(SAMPLE_SECONDS)
    assert states == ["ok", "lost", "lost", "ok"]


def test_scenario_time_follows_the_clock_whatever_the_client_calls(simulate: Simulate) -> None:
    simulate({"gpus": [A100_40, {**A100_40, "lost": {"after_samples": 1}}]})
    (_, gpu1) = handles()
    assert N.nvmlDeviceGetTemperature(gpu1, 0) == 36
    time.sleep(SAMPLE_SECONDS + 0.1)  # no enumeration meanwhile
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetTemperature(gpu1, 0)


def test_mig_devices_of_a_lost_gpu(simulate: Simulate) -> None:
    machine = simulate()
    dev = mig_handles(handles()[0])[0]
    machine.set_lost(0, True)
    with pytest.raises(N.NVMLError_GpuIsLost):
        N.nvmlDeviceGetMemoryInfo(dev)
    machine.set_lost(0, False)
    assert N.nvmlDeviceGetMemoryInfo(dev).total == 19968 * MIB


# --- events -----------------------------------------------------------------------------------


def test_xid_events_by_sample(simulate: Simulate) -> None:
    machine = simulate()
    gpu0, gpu1 = [N.nvmlDeviceGetHandleByIndex(i) for i in range(2)]
    events = N.nvmlEventSetCreate()
    for gpu in (gpu0, gpu1):
        N.nvmlDeviceRegisterEvents(gpu, N.nvmlEventTypeXidCriticalError, events)
    seen = []
    for _ in range(3):  # to samples 2, 3 and 4: after 1, 2 and 3 samples
        machine.advance(SAMPLE_SECONDS)
        try:
            data = N.nvmlEventSetWait(events, 0)
        except N.NVMLError_Timeout:
            seen.append(None)
            continue
        assert data.eventType == N.nvmlEventTypeXidCriticalError
        seen.append(
            (
                N.nvmlDeviceGetIndex(data.device),
                data.eventData,
                data.gpuInstanceId,
                data.computeInstanceId,
            )
        )
    assert seen == [None, (1, 13, NO_INSTANCE, NO_INSTANCE), (0, 31, 5, 0)]
    late = N.nvmlEventSetCreate()  # registered after the events fired: gets none of them
    N.nvmlDeviceRegisterEvents(gpu1, N.nvmlEventTypeXidCriticalError, late)
    with pytest.raises(N.NVMLError_Timeout):
        N.nvmlEventSetWait(late, 0)
    N.nvmlEventSetFree(events)
    N.nvmlEventSetFree(late)
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlEventSetWait(events, 0)


def test_event_wait_times_out_and_wakes_on_injected_events(simulate: Simulate) -> None:
    machine = simulate()
    gpu1 = handles()[1]
    events = N.nvmlEventSetCreate()
    N.nvmlDeviceRegisterEvents(gpu1, N.nvmlEventTypeXidCriticalError, events)
    start = time.monotonic()
    with pytest.raises(N.NVMLError_Timeout):
        N.nvmlEventSetWait(events, 100)
    # 100 ms at least; the upper bound only tells milliseconds from seconds (100 s).
    assert 0.1 <= time.monotonic() - start < 50
    # Woken by the event, not by the end of the wait: a minute asked, at most half used.
    threading.Timer(0.05, machine.inject_xid, (1, 79)).start()
    start = time.monotonic()
    assert N.nvmlEventSetWait(events, 60_000).eventData == 79
    assert time.monotonic() - start < 30


def test_event_registration_rules(simulate: Simulate) -> None:
    simulate()
    gpu0 = handles()[0]
    events = N.nvmlEventSetCreate()
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceRegisterEvents(mig_handles(gpu0)[0], N.nvmlEventTypeXidCriticalError, events)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceRegisterEvents(gpu0, N.nvmlEventTypePowerSourceChange, events)
    supported = N.nvmlDeviceGetSupportedEventTypes(gpu0)
    assert supported & N.nvmlEventMigConfigChange and supported & N.nvmlEventTypeDoubleBitEccError


def test_unprivileged_caller_misses_instance_events(simulate: Simulate) -> None:
    machine = simulate(
        {
            "privileged": False,
            "gpus": [
                {**A100_40, "mig": {"enabled": True, "gpu_instances": [{"profile": "7g.40gb"}]}}
            ],
        }
    )
    events = N.nvmlEventSetCreate()
    N.nvmlDeviceRegisterEvents(handles()[0], N.nvmlEventTypeXidCriticalError, events)
    machine.inject_xid(0, 43, gpu_instance_id=0, compute_instance_id=0)
    machine.inject_xid(0, 48)  # affects the whole GPU
    assert N.nvmlEventSetWait(events, 0).eventData == 48
    with pytest.raises(N.NVMLError_Timeout):
        N.nvmlEventSetWait(events, 0)


# --- changing the machine between samples -----------------------------------------------------


def test_mutations_between_samples(simulate: Simulate) -> None:
    machine = simulate()
    gpu0, gpu1 = handles()
    machine.set_processes(
        1, [{"pid": 300, "used_memory_mib": 1000, "user": "zoe", "command": "python x.py"}]
    )
    assert [p.pid for p in N.nvmlDeviceGetComputeRunningProcesses(gpu1)] == [300]
    assert N.nvmlDeviceGetMemoryInfo(gpu1, version=N.nvmlMemory_v2).used == 1000 * MIB
    assert (
        machine.process_owner(300) == ("zoe", "python x.py") and machine.process_owner(200) is None
    )
    machine.update_gpu(1, temperature_c=80, power_draw_w=250.5)
    assert N.nvmlDeviceGetTemperature(gpu1, 0) == 80 and N.nvmlDeviceGetPowerUsage(gpu1) == 250500
    old = mig_handles(gpu0)
    machine.reconfigure_mig(
        0,
        {"enabled": True, "gpu_instances": [{"profile": "7g.40gb"}]},
        [{"pid": 400, "used_memory_mib": 10, "gpu_instance_id": 0, "compute_instance_id": 0}],
    )
    (new,) = mig_handles(gpu0)
    assert N.nvmlDeviceGetName(new) == "NVIDIA A100-SXM4-40GB MIG 7g.40gb"
    assert [p.pid for p in N.nvmlDeviceGetComputeRunningProcesses(new)] == [400]
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetName(old[0])  # handles of destroyed MIG devices are invalid
    with pytest.raises(
        hwinfo.sim.ScenarioError, match="processes.0..gpu_instance_id: no GPU instance 1"
    ):
        machine.set_processes(0, [{"pid": 1, "gpu_instance_id": 1, "compute_instance_id": 0}])
    with pytest.raises(hwinfo.sim.ScenarioError, match="temperature_c: expected an integer"):
        machine.update_gpu(0, temperature_c="hot")


def test_concurrent_callers_and_mutations(simulate: Simulate) -> None:
    machine = simulate()
    errors: list[BaseException] = []
    stop = threading.Event()

    def collect() -> None:
        try:
            while not stop.is_set():
                for gpu in handles():
                    N.nvmlDeviceGetMemoryInfo(gpu)
                    N.nvmlDeviceGetComputeRunningProcesses(gpu)
                    for dev in mig_handles(gpu):
                        try:
                            N.nvmlDeviceGetMemoryInfo(dev)
                            N.nvmlDeviceGetComputeRunningProcesses(dev)
                        except N.NVMLError_InvalidArgument:
                            pass  # reconfigured under us: a stale MIG handle
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=collect) for _ in range(3)]
    for w in workers:
        w.start()
    layouts = [[{"profile": "7g.40gb"}], [{"profile": "3g.20gb"}, {"profile": "3g.20gb"}]]
    for i in range(100):
        machine.reconfigure_mig(0, {"enabled": True, "gpu_instances": layouts[i % 2]})
        machine.set_processes(1, [{"pid": 1000 + i, "used_memory_mib": i}])
    stop.set()
    for w in workers:
        w.join(60)
    assert not errors


@pytest.mark.parametrize("symbol", ["nvmlDeviceGetDriverModel_v1", "nvmlDeviceGetDriverModel_v2"])
def test_driver_model_is_the_scenario_s_else_not_supported(symbol: str) -> None:
    """A Windows dump's WDDM is answered; Linux (no driver_model) answers NotSupported."""
    scenario = {"format": 1, "driver": {"version": "610.62"}, "gpus": [
        {"board": "RTX-4090", "driver_model": {"current": "wddm", "pending": "tcc"}},
        {"board": "RTX-4090"},
    ]}
    hwinfo.sim.install(parse_scenario(scenario, "dm.json", "dm"))
    N.nvmlInit()
    try:
        call = getattr(N, symbol)
        assert call(N.nvmlDeviceGetHandleByIndex(0)) == [
            N.NVML_DRIVER_WDDM, N.NVML_DRIVER_WDM]
        with pytest.raises(N.NVMLError_NotSupported):
            call(N.nvmlDeviceGetHandleByIndex(1))
    finally:
        N.nvmlShutdown()
        hwinfo.sim.uninstall()


def test_display_mode_and_active_from_board_and_scenario(simulate: Simulate) -> None:
    simulate(
        {
            "gpus": [
                A100_40,  # its capture (510): Display Mode Enabled, Display Active Disabled
                {"board": "T4"},  # its capture (515): both Disabled
                {"board": "RTX-3090", "display_active": False, "display_mode": True},
                {"board": "T4", "display_mode": None},
            ]
        }
    )
    a100, t4, rtx, no_mode = handles()
    seen = [(N.nvmlDeviceGetDisplayMode(h), N.nvmlDeviceGetDisplayActive(h)) for h in (a100, t4, rtx)]
    assert seen == [(1, 0), (0, 0), (1, 0)]
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetDisplayMode(no_mode)
    assert N.nvmlDeviceGetDisplayActive(no_mode) == 0
