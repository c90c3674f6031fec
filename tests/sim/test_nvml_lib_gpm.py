"""GPM calls of the fake libnvidia-ml, driven through the real pynvml module."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pynvml as N
import pytest

import hwinfo.sim
from hwinfo.sim.scenario import parse_scenario

GI_GPM = {"sm_active_percent": 62.5, "sm_occupancy_percent": 38, "tensor_active_percent": 41,
          "dram_bandwidth_percent": 55, "graphics_active_percent": 88}
SCENARIO = {
    "format": 1,
    "driver": {"version": "560.35.03"},
    "gpus": [
        {"board": "H100-SXM5-80GB", "mig": {"enabled": True, "gpu_instances": [
            {"profile": "3g.40gb", "start": 4, "id": 2, "gpm": GI_GPM},
            {"profile": "1g.10gb", "start": 0, "id": 9},
        ]}},
        {"board": "H100-SXM5-80GB", "gpm": {"sm_active_percent": 78}},
        {"board": "A100-SXM4-40GB"},
    ],
}


@pytest.fixture
def gpus() -> Iterator[list[Any]]:
    hwinfo.sim.install(parse_scenario(SCENARIO, "gpm.json", "gpm"))
    N.nvmlInit()
    yield [N.nvmlDeviceGetHandleByIndex(i) for i in range(3)]
    N.nvmlShutdown()
    hwinfo.sim.uninstall()


def _metrics(first: Any, second: Any, ids: tuple[int, ...]) -> list[tuple[int, int, float]]:
    request = N.c_nvmlGpmMetricsGet_t()
    request.version = N.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = len(ids)
    request.sample1, request.sample2 = first, second
    for i, metric_id in enumerate(ids):
        request.metrics[i].metricId = metric_id
    N.nvmlGpmMetricsGet(request)
    return [(m.metricId, m.nvmlReturn, m.value) for m in request.metrics[: len(ids)]]


def _pair(take: Any) -> tuple[Any, Any]:
    first, second = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
    take(first)
    time.sleep(0.002)
    take(second)
    return first, second


def test_support_is_hopper_and_newer(gpus: list[Any]) -> None:
    assert [N.nvmlGpmQueryDeviceSupport(h).isSupportedDevice for h in gpus] == [1, 1, 0]


def test_a_gpu_whose_scenario_gives_no_gpm_has_none() -> None:
    """An imported dump has no GPM figures: GPM is unsupported, not an invented idle GPU."""
    undeclared = {"format": 1, "gpus": [{"board": "H100-SXM5-80GB"}, {"board": "H100-SXM5-80GB",
                  "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.40gb"}]}}]}
    hwinfo.sim.install(parse_scenario(undeclared, "none.json", "none"))
    N.nvmlInit()
    try:
        for i, take in ((0, N.nvmlGpmSampleGet), (1, lambda h, s: N.nvmlGpmMigSampleGet(h, 1, s))):
            handle = N.nvmlDeviceGetHandleByIndex(i)
            assert N.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice == 0
            with pytest.raises(N.NVMLError_NotSupported):
                take(handle, N.nvmlGpmSampleAlloc())
    finally:
        N.nvmlShutdown()
        hwinfo.sim.uninstall()


def test_mig_gpu_instance_metrics_are_the_scenario_s(gpus: list[Any]) -> None:
    first, second = _pair(lambda s: N.nvmlGpmMigSampleGet(gpus[0], 2, s))
    got = _metrics(first, second, (N.NVML_GPM_METRIC_SM_UTIL, N.NVML_GPM_METRIC_SM_OCCUPANCY,
                                   N.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                   N.NVML_GPM_METRIC_DRAM_BW_UTIL, N.NVML_GPM_METRIC_FP64_UTIL))
    assert got == [(2, 0, 62.5), (3, 0, 38.0), (5, 0, 41.0), (10, 0, 55.0),
                   (11, N.NVML_ERROR_NOT_SUPPORTED, 0.0)]
    idle = _pair(lambda s: N.nvmlGpmMigSampleGet(gpus[0], 9, s))
    assert _metrics(*idle, (N.NVML_GPM_METRIC_SM_UTIL,)) == [(2, 0, 0.0)]


def test_whole_gpu_outside_mig(gpus: list[Any]) -> None:
    first, second = _pair(lambda s: N.nvmlGpmSampleGet(gpus[1], s))
    assert _metrics(first, second, (N.NVML_GPM_METRIC_SM_UTIL,)) == [(2, 0, 78.0)]


@pytest.mark.parametrize("call, error", [
    (lambda h, s: N.nvmlGpmSampleGet(h[0], s), N.NVMLError_NotSupported),  # parent in MIG mode
    (lambda h, s: N.nvmlGpmSampleGet(h[2], s), N.NVMLError_NotSupported),  # Ampere
    (lambda h, s: N.nvmlGpmMigSampleGet(h[0], 5, s), N.NVMLError_NotFound),  # no such GI
    (lambda h, s: N.nvmlGpmMigSampleGet(h[1], 0, s), N.NVMLError_InvalidArgument),  # MIG off
])
def test_sampling_errors(gpus: list[Any], call: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        call(gpus, N.nvmlGpmSampleAlloc())


def test_metrics_need_two_samples_of_one_source_in_order(gpus: list[Any]) -> None:
    gi2 = _pair(lambda s: N.nvmlGpmMigSampleGet(gpus[0], 2, s))
    gi9 = _pair(lambda s: N.nvmlGpmMigSampleGet(gpus[0], 9, s))
    for first, second in ((gi2[0], gi9[1]), (gi2[1], gi2[0]), (N.nvmlGpmSampleAlloc(), gi2[1])):
        with pytest.raises(N.NVMLError_InvalidArgument):
            _metrics(first, second, (N.NVML_GPM_METRIC_SM_UTIL,))


def test_versioned_structs_are_checked(gpus: list[Any]) -> None:
    first, second = _pair(lambda s: N.nvmlGpmMigSampleGet(gpus[0], 2, s))
    request = N.c_nvmlGpmMetricsGet_t()
    request.version, request.numMetrics = 2, 1
    request.sample1, request.sample2 = first, second
    with pytest.raises(N.NVMLError_ArgumentVersionMismatch):
        N.nvmlGpmMetricsGet(request)


def test_freed_samples_are_gone(gpus: list[Any]) -> None:
    sample = N.nvmlGpmSampleAlloc()
    N.nvmlGpmSampleFree(sample)
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlGpmSampleFree(sample)


def test_gpm_percentages_are_bounded() -> None:
    bad = {"format": 1, "gpus": [{"board": "H100-SXM5-80GB", "gpm": {"sm_active_percent": 101}}]}
    with pytest.raises(hwinfo.sim.ScenarioError,
                       match=r"gpus\[0\]\.gpm\.sm_active_percent: must be at most 100"):
        parse_scenario(bad, "bad.json", "bad")
