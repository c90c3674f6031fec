"""Health rules of each source's freshness: stale data by its age now."""

from __future__ import annotations

import pytest

from hwinfo.health import rules_sources
from hwinfo.health.evaluate import evaluate
from hwinfo.health.findings import Severity
from hwinfo.health.thresholds import ConfigError, Thresholds, parse_thresholds
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.sources import SourceState

from .factories import make_gpu, make_snapshot, make_system

LIMITS = Thresholds(stale_data_warning_seconds=60, stale_data_critical_seconds=600)
REASON = "NVML did not answer within 5 s"


def _snapshot(gpu_age: float) -> Snapshot:
    snapshot = make_snapshot(gpu=make_system(make_gpu()))
    taken = snapshot.timestamp_seconds
    snapshot.sources = [
        SourceState("host", "ok", taken, 0.0, None),
        SourceState("gpu", "stale", taken - gpu_age, gpu_age, REASON),
    ]
    return snapshot


@pytest.mark.parametrize(
    ("gpu_age", "snapshot_age", "severity"),
    [
        (10.0, 0.0, None),
        (59.0, 0.0, None),
        (60.0, 0.0, Severity.WARNING),
        (30.0, 40.0, Severity.WARNING),  # the snapshot's own age counts
        (599.0, 0.0, Severity.WARNING),
        (300.0, 300.0, Severity.CRITICAL),
    ],
)
def test_stale_gpu_data_by_age(gpu_age: float, snapshot_age: float, severity: Severity | None) -> None:
    snapshot = _snapshot(gpu_age)
    findings = [f for f in evaluate(snapshot, LIMITS, now=snapshot.timestamp_seconds + snapshot_age)
                if f.rule == "stale_data" and f.subject == "gpu"]
    assert [f.severity for f in findings] == ([severity] if severity else [])
    for finding in findings:
        assert finding.message.endswith(f"old: {REASON}")
        assert finding.facts["age_seconds"] == gpu_age + snapshot_age


def test_a_whole_snapshot_that_stopped_moving_is_stale() -> None:
    snapshot = _snapshot(0.0)
    findings = evaluate(snapshot, LIMITS, now=snapshot.timestamp_seconds + 3600)
    assert {(f.subject, f.severity) for f in findings if f.rule == "stale_data"} == {
        ("host", Severity.CRITICAL), ("gpu", Severity.CRITICAL)}


def test_sources_without_data_and_old_documents_are_not_judged() -> None:
    snapshot = make_snapshot()
    assert not [f for f in evaluate(snapshot, LIMITS, now=snapshot.timestamp_seconds + 3600)
                if f.rule == "stale_data"]
    snapshot.sources = [SourceState("gpu", "failed", None, None, REASON)]
    assert not list(rules_sources.stale_data(
        rules_sources.source_ages(snapshot, snapshot.timestamp_seconds + 3600)[0], LIMITS))


def test_thresholds_keys_and_their_order() -> None:
    limits = parse_thresholds({"stale_data_warning_seconds": 5, "stale_data_critical_seconds": 50},
                              ["stale_data"], "config x")
    assert (limits.stale_data_warning_seconds, limits.stale_data_critical_seconds) == (5.0, 50.0)
    with pytest.raises(ConfigError, match="stale_data_critical_seconds \\(4\\) is below"):
        parse_thresholds({"stale_data_warning_seconds": 5, "stale_data_critical_seconds": 4},
                         ["stale_data"], "config x")
