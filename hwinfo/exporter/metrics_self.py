"""The exporter's own health: how collection goes, whether NVML is up, which build runs."""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator
from typing import Any

from hwinfo.exporter.metric import Metric, Sample
from hwinfo.exporter.status import DaemonStatus, SourceStatus


def _per_source(value: Callable[[SourceStatus], Any]) -> Callable[[DaemonStatus], Iterator[Sample]]:
    def read(status: DaemonStatus) -> Iterator[Sample]:
        for name, source in sorted(status.sources.items()):
            v = value(source)
            if v is not None:
                yield (name,), float(v)

    return read


METRICS: tuple[Metric, ...] = (
    Metric(
        "build_info",
        "info",
        "The running hwinfo.",
        ("version", "python_version"),
        "hwinfo_version",
        lambda st: [((st.version, platform.python_version()), 1.0)],
    ),
    Metric(
        "start_time_seconds",
        "gauge",
        "When the daemon started, as Unix time.",
        (),
        "",
        lambda st: [((), st.start_time_seconds)],
    ),
    Metric(
        "samples_total",
        "counter",
        "Samples the daemon has taken.",
        (),
        "",
        lambda st: [((), float(st.samples_total))],
    ),
    Metric(
        "collection_duration_seconds",
        "gauge",
        "How long the last sample of a source took.",
        ("source",),
        "collection_seconds",
        _per_source(lambda s: s.duration_seconds),
    ),
    Metric(
        "collection_success",
        "gauge",
        "1 when the last sample of a source succeeded.",
        ("source",),
        "errors",
        _per_source(lambda s: s.success),
    ),
    Metric(
        "last_success_timestamp_seconds",
        "gauge",
        "When a source last sampled successfully; time() minus this is the age of its data.",
        ("source",),
        "timestamp_seconds",
        _per_source(lambda s: s.last_success_timestamp_seconds),
    ),
    Metric(
        "collection_errors_total",
        "counter",
        "Failed samples of a source.",
        ("source",),
        "errors",
        _per_source(lambda s: s.errors_total),
    ),
    Metric(
        "collection_stalled",
        "gauge",
        "1 while a source's collection runs past its deadline, or the GPU's past two "
        "sampling intervals (a hung NVML call): its series are stale.",
        ("source",),
        "",
        _per_source(lambda s: s.stalled),
    ),
    Metric(
        "nvml_up",
        "gauge",
        "1 when NVML answers (absent when GPU collection is off).",
        (),
        "gpu.status",
        lambda st: [] if st.nvml_status is None else [((), float(st.nvml_status == "ok"))],
    ),
    Metric(
        "nvml_status_info",
        "info",
        "NVML's state: ok, no_library, no_driver, driver_mismatch, no_permission, error.",
        ("status",),
        "gpu.status",
        lambda st: [] if st.nvml_status is None else [((st.nvml_status,), 1.0)],
    ),
)
