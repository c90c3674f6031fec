"""`hwinfo usage`: each user's (host's, model's) GPU time over a range, busy or idle, and its cost."""

from __future__ import annotations

import functools
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from hwinfo.ledger import queries, rollup
from hwinfo.ledger.advice import Advice, advice_for, idle_threshold
from hwinfo.ledger.prices import Prices
from hwinfo.ledger.prometheus import LedgerError, Prometheus, RuleGroup, Sample, together
from hwinfo.ledger.units import duration_text, hours, utc

BY = ("user", "host", "model", "job", "pod", "container")
_LABEL = {"user": "user", "host": "instance", "model": "model", "job": "slurm_job",
          "pod": "pod_uid", "container": "container_id"}
ATTRIBUTED_BY = ("job", "pod", "container")
JOULES_PER_KWH = 3.6e6
# No measure the ledger asks for comes near this: GPU-seconds of a thousand GPUs over ten
# years are 3e11, their energy 1e15 J, a GPU's memory 1e12 bytes. A larger figure, or a
# negative one, is not from the ledger's rules, and sums of it would overflow.
MAX_FIGURE = 1e16
# The most series usage's answers may hold together. Before a range's parts went alone,
# its three answers of at most 1,000,000 JSON values each held about 300,000. The parts go
# to the engine a few at a time, each answer within urlfetch's limits: without a bound on
# all of them, a hostile server could fill memory 18 answers over.
MAX_SERIES = 500_000
QUERIES_AT_ONCE = 4


class WindowError(LedgerError):
    """The range asked for is one the rules cannot answer (a usage error: exit 2)."""


@dataclass
class Usage:
    """One row: GPU-seconds are seconds of one whole GPU (a 3g.40gb held an hour is 3/7 h)."""

    key: str  # the user, host or model
    held_gpu_seconds: float = 0.0
    busy_gpu_seconds: float = 0.0
    idle_held_gpu_seconds: float = 0.0
    unknown_gpu_seconds: float = 0.0  # held where no activity signal exists
    accounted_gpu_seconds: float = 0.0  # processes that began and ended between two samples
    device_judged_gpu_seconds: float = 0.0  # busy/idle judged by the device, not the user
    unmetered_gpu_seconds: float = 0.0  # held on GPUs split by process count (no memory figure)
    # GPU time no one could see (host down, data stale), charged to no one; None in rows of
    # users, whose it cannot be.
    unseen_gpu_seconds: float | None = 0.0
    utilization_gpu_seconds: float = 0.0  # held x activity: the numerator of the mean
    peak_memory_bytes: float | None = None
    energy_joules: float = 0.0
    cost: float | None = None
    unpriced_models: set[str] = field(default_factory=set)
    # --by job|user (usage_efficiency.py): its jobs' CPU-seconds used over allotted, and why
    # its GPUs are (not) drawn (verdict.py); None: not asked, or not recorded.
    cpu_efficiency: float | None = None
    verdict: str | None = None

    @property
    def mean_utilization_ratio(self) -> float | None:
        """Mean activity while held, over the held time that has an activity signal."""
        known = self.held_gpu_seconds - self.unknown_gpu_seconds
        return None if known <= 0 else min(1.0, self.utilization_gpu_seconds / known)


@dataclass
class Ledger:
    since: float
    until: float
    by: str
    interval_seconds: float  # of the recording rules
    covered_seconds: float | None  # evaluations in the range x the interval; None: not known
    rows: list[Usage]
    total: Usage
    advice: list[Advice] | None = None
    notes: list[str] = field(default_factory=list)


def ledger_group(groups: Iterable[RuleGroup], url: str,
                 record: str = queries.HELD_RECORD) -> RuleGroup:
    """The rule group that records `record` (the ledger's, or its attribution group's), or a
    LedgerError that says what to load."""
    for group in groups:
        if record in group.records:
            return group
    raise LedgerError(f"{url} has not loaded the ledger's recording rules "
                      f"(no {record}): add {queries.LEDGER_RULES_FILE} to its rule_files")


