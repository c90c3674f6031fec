"""Snapshot + daemon status -> the bytes a scrape serves, rendered once per sample.

prometheus-client renders: each declared metric becomes one of its metric families, yielded
by a collector in a registry of its own (never the global one), and its generate_latest
functions write the Prometheus text format and OpenMetrics. The sampler calls render()
after each sample, so a scrape only sends bytes.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.core import Metric as Family
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.registry import Collector, CollectorRegistry

from hwinfo.escape import unicode
from hwinfo.exporter.catalogue import SELF_METRICS, SNAPSHOT_GROUPS
from hwinfo.exporter.metric import Metric, Sample
from hwinfo.exporter.status import DaemonStatus
from hwinfo.model.snapshot import Snapshot

__all__ = ["OPENMETRICS", "TEXT_CONTENT_TYPE", "Rendered", "Selection", "render"]

# What generate_latest writes. prometheus-client's own CONTENT_TYPE_LATEST names text format
# 1.0.0 in its newer releases, which this rendering is not.
TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Selection:
    """Which metrics to export: groups switched off, and whether optional series are on."""

    disabled_groups: frozenset[str] = frozenset()
    process_metrics: bool = False

    def metrics(self) -> Iterator[Metric]:
        for name, group in SNAPSHOT_GROUPS.items():
            if name in self.disabled_groups:
                continue
            for metric in group:
                if self.process_metrics or not metric.optional:
                    yield metric


@dataclass(frozen=True)
class Rendered:
    """One sample's exposition in both formats, plain and gzipped."""

    text: bytes
    text_gzip: bytes
    openmetrics: bytes
    openmetrics_gzip: bytes


def families(
    snapshot: Snapshot | None, status: DaemonStatus, selection: Selection
) -> list[tuple[Metric, list[Sample]]]:
    """Every selected metric with its samples for this snapshot (read once, for both formats)."""
    chosen = [(m, m.samples(snapshot)) for m in selection.metrics()] if snapshot else []
    return chosen + [(m, m.samples(status)) for m in SELF_METRICS]


def family(metric: Metric, samples: list[Sample]) -> Family:
    """One declared metric as a prometheus-client family: the served names stay the declared
    ones, since the library adds `_total` to counters and `_info` to info metrics itself."""
    labels = list(metric.labels)
    if metric.type == "info":
        info = InfoMetricFamily(metric.full_name.removesuffix("_info"), metric.help,
                                labels=labels)
        for values, _ in samples:
            info.add_metric(_label_values(values), {})
        return info
    # No created= is given, so a counter has no `_created` series.
    kind = CounterMetricFamily if metric.type == "counter" else GaugeMetricFamily
    result = kind(metric.full_name, metric.help, labels=labels)
    for values, value in samples:
        result.add_metric(_label_values(values), value)
    return result


def _label_values(values: tuple[str, ...]) -> list[str]:
    # A name read from the machine may hold undecodable bytes, which UTF-8 cannot encode.
    return [unicode(value) for value in values]


class Families(Collector):
    """prometheus-client's collector of one sample's families, built once for both formats."""

    def __init__(self, read: list[tuple[Metric, list[Sample]]]) -> None:
        self._families = [family(metric, samples) for metric, samples in read]

    def collect(self) -> Iterator[Family]:
        return iter(self._families)


def render(snapshot: Snapshot | None, status: DaemonStatus, selection: Selection) -> Rendered:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(families(snapshot, status, selection)))
    text, openmetrics = generate_latest(registry), generate_openmetrics(registry)
    # Level 1: scrapes are frequent and the text compresses ~10x even so.
    return Rendered(text, gzip.compress(text, 1), openmetrics, gzip.compress(openmetrics, 1))
