"""Reading one metric's samples from an exposition, as a scraper parses it (label order is the
renderer's, prometheus-client's: by name)."""

from __future__ import annotations

from fixtures.simulated import simulated_snapshot
from prometheus_client.parser import text_string_to_metric_families

from hwinfo.exporter.exposition import Selection, render
from hwinfo.exporter.status import DaemonStatus


def parsed(text: str, metric: str) -> dict[tuple[tuple[str, str], ...], float]:
    """label set (sorted pairs) -> value of `metric` in an exposition's text."""
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == metric
    }


def samples(scenario: str, metric: str) -> dict[tuple[tuple[str, str], ...], float]:
    """label set -> value of `metric` as `hwinfo serve --simulate scenario` would serve it."""
    text = render(simulated_snapshot(scenario), DaemonStatus("test", 0.0), Selection()).text.decode()
    return parsed(text, metric)