def window(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def _plan(prometheus: Prometheus, groups: list[RuleGroup], since: float, until: float,
          interval: float, by: str) -> rollup.Plan:
    """Whole hours from the hourly roll-ups where the engine records every one of them (and
    none failed its last evaluation), else minutes."""
    minutes = rollup.minutes_only(since, until)
    needed = queries.rollups(_LABEL[by])
    count = queries.EVALUATIONS_RECORD + queries.rollup_suffix(_LABEL[by])
    hourly = next((g for g in groups if count in g.records), None)
    if (hourly is None or not needed <= hourly.records or needed & hourly.failing
            or until - since < hourly.interval_seconds + interval):
        return minutes
    times = prometheus.sample_times(count + minutes.whole, until)
    return rollup.plan(times, since, until, hourly.interval_seconds, interval)


def _rolled_gpus(prometheus: Prometheus, plan: rollup.Plan) -> list[dict[str, str]]:
    """The series of each GPU in the roll-ups the plan reads (a little more: the engine's
    grain), from the engine's index."""
    rolled = [part for part in plan.parts if part.rolled]
    if not rolled:
        return []
    return prometheus.series([queries.GPUS_ROLLUP], rolled[0].first, rolled[-1].last)


def _models(labelsets: Iterable[dict[str, str]]) -> dict[tuple[str, ...], str]:
    """Each GPU's model; of a GPU renamed in the range (a driver upgrade that adds
    "NVIDIA "), one of its names, the same in every run."""
    models: dict[tuple[str, ...], str] = {}
    for labels in labelsets:
        key = _gpu_key(labels)
        models[key] = max(models.get(key, ""), labels.get("model", ""))
    return models


def _ask(prometheus: Prometheus, by: str, plan: rollup.Plan, until: float
         ) -> tuple[list[Sample], set[int]]:
    """The measures of `usage`, and the runs of roll-ups that do not hold what the minute
    records of their hours hold now (late data, overlapping roll-ups)."""
    label = _LABEL[by]
    asked = (queries.attributed_usage(label, plan) if by in ATTRIBUTED_BY
             else queries.usage(label, plan))
    left = [MAX_SERIES]
    lock = threading.Lock()

    def ask(expr: str) -> list[Sample]:
        part = plausible(prometheus.query(expr, until), prometheus.url)
        with lock:  # what all the parts hold, as each comes: memory stays bounded
            left[0] -= len(part)
            if left[0] < 0:
                raise LedgerError(f"{prometheus.url}: the answers hold more than {MAX_SERIES:,} "
                                  "series, more than any usage figure needs")
        return part

    samples = plausible(merged(together([functools.partial(ask, expr) for expr in asked],
                                        at_once=QUERIES_AT_ONCE)), prometheus.url)
    # A run whose hours hold no minute evaluation any more has no check answer: trusted.
    late = {int(number) for s in samples
            if (number := s.labels.get("measure", "").removeprefix("check")).isdecimal()
            and s.value >= 0.5}
    return [s for s in samples if not s.labels.get("measure", "").startswith("check")], late


def merged(parts: Iterable[list[Sample]]) -> list[Sample]:
    """The measures of a plan's parts, each asked alone, added up: summed, peak memory the
    most of any part, and a GPU seen in two parts once."""
    totals: dict[tuple[tuple[str, str], ...], Sample] = {}
    for part in parts:
        for s in part:
            key = tuple(sorted(s.labels.items()))
            before = totals.get(key)
            measure = s.labels.get("measure")
            if before is None:
                totals[key] = s
            elif measure == "peak_memory":
                totals[key] = max(before, s, key=lambda sample: sample.value)
            elif measure != "gpus":
                totals[key] = Sample(s.labels, before.value + s.value)
    return list(totals.values())


def usage(prometheus: Prometheus, since: float, until: float, by: str,
          prices: Prices | None = None, advise: bool = False) -> Ledger:
    groups = prometheus.rule_groups()
    group = ledger_group(groups, prometheus.url, queries.ATTRIBUTED_HELD_RECORD
                         if by in ATTRIBUTED_BY else queries.HELD_RECORD)
    interval = group.interval_seconds
    if until - since < interval:
        raise WindowError(f"the range ({duration_text(until - since)}) is shorter than the "
                          f"ledger rules' interval ({duration_text(interval)}): no figure can "
                          "be told for it")
    if since <= 0 or since >= time.time():
        raise WindowError("the range starts " + ("before 1970" if since <= 0 else "after now")
                          + ": nothing was recorded in it")
    span = window(until - since)
    plan = _plan(prometheus, groups, since, until, interval, by)
    (samples, late), rolled = together([lambda: _ask(prometheus, by, plan, until),
                                        lambda: _rolled_gpus(prometheus, plan)])
    if late:  # those hours again, from minute records; the other runs' checks still hold
        samples, _ = _ask(prometheus, by, plan.in_minutes(late), until)
    gpus = _models([*rolled, *(s.labels for s in samples if s.labels.get("measure") == "gpus")])
    if not gpus:
        raise LedgerError(f"{prometheus.url} has no hwinfo series between {utc(since)} and "
                          f"{utc(until)}: is it scraping hwinfo serve?")
    # The series of the count that holds the most evaluations (one, unless relabelled apart).
    evaluations = max((s.value for s in samples if s.labels.get("measure") == "evaluations"),
                      default=0.0)
    held = any(s.labels.get("measure") == "held" for s in samples)
    if evaluations < 1 and not held:
        raise WindowError("no evaluation of the ledger's rules falls in the range (before they "
                          "were loaded, or while Prometheus was down): no figure can be told")
    unseen = [s for s in samples if s.labels.get("measure") == "unseen"]
    rows = _rows([s for s in samples
                  if s.labels.get("measure") not in ("unseen", "evaluations", "gpus")],
                 _LABEL[by], interval, prices, gpus)
    if by in ("host", "model"):
        _add_unseen(rows, unseen, _LABEL[by], interval)
    total = _total(rows, prices)
    total.unseen_gpu_seconds = sum(s.value for s in unseen) * interval
    # Held shares but no count: recorded by rules older than the count; coverage unknown.
    covered = evaluations * interval if evaluations >= 1 else None
    if covered is not None and past_range(covered, until - since, interval):
        raise LedgerError(f"{prometheus.url}: the ledger's rules were evaluated for "
                          f"{duration_text(covered)} of a {duration_text(until - since)} range: "
                          "rules loaded twice, or overlapping roll-ups; no figure can be trusted")
    possible(total.held_gpu_seconds - total.accounted_gpu_seconds,
             total.busy_gpu_seconds + total.idle_held_gpu_seconds + total.unknown_gpu_seconds,
             len(gpus), covered if covered is not None else until - since, interval,
             prometheus.url)
    ledger = Ledger(since, until, by, interval, covered, rows, total)
    _notes(ledger, unseen, prices, time.time())
    if advise:
        asked = plausible(prometheus.query(queries.advice(span), until), prometheus.url)
        ledger.advice = advice_for(asked, interval, idle_threshold(asked, prometheus.url),
                                   ledger.notes)
    return ledger


def _add_unseen(rows: list[Usage], unseen: list[Sample], label: str, interval: float) -> None:
    """Unseen time in the rows of hosts or models (a row of its own where nothing was held)."""
    by_key = {row.key: row for row in rows}
    for s in unseen:
        key = s.labels.get(label, "")
        if key not in by_key:
            by_key[key] = Usage(key)
            rows.append(by_key[key])
        by_key[key].unseen_gpu_seconds = (by_key[key].unseen_gpu_seconds or 0.0) + s.value * interval


def _notes(ledger: Ledger, unseen: list[Sample], prices: Prices | None, now: float) -> None:
    notes, total = ledger.notes, ledger.total
    span = min(ledger.until, now) - ledger.since  # the future is not time the rules missed
    if ledger.until - now > ledger.interval_seconds:
        notes.append(f"the range ends {duration_text(ledger.until - now)} from now: what is "
                     "still to come is in no figure")
    if not any(row.held_gpu_seconds for row in ledger.rows):
        notes.append(f"no {ledger.by} held a GPU in this range" if ledger.by in ATTRIBUTED_BY
                     else "no GPU was held in this range")
    if ledger.covered_seconds is None:
        notes.append("recorded by ledger rules that did not count their evaluations (before "
                     "hwinfo-ledger.yml was updated): time they did not cover cannot be told")
    elif span - ledger.covered_seconds > 1.5 * ledger.interval_seconds:
        notes.append(f"the rules evaluated {duration_text(ledger.covered_seconds)} of the "
                     f"range's {duration_text(span)} (not loaded yet, Prometheus down, or its "
                     "newest records not written yet): the rest is in no figure")
    elif abs(ledger.covered_seconds - span) > max(0.5 * ledger.interval_seconds, 0.1 * span):
        # Within an evaluation at each edge, as always, but that is much of a short range.
        notes.append(f"the figures stand for the rules' {duration_text(ledger.covered_seconds)} "
                     f"of evaluations in the range (each counts its whole "
                     f"{duration_text(ledger.interval_seconds)}), not the range's "
                     f"{duration_text(span)}")
    hosts: dict[str, float] = defaultdict(float)
    for s in unseen:
        hosts[s.labels.get("instance", "")] += s.value * ledger.interval_seconds
    if hosts:
        notes.append("not seen (down or stale), charged to no one: " + ", ".join(
            f"{host} {hours(seconds)} GPU-hours" for host, seconds in sorted(hosts.items())))
    unmetered = [row.key for row in ledger.rows if row.unmetered_gpu_seconds > 0]
    if unmetered:
        notes.append(f"NVML reported no memory for some processes on GPUs held by {', '.join(unmetered)}: "
                     "those GPUs were split among their holders by process count")
    if total.device_judged_gpu_seconds > 0:
        notes.append("busy or idle judged by the device's activity, not the holder's own "
                     f"(no per-process samples): {hours(total.device_judged_gpu_seconds)} of "
                     f"{hours(total.held_gpu_seconds)} GPU-hours held")
    if prices is not None:
        for model in sorted(total.unpriced_models):
            notes.append(f"no price for {model}: its GPU-hours are left out of the cost")


def past_range(seconds: float, span: float, interval: float) -> bool:
    """Whether `seconds` of evaluations (or of a GPU held at them) are more than a range of
    `span` s holds: one evaluation at each edge, at most."""
    return seconds > span + 1.5 * interval


def possible(held: float, parts: float, gpus: int, covered: float, interval: float,
             url: str) -> None:
    """A LedgerError where `held` GPU-seconds (less NVML's accounted ones) and their busy,
    idle and unknown `parts` are more than `gpus` GPUs seen for `covered` s can hold: at most
    one holder's share of each GPU at each evaluation, and parts of held. Two evaluations a
    GPU are allowed over: one evaluation at each edge of the range."""
    slack = 2 * interval * max(gpus, 1)
    if held > gpus * (covered + interval) + slack:
        raise LedgerError(f"{url}: {hours(held)} GPU-hours held in {duration_text(covered)} of "
                          f"{gpus} GPUs cannot be: no figure can be trusted")
    if parts > held + slack:
        raise LedgerError(f"{url}: busy, idle and unknown ({hours(parts)} GPU-hours) are more "
                          f"than held ({hours(held)}): no figure can be trusted")


def plausible(samples: list[Sample], url: str) -> list[Sample]:
    """The samples, or a LedgerError naming the first figure no ledger rule can make."""
    for sample in samples:
        if not 0 <= sample.value <= MAX_FIGURE:
            what = sample.labels.get("measure") or sample.labels.get("__name__") or "a series"
            raise LedgerError(f"{url}: {what} of {sample.value:g} cannot be a ledger figure "
                              "(negative or absurd)")
    return samples


def _gpu_key(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(name, "") for name in ("job", "instance", "gpu", "uuid"))


def _rows(samples: list[Sample], label: str, interval: float, prices: Prices | None,
          model_of: dict[tuple[str, ...], str]) -> list[Usage]:
    """The rows by `label`; `model_of` each GPU's model, for figures read per GPU."""
    rows: dict[str, Usage] = {}
    held_by_model: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for sample in samples:
        measure = sample.labels.get("measure", "")
        labels = sample.labels
        if "model" not in labels:  # a raw series' figure, per GPU: its model from the map
            labels = {**labels, "model": model_of.get(_gpu_key(labels), "")}
        key = labels.get(label, "")
        row = rows.setdefault(key, Usage(key, unseen_gpu_seconds=None if label == "user" else 0.0))
        value = sample.value
        if measure == "peak_memory":
            row.peak_memory_bytes = max(row.peak_memory_bytes or 0.0, value)
            continue
        gpu_seconds = value if measure.startswith("accounted") else value * interval
        _add(row, measure, gpu_seconds)
        if measure in ("held", "accounted"):
            held_by_model[key][labels.get("model", "")] += gpu_seconds
    if prices is not None:
        for key, row in rows.items():
            _price(row, held_by_model[key], prices)
    # A user whose every figure is 0 (accounting counters served at 0) is no row.
    kept = [row for row in rows.values()
            if row.held_gpu_seconds or row.energy_joules or row.peak_memory_bytes]
    return sorted(kept, key=lambda r: (-r.held_gpu_seconds, r.key))


_FIELDS = {"held": "held_gpu_seconds", "busy": "busy_gpu_seconds",
           "idle": "idle_held_gpu_seconds", "unknown": "unknown_gpu_seconds",
           "utilization": "utilization_gpu_seconds", "energy": "energy_joules",
           "accounted_utilization": "utilization_gpu_seconds",
           "device_judged": "device_judged_gpu_seconds", "unmetered": "unmetered_gpu_seconds"}


def _add(row: Usage, measure: str, value: float) -> None:
    if measure == "accounted":  # held, and apart, so that busy + idle + unknown + it = held
        row.accounted_gpu_seconds += value
        row.held_gpu_seconds += value
    elif measure in _FIELDS:
        setattr(row, _FIELDS[measure], getattr(row, _FIELDS[measure]) + value)


def _price(row: Usage, held_by_model: dict[str, float], prices: Prices) -> None:
    cost = row.energy_joules / JOULES_PER_KWH * (prices.kwh or 0.0)
    for model, gpu_seconds in held_by_model.items():
        price = prices.per_gpu_hour(model)
        if price is None:
            row.unpriced_models.add(model)
        else:
            cost += gpu_seconds / 3600 * price
    row.cost = cost


def _total(rows: list[Usage], prices: Prices | None) -> Usage:
    total = Usage("total")
    for row in rows:
        for name in ("held_gpu_seconds", "busy_gpu_seconds", "idle_held_gpu_seconds",
                     "unknown_gpu_seconds", "accounted_gpu_seconds", "utilization_gpu_seconds",
                     "device_judged_gpu_seconds", "unmetered_gpu_seconds", "energy_joules"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
        if row.peak_memory_bytes is not None:
            total.peak_memory_bytes = max(total.peak_memory_bytes or 0.0, row.peak_memory_bytes)
        total.unpriced_models |= row.unpriced_models
    if prices is not None:
        total.cost = sum(row.cost or 0.0 for row in rows)
    return total
