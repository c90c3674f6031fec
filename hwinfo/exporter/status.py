"""The daemon's own state, for its self-metrics and readiness."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SourceStatus:
    duration_seconds: float | None = None
    success: bool = False
    last_success_timestamp_seconds: float | None = None
    errors_total: int = 0
    # A collection still running past its deadline (a hung NVML call): its data is stale.
    stalled: bool = False


@dataclass
class DaemonStatus:
    version: str
    start_time_seconds: float
    samples_total: int = 0
    nvml_status: str | None = None  # GpuSystem.status of the last sample; None: GPUs off
    sources: dict[str, SourceStatus] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        """Ready once a sample has succeeded for every source."""
        return bool(self.sources) and all(
            s.last_success_timestamp_seconds is not None for s in self.sources.values()
        )
