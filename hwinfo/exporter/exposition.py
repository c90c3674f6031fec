"""Snapshot + daemon status -> the bytes a scrape serves, rendered once per sample.

A scrape may take 5 ms; prometheus-client's generic rendering of this catalogue takes
~20 ms here (most of it escaping label names it cannot know are safe), and runs on the
sampler thread, where every millisecond holds the GIL against scrapes. So each format is
written here directly from our declarations, once per sample, and gzipped once; a test
checks the result against prometheus-client's own rendering of the same samples.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hwinfo.escape import unicode
from hwinfo.exporter.catalogue import SELF_METRICS, SNAPSHOT_GROUPS
from hwinfo.exporter.metric import Metric, Sample
from hwinfo.exporter.status import DaemonStatus
from hwinfo.model.snapshot import Snapshot

__all__ = ["OPENMETRICS", "TEXT_CONTENT_TYPE", "Rendered", "Selection", "render"]

# The formats written here, as a scrape's Content-Type names them. Written out rather than
# taken from prometheus-client: importing it loads its HTTP servers too (an HTTP server,
# WSGI, email parsing: 37 ms and 2.7 MiB of a daemon that serves with its own).
TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def go_float(value: float) -> str:
    """A sample value as Prometheus's clients write it: +Inf, -Inf, NaN, and exponent form for
    positive numbers of seven integer digits or more, as Go writes them (1e+06, where Python
    writes 1000000.0). A test holds this to prometheus-client's own rendering."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    whole, _, fraction = text.partition(".")
    if value <= 0 or "e" in text or len(whole) < 7:
        return text
    digits = (whole + fraction).rstrip("0")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e+{len(whole) - 1:02d}"


def _escape(value: str) -> str:
    """Label values and OpenMetrics help: valid Unicode (a process named in Latin-1 is not:
    escape.unicode), then backslash, newline and double quote escaped."""
    return unicode(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_text_help(value: str) -> str:
    """Help in the 0.0.4 text format: backslash and newline only."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _family(metric: Metric, samples: Iterable[Sample], openmetrics: bool) -> Iterator[str]:
    """The lines of one metric family in one format."""
    name = metric.full_name
    kind = metric.type
    if kind == "info":
        # OpenMetrics has an info type named without the suffix; the text format calls it a gauge.
        family, kind = (name.removesuffix("_info"), "info") if openmetrics else (name, "gauge")
    elif kind == "counter" and openmetrics:
        family = name.removesuffix("_total")
    else:
        family = name
    help_text = _escape(metric.help) if openmetrics else _escape_text_help(metric.help)
    yield f"# HELP {family} {help_text}"
    yield f"# TYPE {family} {kind}"
    prefixes = [f'{label}="' for label in metric.labels]
    for values, value in samples:
        if prefixes:
            labels = ",".join(p + _escape(v) + '"' for p, v in zip(prefixes, values))
            yield f"{name}{{{labels}}} {go_float(value)}"
        else:
            yield f"{name} {go_float(value)}"


@dataclass(frozen=True)
class Selection:
    """Which metrics to export: groups switched off, and whether optional series are on."""

    disabled_groups: frozenset[str] = frozenset()
    process_metrics: bool = False

    def metrics(self) -> Iterator[Metric]:
        for name, group in SNAPSHOT_GROUPS.items():
            if name in self.disabled_groups:
                continue
            for metric in group:
                if self.process_metrics or not metric.optional:
                    yield metric


@dataclass(frozen=True)
class Rendered:
    """One sample's exposition in both formats, plain and gzipped."""

    text: bytes
    text_gzip: bytes
    openmetrics: bytes
    openmetrics_gzip: bytes


def families(
    snapshot: Snapshot | None, status: DaemonStatus, selection: Selection
) -> list[tuple[Metric, list[Sample]]]:
    """Every selected metric with its samples for this snapshot (read once, for both formats)."""
    chosen = [(m, m.samples(snapshot)) for m in selection.metrics()] if snapshot else []
    return chosen + [(m, m.samples(status)) for m in SELF_METRICS]


def render(snapshot: Snapshot | None, status: DaemonStatus, selection: Selection) -> Rendered:
    read = families(snapshot, status, selection)
    text = "\n".join(line for m, s in read for line in _family(m, s, False)) + "\n"
    openmetrics = "\n".join(line for m, s in read for line in _family(m, s, True)) + "\n# EOF\n"
    text_bytes, om_bytes = text.encode(), openmetrics.encode()
    # Level 1: scrapes are frequent and the text compresses ~10x even so.
    return Rendered(text_bytes, gzip.compress(text_bytes, 1), om_bytes,
                    gzip.compress(om_bytes, 1))
