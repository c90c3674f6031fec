"""GPU performance monitoring (GPM, Hopper and newer): activity of GPUs and MIG GPU instances.

NVML's utilization counters say nothing about MIG devices; GPM does, per GPU instance. Its
figures are computed between two samples of the same GPU or GPU instance. The daemon keeps
each sample until its next collection, so the figures cover the sampling interval. A key seen
for the first time (every key of a one-shot command) is sampled as its GPU is read and again
once all GPUs are read, at least MIN_WINDOW_SECONDS later.
"""

from __future__ import annotations

import time
from typing import Any

from hwinfo.binding import function, pynvml
from hwinfo.model.gpu import Activity, Gpu

# Unknown: the shortest window over which NVML's GPM figures are meaningful; NVIDIA's tools
# sample about once a second. A one-shot report waits at most this long for its second sample.
MIN_WINDOW_SECONDS = 0.1
# NVML_GPM_METRIC_* ids (nvml.h) and the Activity field each one fills (percent in NVML).
_METRICS = (
    (1, "graphics_active_ratio"),  # GRAPHICS_UTIL
    (2, "sm_active_ratio"),  # SM_UTIL
    (3, "sm_occupancy_ratio"),  # SM_OCCUPANCY
    (5, "tensor_active_ratio"),  # ANY_TENSOR_UTIL
    (10, "dram_bandwidth_ratio"),  # DRAM_BW_UTIL
)
# Bindings before GPM (nvidia-ml-py older than 12.525) cannot ask for it.
AVAILABLE = hasattr(pynvml, "c_nvmlGpmMetricsGet_t")

Key = tuple[str, int | None]  # (GPU UUID, GPU instance id; None for the whole GPU)


class _Series:
    """The latest sample of one key, and a spare buffer to take the next one into."""

    __slots__ = ("handle", "latest", "spare", "taken_at")

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.latest = function("nvmlGpmSampleAlloc")()
        self.spare = function("nvmlGpmSampleAlloc")()
        self.taken_at = 0.0

    def free(self) -> None:
        for buffer in (self.latest, self.spare):
            try:
                function("nvmlGpmSampleFree")(buffer)
            except pynvml.NVMLError:
                pass


class GpmReader:
    """Keeps a sample per GPU and GPU instance between collections; see the module docstring."""

    def __init__(self) -> None:
        self._series: dict[Key, _Series] = {}
        self._supported: dict[str, bool] = {}
        self._pending: list[Key] = []
        self._seen: set[Key] = set()
        self._request: Any = None

    def supported(self, handle: Any, uuid: str) -> bool:
        if uuid not in self._supported:
            try:
                support = AVAILABLE and function("nvmlGpmQueryDeviceSupport")(handle).isSupportedDevice
            except pynvml.NVMLError:
                support = False
            self._supported[uuid] = bool(support)
        return self._supported[uuid]

    def sample(self, handle: Any, uuid: str, gpu_instance_ids: list[int] | None
               ) -> dict[Key, Activity]:
        """Sample the whole GPU (ids None) or these GPU instances: activity since the last sample."""
        keys: list[Key] = (
            [(uuid, None)] if gpu_instance_ids is None
            else [(uuid, gid) for gid in gpu_instance_ids]
        )
        found: dict[Key, Activity] = {}
        for key in keys:
            self._seen.add(key)
            series = self._series.get(key)
            if series is None:
                try:
                    series = self._series[key] = _Series(handle)
                    self._take(key, series, series.latest)
                except pynvml.NVMLError:
                    self._drop(key)
                    continue
                self._pending.append(key)
            elif (activity := self._next(key, series)) is not None:
                found[key] = activity
        return found

    def finish(self) -> dict[Key, Activity]:
        """Second samples of the keys first seen in this collection; forget keys not seen."""
        found: dict[Key, Activity] = {}
        if self._pending:
            first = min(self._series[key].taken_at for key in self._pending)
            time.sleep(max(0.0, first + MIN_WINDOW_SECONDS - time.monotonic()))
            for key in self._pending:
                if (activity := self._next(key, self._series[key])) is not None:
                    found[key] = activity
            self._pending = []
        for key in set(self._series) - self._seen:
            self._drop(key)
        self._seen = set()
        return found

    def close(self) -> None:
        for key in list(self._series):
            self._drop(key)

    def _take(self, key: Key, series: _Series, buffer: Any) -> None:
        gpu_instance_id = key[1]
        if gpu_instance_id is None:
            function("nvmlGpmSampleGet")(series.handle, buffer)
        else:
            function("nvmlGpmMigSampleGet")(series.handle, gpu_instance_id, buffer)
        series.taken_at = time.monotonic()

    def _next(self, key: Key, series: _Series) -> Activity | None:
        """Take a new sample; the activity between it and the previous one."""
        previous_at = series.taken_at
        try:
            self._take(key, series, series.spare)
            series.latest, series.spare = series.spare, series.latest
            return self._between(series.spare, series.latest, series.taken_at - previous_at)
        except pynvml.NVMLError:
            self._drop(key)  # the GPU instance is gone, or GPM failed: start anew next time
            return None

    def _between(self, first: Any, second: Any, window: float) -> Activity:
        request = self._request
        if request is None:
            request = self._request = pynvml.c_nvmlGpmMetricsGet_t()
            request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = len(_METRICS)
            for i, (metric_id, _) in enumerate(_METRICS):
                request.metrics[i].metricId = metric_id
        request.sample1, request.sample2 = first, second
        function("nvmlGpmMetricsGet")(request)
        ratios = {
            name: request.metrics[i].value / 100 if request.metrics[i].nvmlReturn == 0 else None
            for i, (_, name) in enumerate(_METRICS)
        }
        return Activity(window_seconds=window, **ratios)

    def _drop(self, key: Key) -> None:
        series = self._series.pop(key, None)
        if series is not None:
            series.free()
        if key in self._pending:
            self._pending.remove(key)


def attach(gpus: list[Gpu], activities: dict[Key, Activity]) -> None:
    """Put each activity on its GPU, or on every MIG device of its GPU instance."""
    for gpu in gpus:
        if gpu.uuid is None:
            continue
        if gpu.mig is not None and gpu.mig.enabled:
            for device in gpu.mig.devices:
                device.activity = activities.get((gpu.uuid, device.gpu_instance_id))
        else:
            gpu.activity = activities.get((gpu.uuid, None))
