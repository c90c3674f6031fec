"""A Slurm job as its controller or accounting database describes it (what jobstats prints)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SlurmJob:
    job_id: str
    name: str | None
    user: str | None
    account: str | None
    partition: str | None
    state: str | None  # RUNNING, COMPLETED, CANCELLED by 0, ...
    elapsed_seconds: float | None
    time_limit_seconds: float | None  # None: none (UNLIMITED), or not told
    nodes: str | None  # Slurm's node list: gpu[01-04]
    gpus_requested: int | None  # GPUs of its request (gres/gpu), all nodes together
    source: str  # "scontrol" (the controller) or "sacct" (the accounting database)
