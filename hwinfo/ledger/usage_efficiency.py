"""`hwinfo usage --by job|user`'s CPU efficiency and verdict per row: whose jobs hold GPUs
waiting on CPUs, disks or nothing (verdict.py, from job_resources.py's figures)."""

from __future__ import annotations

from hwinfo.ledger.job_resources import NOT_RECORDED, JobResources, figures
from hwinfo.ledger.prometheus import Prometheus
from hwinfo.ledger.usage import Ledger
from hwinfo.ledger.verdict import judge

# usage's --by values that get them, and the label of the jobs' records each groups by.
EFFICIENCY_BY = {"job": "slurm_job", "user": "user"}


def add_efficiency(prometheus: Prometheus, ledger: Ledger) -> None:
    """Each row's CPU efficiency over the range (its jobs' CPU-seconds used over allotted) and
    verdict; the total's efficiency over every row's jobs. A user's GPU figures are all their
    holds, their CPU figures their jobs' only."""
    found = figures(prometheus, prometheus.rule_groups(), EFFICIENCY_BY[ledger.by],
                    ledger.since, ledger.until)
    if found is None:
        ledger.notes.append(f"{prometheus.url}: {NOT_RECORDED}; no CPU efficiency or verdict")
        return
    total = JobResources("total")
    for row in ledger.rows:
        resources = found.rows.get(row.key)
        row.cpu_efficiency = None if resources is None else resources.cpu_efficiency
        row.verdict = judge(row.mean_utilization_ratio, resources, found.interval_seconds,
                            found.idle_threshold).verdict
        if resources is not None:
            total.cpu_used_seconds += resources.cpu_used_seconds
            total.cpu_allotted_seconds += resources.cpu_allotted_seconds
    ledger.total.cpu_efficiency = total.cpu_efficiency
