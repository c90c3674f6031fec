"""`hwinfo board`: what the lab's page shows, asked of the engine in one round.

fleet's listing (every host's state and GPUs, their holders), and beside it which holds are
idle now and since when (queries.idle_holds): the ledger's idle record says which, its idle
alert's ALERTS_FOR_STATE when that began. Where a job of a size fits is fits.py's answer,
asked by the page only when someone asks (board_cache.py bounds both).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from hwinfo.ledger import queries
from hwinfo.ledger.fleet import Fleet, fleet
from hwinfo.ledger.prometheus import Prometheus, Sample, together

# An alert's start later than the query by more than this is a clock no one can trust.
_CLOCK_SLACK_SECONDS = 300.0


@dataclass(frozen=True)
class IdleHold:
    """A user's processes on a device that has done at most the ledger's idle share of work."""

    job: str
    instance: str
    gpu: str
    gpu_instance_id: str  # "" for a whole GPU
    compute_instance_id: str
    user: str
    since: float | None = None  # Unix time its idle alert began; None: not known
    named: tuple[str, ...] = ()  # the Slurm jobs, pods and containers its alert names

    @property
    def device(self) -> tuple[str, str, str, str, str]:
        return self.job, self.instance, self.gpu, self.gpu_instance_id, self.compute_instance_id


@dataclass
class Board:
    fleet: Fleet
    idle: list[IdleHold]  # longest idle first; those whose start is unknown last
    # The engine evaluates the ledger's rules (prometheus/hwinfo-ledger.yml): without them
    # no hold can be called idle, and the page says so instead of calling every hold busy.
    idle_known: bool


def _device(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(k, "") for k in ("job", "instance", "gpu", "gpu_instance_id",
                                             "compute_instance_id", "user"))


def _named(labels: dict[str, str]) -> list[str]:
    """The job, pod or container an idle alert names, as the report labels them."""
    found = []
    if labels.get("slurm_job"):
        found.append(f"slurm:{labels['slurm_job']}")
    if labels.get("pod_uid"):
        found.append(f"pod:{labels['pod_uid'][:8]}")
    if labels.get("container_id"):
        found.append(f"container:{labels['container_id'][:12]}")
    return found


def idle_holds(samples: list[Sample], at: float) -> tuple[list[IdleHold], bool]:
    """The holds idle now, longest first, and whether the ledger's rules are evaluated."""
    idle: set[tuple[str, ...]] = set()
    since: dict[tuple[str, ...], float] = {}
    named: dict[tuple[str, ...], list[str]] = {}
    rules = False
    for s in samples:
        measure = s.labels.get("measure")
        key = _device(s.labels)
        if measure == "rules":
            rules = True
        elif measure == "idle" and 0 <= s.value <= 1:
            idle.add(key)
        # A start that cannot be one (before 1970, in the future) is not known, not guessed.
        elif measure == "since" and math.isfinite(s.value) and 0 < s.value <= at + _CLOCK_SLACK_SECONDS:
            since[key] = min(s.value, since.get(key, s.value))
            named.setdefault(key, []).extend(_named(s.labels))
    holds = [IdleHold(*key, since=since.get(key), named=tuple(sorted(set(named.get(key, ())))))
             for key in idle]
    holds.sort(key=lambda h: (h.since is None, h.since or 0.0, h.instance, h.gpu, h.user))
    return holds, rules


def board(prometheus: Prometheus, at: float) -> Board:
    """The lab now: fleet's listing and the idle holds, asked side by side."""
    listing, idle = together([lambda: fleet(prometheus, at),
                              lambda: prometheus.query(queries.idle_holds(), at)])
    holds, known = idle_holds(cast(list[Sample], idle), at)
    return Board(cast(Fleet, listing), holds, known)
