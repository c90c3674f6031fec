"""What the ledger recorded of jobs' own CPU, memory and I/O (the hwinfo-ledger-jobs group of
prometheus/hwinfo-ledger.yml, docs/jobs.md), summed over a range per job, pod, container or
user: whole hours from its hourly roll-ups where the engine keeps every one, else minutes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from hwinfo.ledger import queries, rollup
from hwinfo.ledger.prometheus import Prometheus, RuleGroup, Sample, together
from hwinfo.ledger.usage import plausible

_RECORD = "hwinfo:ledger_job_{}"
CPU_USED = _RECORD.format("cpu_used:cpus")
CPU_ALLOTTED = _RECORD.format("cpu_allotted:cpus")
SEEN_ROLLUP = _RECORD.format("seen:count") + rollup.ROLLUP_SUFFIX
# measure -> the minute record it sums (or takes the peak of), in base units a second.
_SUMMED = {
    "cpu_used": CPU_USED,
    "cpu_allotted": CPU_ALLOTTED,
    "read": _RECORD.format("io_read:bytes_per_second"),
    "written": _RECORD.format("io_written:bytes_per_second"),
    "io_busy": _RECORD.format("io_busy:ratio"),
    "cpuset_busy": _RECORD.format("cpuset_busy:ratio"),
    "waiting": _RECORD.format("pressure_waiting:ratio"),
    "stalled": _RECORD.format("pressure_stalled:ratio"),
}
_PEAKS = {"memory_peak": _RECORD.format("memory_peak:bytes"),
          "memory_limit": _RECORD.format("memory_limit:bytes")}
# Where figures() finds nothing to read, why.
NOT_RECORDED = ("the engine has not loaded the current prometheus/hwinfo-ledger.yml (its "
                "hwinfo-ledger-jobs group and idle threshold): jobs' CPU, memory and I/O are "
                "not recorded")
# Measures also split by a label of their records.
_BY = {"waiting": "resource", "stalled": "resource", "read": "device"}
# The roll-ups these figures read: all must be recorded for a range to read hours.
ROLLUPS = frozenset({SEEN_ROLLUP, *(r + rollup.ROLLUP_SUFFIX for r in [*_SUMMED.values(),
                                                                          *_PEAKS.values()])})


@dataclass
class JobResources:
    """One job's (pod's, container's, user's) figures over a range; None: not recorded."""

    key: str
    seen_seconds: float = 0.0  # evaluations that saw its CPU figures, times the interval
    cpu_used_seconds: float = 0.0
    cpu_allotted_seconds: float = 0.0
    read_bytes: float = 0.0
    written_bytes: float = 0.0
    io_busy_seconds: float = 0.0  # device-seconds the disks worked for it
    cpuset_busy_seconds: float = 0.0  # its cpuset's CPUs busy with anyone's work (their mean)
    memory_peak_bytes: float | None = None
    memory_limit_bytes: float | None = None
    # resource (cpu, memory, io) -> seconds some (all) of its tasks were stalled on it
    waiting_seconds: dict[str, float] = field(default_factory=dict)
    stalled_seconds: dict[str, float] = field(default_factory=dict)
    read_bytes_by_device: dict[str, float] = field(default_factory=dict)

    @property
    def cpu_efficiency(self) -> float | None:
        """CPU-seconds used over CPU-seconds allotted, 0 to 1 (a quota's burst can take a
        little more; it is cut at 1)."""
        if self.cpu_allotted_seconds <= 0:
            return None
        return min(1.0, self.cpu_used_seconds / self.cpu_allotted_seconds)

    def share(self, seconds: float | None) -> float | None:
        """`seconds` over the time it was seen: a mean share of its time."""
        if seconds is None or self.seen_seconds <= 0:
            return None
        return min(1.0, seconds / self.seen_seconds)

    @property
    def io_busy_ratio(self) -> float | None:
        return self.share(self.io_busy_seconds)

    @property
    def cpuset_busy_ratio(self) -> float | None:
        """How busy its cpuset's CPUs were, with anyone's work; None where not recorded."""
        return self.share(self.cpuset_busy_seconds) if self.cpuset_busy_seconds else None

    def pressure_ratio(self, resource: str) -> float | None:
        return self.share(self.waiting_seconds.get(resource))


def jobs_group(groups: Iterable[RuleGroup]) -> RuleGroup | None:
    """The group that records jobs' resources; None where the engine has not loaded it (a
    rules file from before it)."""
    return next((g for g in groups if CPU_USED in g.records), None)


@dataclass
class Recorded:
    """What the ledger recorded of jobs over a range."""

    rows: dict[str, JobResources]  # by the label asked for
    interval_seconds: float  # of the jobs' rules
    idle_threshold: float  # the activity at or below which the rules call a hold idle


def figures(prometheus: Prometheus, groups: list[RuleGroup], label: str, since: float,
            until: float, only: str = "") -> Recorded | None:
    """Each `label` value's figures over (since, until] (`only`: a selector's matchers, e.g.
    slurm_job="4242"); None where the engine records none of them, or no idle threshold
    (rules older than both)."""
    group = jobs_group(groups)
    if group is None:
        return None
    interval = group.interval_seconds
    plan = _plan(prometheus, groups, since, until, interval)
    asked = [_measures(label, only, span, part.rolled) for span, part in plan.ranges()]
    asked.append(queries.union({"idle_threshold": (
        f"max(last_over_time({queries.IDLE_THRESHOLD_RECORD}{plan.whole}))")}))
    answers = together([lambda expr=expr: plausible(prometheus.query(expr, until), prometheus.url)
                        for expr in asked])
    samples = [s for part in answers for s in part]
    threshold = [s.value for s in samples if s.labels.get("measure") == "idle_threshold"]
    if not threshold or not 0 <= threshold[0] < 1:
        return None
    return Recorded(_rows(samples, label, interval), interval, threshold[0])


def _plan(prometheus: Prometheus, groups: list[RuleGroup], since: float, until: float,
          interval: float) -> rollup.Plan:
    """Hours from the roll-ups where the hourly group records them all, else minutes."""
    minutes = rollup.minutes_only(since, until)
    hourly = next((g for g in groups if ROLLUPS <= g.records), None)
    if (hourly is None or ROLLUPS & hourly.failing
            or until - since < hourly.interval_seconds + interval):
        return minutes
    times = prometheus.sample_times(SEEN_ROLLUP + minutes.whole, until)
    return rollup.plan(times, since, until, hourly.interval_seconds, interval)


def _measures(label: str, only: str, span: str, rolled: bool) -> str:
    suffix = rollup.ROLLUP_SUFFIX if rolled else ""
    selector = f"{{{only}}}" if only else ""

    def by(measure: str) -> str:
        return ", ".join(filter(None, (label, _BY.get(measure, ""))))

    measures = {name: f"sum by ({by(name)}) (sum_over_time({record}{suffix}{selector}{span}))"
                for name, record in _SUMMED.items()}
    measures["read_total"] = (f"sum by ({label}) "
                              f"(sum_over_time({_SUMMED['read']}{suffix}{selector}{span}))")
    measures["seen"] = (f"sum by ({label}) (sum_over_time({SEEN_ROLLUP}{selector}{span}))"
                        if rolled else
                        f"sum by ({label}) (count_over_time({CPU_ALLOTTED}{selector}{span}))")
    for name, record in _PEAKS.items():
        measures[name] = f"max by ({label}) (max_over_time({record}{suffix}{selector}{span}))"
    return queries.union(measures)


def _rows(samples: list[Sample], label: str, interval: float) -> dict[str, JobResources]:
    rows: dict[str, JobResources] = {}
    by_device: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in samples:
        key, measure = s.labels.get(label, ""), s.labels.get("measure", "")
        row = rows.setdefault(key, JobResources(key))
        if measure in _PEAKS:
            name = f"{measure}_bytes"
            setattr(row, name, max(getattr(row, name) or 0.0, s.value))
        elif measure == "seen":
            row.seen_seconds += s.value * interval
        elif measure in ("waiting", "stalled"):
            totals = getattr(row, f"{measure}_seconds")
            resource = s.labels.get("resource", "")
            totals[resource] = totals.get(resource, 0.0) + s.value * interval
        elif measure == "read":
            by_device[key][s.labels.get("device", "")] += s.value * interval
        elif measure == "read_total":
            row.read_bytes += s.value * interval
        elif measure in _SUMMED:
            name = {"cpu_used": "cpu_used_seconds", "cpu_allotted": "cpu_allotted_seconds",
                    "written": "written_bytes", "io_busy": "io_busy_seconds",
                    "cpuset_busy": "cpuset_busy_seconds"}[measure]
            setattr(row, name, getattr(row, name) + s.value * interval)
    for key, devices in by_device.items():
        rows[key].read_bytes_by_device = dict(devices)
    return rows
