"""Health rules of the host (subject "host"): memory, swap, and sources that could not be read."""

from __future__ import annotations

from collections.abc import Iterator

from hwinfo.health.findings import Problem, Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.snapshot import Snapshot
from hwinfo.units import percent, size


def _level(share: float, warning: float, critical: float, worse_when_lower: bool) -> Severity | None:
    """Which threshold (in percent) a share (0..1) has crossed, if any."""
    value = share * 100
    if worse_when_lower:
        crossed_critical, crossed_warning = value < critical, value < warning
    else:
        crossed_critical, crossed_warning = value >= critical, value >= warning
    if crossed_critical:
        return Severity.CRITICAL
    return Severity.WARNING if crossed_warning else None


def memory_pressure(snapshot: Snapshot, limits: Thresholds) -> Iterator[Problem]:
    """Little memory is available for new work without swapping (MemAvailable)."""
    memory = snapshot.memory
    if memory is None or not memory.total_bytes or memory.available_bytes is None:
        return
    share = memory.available_bytes / memory.total_bytes
    severity = _level(share, limits.memory_available_warning_percent,
                      limits.memory_available_critical_percent, worse_when_lower=True)
    if severity is not None:
        yield Problem(
            severity,
            f"{size(memory.available_bytes)} of {size(memory.total_bytes)} memory available "
            f"({percent(share)})",
            {"available_bytes": memory.available_bytes, "total_bytes": memory.total_bytes},
        )


def swap_pressure(snapshot: Snapshot, limits: Thresholds) -> Iterator[Problem]:
    memory = snapshot.memory
    if memory is None or not memory.swap_total_bytes or memory.swap_used_bytes is None:
        return
    share = memory.swap_used_bytes / memory.swap_total_bytes
    severity = _level(share, limits.swap_used_warning_percent,
                      limits.swap_used_critical_percent, worse_when_lower=False)
    if severity is not None:
        yield Problem(
            severity,
            f"{size(memory.swap_used_bytes)} of {size(memory.swap_total_bytes)} swap in use "
            f"({percent(share)})",
            {"swap_used_bytes": memory.swap_used_bytes, "swap_total_bytes": memory.swap_total_bytes},
        )


def collection_failed(snapshot: Snapshot, limits: Thresholds) -> Iterator[Problem]:
    """A source failed as a whole, so the rules that read it could not judge."""
    for error in snapshot.errors:
        yield Problem(Severity.UNKNOWN, f"{error.source} not read: {error.message}",
                      {"source": error.source, "error": error.message})


HOST_RULES = (memory_pressure, swap_pressure, collection_failed)
