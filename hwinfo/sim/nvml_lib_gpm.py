"""GPU performance monitoring (GPM) calls of the fake libnvidia-ml.

A client allocates sample buffers, fills two of them some time apart from a GPU
(nvmlGpmSampleGet) or from one GPU instance of a MIG-mode GPU (nvmlGpmMigSampleGet), and asks
nvmlGpmMetricsGet for the metrics between them. The values come from the scenario's `gpm`
objects (on the GPU, and on each GPU instance). A GPU whose scenario declares no `gpm` at all
(an imported dump, a recording without GPM figures) has no GPM: nothing says what it measured.
"""

from __future__ import annotations

import time

from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.devices import Device, GpmSample, GpuDevice
from hwinfo.sim.machine import Machine
from hwinfo.sim.nvml_lib_base import (
    ARGUMENT_VERSION_MISMATCH,
    INVALID_ARGUMENT,
    NOT_FOUND,
    NOT_SUPPORTED,
    SUCCESS,
    Symbol,
)
from hwinfo.sim.scenario_model import ARCHITECTURES, GpmSpec

# NVML_GPM_SUPPORT_VERSION, NVML_GPM_METRICS_GET_VERSION (nvml.h).
SUPPORT_VERSION = 1
METRICS_GET_VERSION = 1
# nvml.h: "GPM is supported on Hopper or newer fully supported devices".
FIRST_ARCHITECTURE = ARCHITECTURES["hopper"]
# NVML_GPM_METRIC_* ids (nvml.h) -> the scenario's figure for them.
METRICS = {
    1: "graphics_active_percent",  # GRAPHICS_UTIL
    2: "sm_active_percent",  # SM_UTIL
    3: "sm_occupancy_percent",  # SM_OCCUPANCY
    5: "tensor_active_percent",  # ANY_TENSOR_UTIL
    10: "dram_bandwidth_percent",  # DRAM_BW_UTIL
}
# What a GPU instance without figures reads on a GPU whose scenario declares GPM elsewhere (a
# hand-written scenario's idle instance).
IDLE = GpmSpec()
# The streaming calls (a profiler's setting) are exported per nvml_symbols.py but answer
# NotSupported here.


def supported(gpu: GpuDevice) -> bool:
    """Whether GPM answers on this GPU: Hopper or newer, and the scenario gives its figures."""
    spec = gpu.spec
    arch = spec.architecture
    if arch is None or ARCHITECTURES[arch] < FIRST_ARCHITECTURE:
        return False
    # Unknown: a real Hopper GPU always has GPM, so real NVML has no answer for "no figures".
    # A scenario that declares no `gpm` (a dump holds none) is taken as a GPU whose GPM is not
    # supported (isSupportedDevice 0, sampling NotSupported): a client then shows "not
    # available" rather than an idle GPU the dump never showed.
    instances = spec.mig.gpu_instances if spec.mig is not None else ()
    return spec.gpm is not None or any(gi.gpm is not None for gi in instances)


def _alloc(machine: Machine, ref: object) -> int:
    base.write_handle(ref, machine.new_gpm_sample().handle)
    return SUCCESS


def _free(machine: Machine, sample: GpmSample) -> int:
    machine.free_gpm_sample(sample)
    return SUCCESS


def _query_support(machine: Machine, dev: Device, ref: object) -> int:
    """nvmlGpmQueryDeviceSupport(device, byref(support)): whether the board has GPM."""
    support = ref._obj  # type: ignore[attr-defined]
    if support.version != SUPPORT_VERSION:
        return ARGUMENT_VERSION_MISMATCH
    # Unknown: the answer on a MIG device handle; the parent's is given.
    support.isSupportedDevice = int(supported(dev.gpu))
    return SUCCESS


def _fill(machine: Machine, sample_arg: object, source: tuple[int, int | None],
          gpm: GpmSpec | None) -> int:
    sample = machine.gpm_samples.get(base.handle_value(sample_arg))
    if sample is None:
        return INVALID_ARGUMENT
    sample.source, sample.gpm, sample.taken_at = source, gpm or IDLE, time.monotonic()
    return SUCCESS


def _sample_get(machine: Machine, dev: Device, sample: object) -> int:
    """nvmlGpmSampleGet(device, sample): the whole GPU."""
    gpu = dev.gpu
    # Unknown: the answers on a MIG device handle and on a parent in MIG mode; per-instance
    # figures come from nvmlGpmMigSampleGet, so both are taken to be NotSupported.
    if dev is not gpu or gpu.mig_enabled or not supported(gpu):
        return NOT_SUPPORTED
    return _fill(machine, sample, (gpu.index, None), gpu.spec.gpm)


def _mig_sample_get(machine: Machine, dev: Device, gpu_instance_id: object, sample: object) -> int:
    """nvmlGpmMigSampleGet(device, gpuInstanceId, sample): one GPU instance of a MIG GPU."""
    gpu = dev.gpu
    if dev is not gpu or not supported(gpu):
        return NOT_SUPPORTED
    if not gpu.mig_enabled:
        return INVALID_ARGUMENT
    # Unknown: whether GPM needs the privileges that listing GPU instances does; taken not to.
    gid = base.as_int(gpu_instance_id)
    instance = next((gi for gi in gpu.gpu_instances if gi.spec.id == gid), None)
    if instance is None:
        return NOT_FOUND
    return _fill(machine, sample, (gpu.index, gid), instance.spec.gpm)


def _metrics_get(machine: Machine, ref: object) -> int:
    """nvmlGpmMetricsGet(byref(metricsGet)): each asked-for metric between two samples."""
    request = ref._obj  # type: ignore[attr-defined]
    if request.version != METRICS_GET_VERSION:
        return ARGUMENT_VERSION_MISMATCH
    first = machine.gpm_samples.get(base.handle_value(request.sample1))
    second = machine.gpm_samples.get(base.handle_value(request.sample2))
    # Unknown: NVML's exact code for samples of different sources or out of order.
    if first is None or second is None or first.source is None or first.source != second.source:
        return INVALID_ARGUMENT
    if second.taken_at <= first.taken_at or request.numMetrics > len(request.metrics):
        return INVALID_ARGUMENT
    assert second.gpm is not None
    for i in range(request.numMetrics):
        metric = request.metrics[i]
        figure = METRICS.get(metric.metricId)
        # Unknown: the metricInfo names NVML fills in; left NULL.
        if figure is None:
            metric.nvmlReturn, metric.value = NOT_SUPPORTED, 0.0
        else:
            metric.nvmlReturn, metric.value = SUCCESS, getattr(second.gpm, figure)
    return SUCCESS


SYMBOLS: tuple[Symbol, ...] = (
    Symbol("nvmlGpmSampleAlloc", "system", _alloc),
    Symbol("nvmlGpmSampleFree", "gpm_sample", _free),
    Symbol("nvmlGpmQueryDeviceSupport", "device", _query_support),
    Symbol("nvmlGpmSampleGet", "device", _sample_get),
    Symbol("nvmlGpmMigSampleGet", "device", _mig_sample_get),
    Symbol("nvmlGpmMetricsGet", "system", _metrics_get),
)
