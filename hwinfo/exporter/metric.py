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
