"""Health rules of each source's freshness (subject: the source, "gpu", "cpu", ...).

A snapshot fetched from a daemon (`check --from`) can repeat old data: the GPU's when NVML
hangs, everything when the daemon's sampler no longer runs. Data older than the thresholds
is a finding, however the daemon labelled it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from hwinfo.health.findings import Problem, Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.sources import SourceState
from hwinfo.units import duration


@dataclass(frozen=True)
class SourceAge:
    """One source of a snapshot, and how old its data is now."""

    state: SourceState
    age_seconds: float | None  # None: the source has no data


def source_ages(snapshot: Snapshot, now: float) -> list[SourceAge]:
    snapshot_age = snapshot.age_seconds(now)
    return [
        SourceAge(s, None if s.age_seconds is None else s.age_seconds + snapshot_age)
        for s in snapshot.sources
    ]


def stale_data(source: SourceAge, limits: Thresholds) -> Iterator[Problem]:
    age = source.age_seconds
    if age is None or age < limits.stale_data_warning_seconds:
        return
    severity = Severity.CRITICAL if age >= limits.stale_data_critical_seconds else Severity.WARNING
    message = f"{source.state.source} data is {duration(age)} old"
    if source.state.error:
        message += f": {source.state.error}"
    yield Problem(severity, message, {"age_seconds": round(age, 3), "state": source.state.state,
                                      "error": source.state.error})


SOURCE_RULES = (stale_data,)
