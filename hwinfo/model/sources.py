"""How fresh each source's section of a snapshot is, and why one is missing."""

from __future__ import annotations

from dataclasses import dataclass

from hwinfo.model.unixtime import UnixTime

# SourceState.state values.
OK, STALE, FAILED, NOT_COLLECTED = "ok", "stale", "failed", "not_collected"


@dataclass
class SourceState:
    """How fresh one source's section is: read now, an older reading kept, or none."""

    source: str  # "host", "cpu", "memory", "storage", "network", "gpu", "claims"
    # "ok": read for this snapshot; "stale": this snapshot repeats an older reading (NVML
    # did not answer in time); "failed": not read, its section is null; "not_collected":
    # switched off (--no-gpu), its section is null.
    state: str
    # Unix time this source's data was read; None when there is none.
    timestamp_seconds: UnixTime | None
    # How old the data was when the snapshot was taken (its timestamp_seconds minus this
    # source's); None when there is none. Older readers add the snapshot's own age.
    age_seconds: float | None
    error: str | None  # why it is stale or failed, one line; None when ok


@dataclass
class SourceError:
    """A collector that failed as a whole; its section is null."""

    source: str  # "cpu", "memory", "storage", "network", "gpu"
    message: str
