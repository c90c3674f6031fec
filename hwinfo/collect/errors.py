"""What sources of snapshots raise, below both them and the code that assembles snapshots.

Kept apart from the collectors so that catching one costs no import of NVML's machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwinfo.model.gpu import GpuSystem


class SetupError(Exception):
    """The collectors cannot be set up (or a remote snapshot had) as asked; one line for a person."""


class StaleGpu(Exception):
    """NVML did not answer in time; `system` is the last GPU data, read at `timestamp_seconds`."""

    def __init__(self, system: GpuSystem, timestamp_seconds: float, reason: str) -> None:
        super().__init__(reason)
        self.system = system
        self.timestamp_seconds = timestamp_seconds


class NothingRead(Exception):
    """A source found none of the files it reads below the root; str() is one line."""
