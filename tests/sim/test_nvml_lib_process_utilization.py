"""Per-process utilization samples of the fake libnvidia-ml, through the real pynvml."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pynvml as N
import pytest

import hwinfo.sim
from hwinfo.sim.scenario import parse_scenario

SCENARIO = {
    "format": 1,
    "driver": {"version": "560.35.03"},
    "gpus": [
        {"board": "RTX-4090", "processes": [
            {"pid": 10, "used_memory_mib": 100, "sm_percent": 37, "memory_percent": 12},
            {"pid": 11, "used_memory_mib": 50},
        ]},
        {"board": "RTX-3090", "processes": [{"pid": 20, "used_memory_mib": 100}]},
        {"board": "A100-SXM4-40GB", "mig": {"enabled": True}},
    ],
}


@pytest.fixture
def gpus() -> Iterator[list[Any]]:
    hwinfo.sim.install(parse_scenario(SCENARIO, "u.json", "u"))
    N.nvmlInit()
    yield [N.nvmlDeviceGetHandleByIndex(i) for i in range(3)]
    N.nvmlShutdown()
    hwinfo.sim.uninstall()


@pytest.mark.parametrize("call", [N.nvmlDeviceGetProcessUtilization,
                                  N.nvmlDeviceGetProcessesUtilizationInfo])
def test_samples_of_the_processes_that_have_them(gpus: list[Any], call: Any) -> None:
    samples = call(gpus[0], 0)
    assert [(s.pid, s.smUtil, s.memUtil) for s in samples] == [(10, 37, 12)]
    with pytest.raises(N.NVMLError_NotFound):  # nothing newer than a time to come
        call(gpus[0], samples[0].timeStamp + 3_600_000_000)
    # Asked again from the latest sample: only newer ones, or none, as a period may have
    # begun in between on a busy machine.
    try:
        newer = call(gpus[0], samples[0].timeStamp)
    except N.NVMLError_NotFound:
        newer = []
    assert all(s.timeStamp > samples[0].timeStamp for s in newer)
    with pytest.raises(N.NVMLError_NotFound):  # no process of this GPU has samples
        call(gpus[1], 0)
    with pytest.raises(N.NVMLError_NotSupported):  # MIG mode (nvml.h)
        call(gpus[2], 0)


def test_the_versioned_struct_is_checked(gpus: list[Any]) -> None:
    info = N.c_nvmlProcessesUtilizationInfo_v1_t()
    info.version = 1
    fn = N._nvmlGetFunctionPointer("nvmlDeviceGetProcessesUtilizationInfo")
    assert fn(gpus[0], N.byref(info)) == N.NVML_ERROR_ARGUMENT_VERSION_MISMATCH
