"""What a metric is: its interface (name, type, labels, meaning, JSON field) and how to read it.

Every exported metric is one `Metric` in a group module (metrics_host.py, metrics_gpu.py,
...). The exposition, the README's catalogue and the tests are all derived from these
declarations, so the documentation cannot drift from what is served.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from hwinfo.model.snapshot import Snapshot

PREFIX = "hwinfo_"
# What a bounded metric's folded labels say on the series that sums those past its limit.
OTHER = "(other)"
T = TypeVar("T")

# One sample: label values (in the metric's label order) and the value.
Sample = tuple[tuple[str, ...], float]
Reader = Callable[[Snapshot], Iterable[Sample]]


@dataclass(frozen=True)
class Metric:
    name: str  # without the hwinfo_ prefix
    type: str  # "gauge", "counter" or "info" (a gauge of value 1 whose labels are the facts)
    help: str
    labels: tuple[str, ...]
    json: str  # the report/JSON field it mirrors, as a path
    read: Reader
    # Off unless asked for (per-process series: PIDs churn, so cardinality grows).
    optional: bool = False
    # At most this many series a sample (a daemon serves one host): past it the smallest are
    # summed, per value of the other labels, into one series whose `folded` labels say OTHER.
    limit: int | None = None
    folded: tuple[str, ...] = ()
    # What "smallest" means: the samples of this reader (default: the metric's own). Metrics
    # that must fold the same label sets (a job's memory and its process count, which the
    # ledger joins) rank by one reader.
    rank: Reader | None = None

    def samples(self, source: Any) -> list[Sample]:
        """What a scrape serves of this metric: read(source), within its limit."""
        found = list(self.read(source))
        if self.limit is None or len(found) <= self.limit:
            return found
        ranking = found if self.rank is None else list(self.rank(source))
        kept = {values for values, _ in
                sorted(ranking, key=lambda sample: (-sample[1], sample[0]))[:self.limit]}
        folded = [label in self.folded for label in self.labels]
        rest: dict[tuple[str, ...], float] = {}
        for values, value in found:
            if values not in kept:
                key = tuple(OTHER if fold else v for fold, v in zip(folded, values))
                rest[key] = rest.get(key, 0.0) + value
        return sorted(s for s in found if s[0] in kept) + sorted(rest.items())

    @property
    def bound(self) -> str:
        """The limit in words, for the catalogue; empty for a metric without one."""
        if self.limit is None:
            return ""
        per = ", ".join(label for label in self.labels if label not in self.folded)
        return (f"At most {self.limit} series per host; past that the smallest are summed"
                f"{' per ' + per if per else ''} into one whose {', '.join(self.folded)} are "
                f"`{OTHER}`.")

    @property
    def full_name(self) -> str:
        return PREFIX + self.name

    @property
    def unit(self) -> str:
        """The base unit the name ends in, for the catalogue."""
        for unit in (
            "bytes_per_second",
            "bytes",
            "seconds",
            "hertz",
            "watts",
            "celsius",
            "joules",
            "ratio",
            "flops",
            "ops",
        ):
            if self.name.removesuffix("_total").endswith(unit):
                return unit
        return ""


def each(
    items: Iterable[T], labels: Callable[[T], tuple[str, ...]], value: Callable[[T], Any]
) -> Iterator[Sample]:
    """Samples for items whose value is known: an unknown value is absent, never 0 or NaN."""
    for item in items:
        v = value(item)
        if v is not None:
            yield labels(item), float(v)


def flag(value: bool | None) -> float | None:
    return None if value is None else float(value)
