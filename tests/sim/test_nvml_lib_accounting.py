"""NVML accounting of the fake libnvidia-ml, through the real pynvml: the mode, its
privileges, the ring buffer and each process's statistics."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pynvml as N
import pytest

import hwinfo.sim
from hwinfo.sim.machine import Machine
from hwinfo.sim.scenario import parse_scenario
from hwinfo.sim.scenario_model import ScenarioError

MIB = 1 << 20
SCENARIO: dict[str, Any] = {
    "format": 1,
    "driver": {"version": "560.35.03"},
    "gpus": [
        {"board": "A100-PCIE-80GB", "mig": {"enabled": False}, "utilization_gpu_percent": 70, "processes": [
            {"pid": 10, "used_memory_mib": 538, "user": "alice"},
        ], "accounting": {"enabled": True, "processes": [
            # Real rows of an L40S (captures/text/linux-x86_64__nvidia-l40s__595.80.txt): ended
            # processes with their run time and 0 MiB peak memory.
            {"pid": 15727, "run_ms": 5270, "gpu_util_percent": 71, "memory_util_percent": 8,
             "max_memory_mib": 0},
            {"pid": 18679, "ended_after_s": 5, "run_ms": 153712, "gpu_util_percent": 99,
             "memory_util_percent": 13, "max_memory_mib": 0},
        ]}},
        {"board": "RTX-A5000"},
        {"board": "A100-SXM4-40GB", "mig": {"enabled": True}},
    ],
}

Start = Callable[..., tuple[Machine, list[Any]]]


@pytest.fixture
def start() -> Iterator[Start]:
    def begin(changes: Callable[[dict[str, Any]], None] | None = None) -> tuple[Machine, list[Any]]:
        scenario = copy.deepcopy(SCENARIO)
        if changes is not None:
            changes(scenario)
        machine = hwinfo.sim.install(parse_scenario(scenario, "a.json", "a"))
        N.nvmlInit()
        return machine, [N.nvmlDeviceGetHandleByIndex(i) for i in range(3)]

    yield begin
    hwinfo.sim.uninstall()


def _stats(handle: Any) -> dict[int, Any]:
    return {pid: N.nvmlDeviceGetAccountingStats(handle, pid)
            for pid in N.nvmlDeviceGetAccountingPids(handle)}


def test_off_by_default_with_the_real_buffer_size(start: Start) -> None:
    _, gpus = start()
    assert N.nvmlDeviceGetAccountingMode(gpus[1]) == N.NVML_FEATURE_DISABLED
    assert N.nvmlDeviceGetAccountingBufferSize(gpus[1]) == 4000
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetAccountingPids(gpus[1])
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetAccountingStats(gpus[1], 10)


def test_ended_and_running_processes_as_nvml_describes_them(start: Start) -> None:
    machine, gpus = start()
    assert N.nvmlDeviceGetAccountingMode(gpus[0]) == N.NVML_FEATURE_ENABLED
    stats = _stats(gpus[0])
    assert list(stats) == [15727, 10]  # the second ended process ends 5 s after the load
    ended, running = stats[15727], stats[10]
    assert (ended.isRunning, ended.time, ended.gpuUtilization, ended.memoryUtilization,
            ended.maxMemoryUsage) == (0, 5270, 71, 8, 0)
    # NVML: time is 0 while the process runs; its peak memory is what it holds.
    assert (running.isRunning, running.time, running.gpuUtilization,
            running.maxMemoryUsage) == (1, 0, 70, 538 * MIB)
    assert running.startTime > ended.startTime
    machine.advance(5)
    assert list(_stats(gpus[0])) == [15727, 18679, 10]
    with pytest.raises(N.NVMLError_NotFound):
        N.nvmlDeviceGetAccountingStats(gpus[0], 4242)


def test_a_process_that_leaves_the_gpu_is_kept_with_its_run_time(start: Start) -> None:
    machine, gpus = start()
    machine.set_processes(0, [{"pid": 11, "used_memory_mib": 10}])
    machine.advance(3)
    machine.set_processes(0, [])
    stats = _stats(gpus[0])
    assert 10 in stats and 11 in stats
    assert stats[11].isRunning == 0 and 2900 <= stats[11].time <= 3500
    assert stats[10].isRunning == 0


def test_the_ring_buffer_keeps_the_newest(start: Start) -> None:
    def small(s: dict[str, Any]) -> None:
        s["gpus"][0]["accounting"]["buffer_size"] = 2

    machine, gpus = start(small)
    machine.advance(5)
    assert N.nvmlDeviceGetAccountingBufferSize(gpus[0]) == 2
    assert N.nvmlDeviceGetAccountingPids(gpus[0]) == [18679, 10]


def test_setting_and_clearing_need_root_and_disabling_clears(start: Start) -> None:
    def unprivileged(s: dict[str, Any]) -> None:
        s["privileged"] = False

    _, gpus = start(unprivileged)
    with pytest.raises(N.NVMLError_NoPermission):
        N.nvmlDeviceSetAccountingMode(gpus[1], N.NVML_FEATURE_ENABLED)
    with pytest.raises(N.NVMLError_NoPermission):
        N.nvmlDeviceClearAccountingPids(gpus[0])
    hwinfo.sim.uninstall()

    machine, gpus = start()
    N.nvmlDeviceClearAccountingPids(gpus[0])
    assert N.nvmlDeviceGetAccountingPids(gpus[0]) == [10]  # running processes stay
    N.nvmlDeviceSetAccountingMode(gpus[1], N.NVML_FEATURE_ENABLED)
    assert N.nvmlDeviceGetAccountingPids(gpus[1]) == []
    machine.set_processes(1, [{"pid": 30, "used_memory_mib": 1}])
    machine.set_processes(1, [])
    assert N.nvmlDeviceGetAccountingPids(gpus[1]) == [30]
    N.nvmlDeviceSetAccountingMode(gpus[1], N.NVML_FEATURE_DISABLED)
    N.nvmlDeviceSetAccountingMode(gpus[1], N.NVML_FEATURE_ENABLED)
    assert N.nvmlDeviceGetAccountingPids(gpus[1]) == []
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceSetAccountingMode(gpus[1], 7)


def test_mig_mode_keeps_accounting_off(start: Start) -> None:
    machine, gpus = start()
    assert N.nvmlDeviceGetAccountingMode(gpus[2]) == N.NVML_FEATURE_DISABLED
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceSetAccountingMode(gpus[2], N.NVML_FEATURE_ENABLED)
    # A GPU put into MIG mode turns accounting off (NVML: "set to DISABLED").
    machine.reconfigure_mig(0, {"enabled": True})
    assert N.nvmlDeviceGetAccountingMode(gpus[0]) == N.NVML_FEATURE_DISABLED


def test_a_scenario_cannot_turn_accounting_on_in_mig_mode() -> None:
    scenario = copy.deepcopy(SCENARIO)
    scenario["gpus"][2]["accounting"] = {"enabled": True}
    with pytest.raises(ScenarioError, match=r"gpus\[2\]\.accounting\.enabled: accounting cannot"):
        parse_scenario(scenario, "a.json", "a")


@pytest.mark.parametrize(("accounting", "problem"), [
    ({"buffer_size": 0}, "buffer_size: must be at least 1"),
    ({"processes": [{"pid": 1}]}, r"processes\[0\]\.run_ms: required"),
    ({"processes": [{"pid": 1, "run_ms": 1, "ended_after_s": float("nan")}]}, "not a finite"),
    ({"processes": [{"pid": 1, "run_ms": 1, "gpu_util_percent": 101}]}, "at most 100"),
    ({"mode": True}, "mode: unknown key"),
])
def test_bad_accounting_is_one_line_naming_the_field(accounting: dict[str, Any], problem: str) -> None:
    scenario = copy.deepcopy(SCENARIO)
    scenario["gpus"][1]["accounting"] = accounting
    with pytest.raises(ScenarioError, match=problem) as raised:
        parse_scenario(scenario, "a.json", "a")
    assert "\n" not in str(raised.value)


def test_processes_that_ended_while_accounting_was_off_are_not_kept(start: Start) -> None:
    def off(s: dict[str, Any]) -> None:
        s["gpus"][0]["accounting"]["enabled"] = False

    machine, gpus = start(off)
    machine.advance(6)  # both declared processes end, accounting off
    N.nvmlDeviceSetAccountingMode(gpus[0], N.NVML_FEATURE_ENABLED)
    assert N.nvmlDeviceGetAccountingPids(gpus[0]) == [10]


def test_many_declared_processes_cost_their_declaration_once(start: Start) -> None:
    def many(s: dict[str, Any]) -> None:
        s["gpus"][0]["accounting"]["processes"] = [
            {"pid": 100 + i, "ended_after_s": i / 1000, "run_ms": 1, "max_memory_mib": 0}
            for i in range(50_000)]

    machine, gpus = start(many)
    machine.advance(60)
    pids = N.nvmlDeviceGetAccountingPids(gpus[0])
    assert len(pids) == 4000 and pids[-2] == 100 + 49_999  # the newest, then the running one
    for pid in pids[:500]:  # answered from the buffer as it stands, not rebuilt per call
        assert N.nvmlDeviceGetAccountingStats(gpus[0], pid).time == 1


def test_a_null_output_pointer_is_an_invalid_argument(start: Start) -> None:
    _, gpus = start()
    for name, args in (("nvmlDeviceGetAccountingMode", (None,)),
                       ("nvmlDeviceGetAccountingPids", (None, None)),
                       ("nvmlDeviceGetTemperature", (0, None))):
        call = N._nvmlGetFunctionPointer(name)
        assert call(gpus[0], *args) == N.NVML_ERROR_INVALID_ARGUMENT, name
