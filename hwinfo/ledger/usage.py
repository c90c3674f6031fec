"""`hwinfo usage`: each user's (host's, model's) GPU time over a range, busy or idle, and its cost."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from hwinfo.ledger import queries
from hwinfo.ledger.prices import Prices
from hwinfo.ledger.prometheus import LedgerError, Prometheus, RuleGroup, Sample

BY = ("user", "host", "model")
_LABEL = {"user": "user", "host": "instance", "model": "model"}
LEDGER_RULES_FILE = "prometheus/hwinfo-ledger.yml"
JOULES_PER_KWH = 3.6e6
# An A100 or H100 offers 6 to 19 MIG profiles. More is not a GPU's answer, and each user's
# advice compares every profile of the model: a hostile answer of 12,000 profiles and
# 12,000 users took 48 s.
MAX_PROFILES = 64


@dataclass
class Usage:
    """One row: GPU-seconds are seconds of one whole GPU (a 3g.40gb held an hour is 3/7 h)."""

    key: str  # the user, host or model
    held_gpu_seconds: float = 0.0
    busy_gpu_seconds: float = 0.0
    idle_held_gpu_seconds: float = 0.0
    unknown_gpu_seconds: float = 0.0  # held where no activity signal exists
    accounted_gpu_seconds: float = 0.0  # processes that began and ended between two samples
    utilization_gpu_seconds: float = 0.0  # held x activity: the numerator of the mean
    peak_memory_bytes: float | None = None
    energy_joules: float = 0.0
    cost: float | None = None
    unpriced_models: set[str] = field(default_factory=set)

    @property
    def mean_utilization_ratio(self) -> float | None:
        """Mean activity while held, over the held time that has an activity signal."""
        known = self.held_gpu_seconds - self.unknown_gpu_seconds
        return None if known <= 0 else min(1.0, self.utilization_gpu_seconds / known)


@dataclass(frozen=True)
class Advice:
    user: str
    model: str
    held_gpu_seconds: float  # on whole GPUs of this model
    mean_utilization_ratio: float | None
    peak_memory_bytes: float | None
    profile: str | None  # the smallest MIG profile that would do; None: none would
    freed_gpu_seconds: float  # what moving to it would give back


@dataclass
class Ledger:
    since: float
    until: float
    by: str
    interval_seconds: float  # of the recording rules
    rows: list[Usage]
    total: Usage
    advice: list[Advice] | None = None
    notes: list[str] = field(default_factory=list)


def ledger_group(groups: Iterable[RuleGroup], url: str) -> RuleGroup:
    """The rule group that records the ledger, or a LedgerError that says what to load."""
    for group in groups:
        if queries.HELD_RECORD in group.records:
            return group
    raise LedgerError(f"{url} has not loaded the ledger's recording rules "
                      f"(no {queries.HELD_RECORD}): add {LEDGER_RULES_FILE} to its rule_files")


def window(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def usage(prometheus: Prometheus, since: float, until: float, by: str,
          prices: Prices | None = None, advise: bool = False) -> Ledger:
    group = ledger_group(prometheus.rule_groups(), prometheus.url)
    span = window(until - since)
    samples = [s for part in prometheus.queries(queries.usage(_LABEL[by], span), until)
               for s in part]
    if not any(s.labels.get("measure") == "gpus" for s in samples):
        raise LedgerError(f"{prometheus.url} has no hwinfo series between the two times: "
                          "is it scraping hwinfo serve?")
    rows = _rows(samples, _LABEL[by], group.interval_seconds, prices)
    total = _total(rows, prices)
    ledger = Ledger(since, until, by, group.interval_seconds, rows, total)
    if not rows:
        ledger.notes.append("no GPU was held in this range")
    if prices is not None:
        for model in sorted(total.unpriced_models):
            ledger.notes.append(f"no price for {model}: its GPU-hours are left out of the cost")
    if advise:
        ledger.advice = _advice(prometheus.query(queries.advice(span), until),
                                group.interval_seconds, ledger.notes)
    return ledger


def _gpu_key(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(name, "") for name in ("job", "instance", "gpu", "uuid"))


def _rows(samples: list[Sample], label: str, interval: float, prices: Prices | None) -> list[Usage]:
    rows: dict[str, Usage] = {}
    held_by_model: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    model_of = {_gpu_key(s.labels): s.labels.get("model", "") for s in samples
                if s.labels.get("measure") == "gpus"}
    for sample in samples:
        measure = sample.labels.get("measure", "")
        if measure == "gpus":
            continue
        labels = sample.labels
        if "model" not in labels:  # a raw series' figure, per GPU: its model from the map
            labels = {**labels, "model": model_of.get(_gpu_key(labels), "")}
        key = labels.get(label, "")
        row = rows.setdefault(key, Usage(key))
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
    return sorted(rows.values(), key=lambda r: (-r.held_gpu_seconds, r.key))


_FIELDS = {"held": "held_gpu_seconds", "busy": "busy_gpu_seconds",
           "idle": "idle_held_gpu_seconds", "unknown": "unknown_gpu_seconds",
           "utilization": "utilization_gpu_seconds", "energy": "energy_joules",
           "accounted_utilization": "utilization_gpu_seconds"}


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
                     "energy_joules"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
        if row.peak_memory_bytes is not None:
            total.peak_memory_bytes = max(total.peak_memory_bytes or 0.0, row.peak_memory_bytes)
        total.unpriced_models |= row.unpriced_models
    if prices is not None:
        total.cost = sum(row.cost or 0.0 for row in rows)
    return total


def _advice(samples: list[Sample], interval: float, notes: list[str]) -> list[Advice]:
    """For each user on whole GPUs of a model: the smallest MIG profile of that model whose
    memory holds their peak and whose share of the GPU covers their mean activity."""
    held: dict[tuple[str, str], float] = defaultdict(float)
    busy: dict[tuple[str, str], float] = defaultdict(float)
    peak: dict[tuple[str, str], float] = {}
    profiles: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for s in samples:
        measure, labels = s.labels.get("measure"), s.labels
        user_model = (labels.get("user", ""), labels.get("model", ""))
        if measure == "whole_held":
            held[user_model] += s.value * interval
        elif measure == "whole_utilization":
            busy[user_model] += s.value * interval
        elif measure == "whole_peak_memory":
            peak[user_model] = s.value
        elif measure in ("profile_memory", "profile_share"):
            profiles[labels.get("model", "")][labels.get("profile", "")][measure] = s.value
    advice = []
    noted: set[str] = set()  # models already named in a note
    for (user, model), seconds in sorted(held.items(), key=lambda kv: (-kv[1], kv[0])):
        if seconds <= 0:
            continue
        mean = min(1.0, busy[(user, model)] / seconds)
        memory = peak.get((user, model))
        offered = profiles.get(model) or {}
        if model not in noted and (not offered or len(offered) > MAX_PROFILES):
            noted.add(model)
            notes.append(f"no MIG profile data for {model}: no GPU of it exports its profiles"
                         if not offered else f"{model} has {len(offered):,} MIG profiles, more "
                         f"than any GPU: no advice for it")
        if len(offered) > MAX_PROFILES:
            offered = {}
        fit = None if memory is None else _smallest_fit(offered, memory, mean)
        freed = 0.0 if fit is None else seconds * (1 - fit[1])
        advice.append(Advice(user, model, seconds, mean, memory, fit and fit[0], freed))
    return advice


def _smallest_fit(profiles: dict[str, dict[str, float]], memory: float,
                  mean: float) -> tuple[str, float] | None:
    fits = [(shape["profile_share"], shape["profile_memory"], name)
            for name, shape in profiles.items()
            if {"profile_share", "profile_memory"} <= shape.keys()
            and shape["profile_memory"] >= memory and shape["profile_share"] >= mean
            and shape["profile_share"] < 1 and math.isfinite(shape["profile_share"])]
    if not fits:
        return None
    share, _, name = min(fits)
    return name, share
