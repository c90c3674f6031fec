"""Reading one metric's samples from the exposition of a built-in scenario."""

from __future__ import annotations

from fixtures.simulated import simulated_snapshot
from prometheus_client.parser import text_string_to_metric_families

from hwinfo.exporter.exposition import Selection, render
from hwinfo.exporter.status import DaemonStatus


def samples(scenario: str, metric: str) -> dict[tuple[tuple[str, str], ...], float]:
    """label set -> value of `metric` as `hwinfo serve --simulate scenario` would serve it."""
    text = render(simulated_snapshot(scenario), DaemonStatus("test", 0.0), Selection()).text.decode()
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == metric
    }
