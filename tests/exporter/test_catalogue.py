"""The metric names are an interface: these rules keep them Prometheus-shaped."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from fixtures.machines import shared_tree

from hwinfo.exporter.catalogue import all_metrics, markdown_table
from tests.exporter.serving import serving

# The host whose CPU, memory and NUMA series the documented counts include.
COUNTED_ON = "x86-2s-smt"

DOCS = Path(__file__).resolve().parents[2] / "docs"
METRICS_PAGE = DOCS / "metrics.md"
# Units we never export: the value is converted to the base unit instead.
NON_BASE = ("_mib", "_mb", "_kb", "_kib", "_mhz", "_percent", "_percentage", "_milliwatts",
            "_millijoules", "_ms", "_kelvin", "_fahrenheit")


def test_names_are_unique_prefixed_and_snake_case() -> None:
    names = [m.full_name for m in all_metrics()]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"hwinfo_[a-z0-9_]+", n) for n in names)


def test_base_units_only() -> None:
    for metric in all_metrics():
        assert not any(metric.name.removesuffix("_total").endswith(u) for u in NON_BASE), metric.name


def test_counters_end_in_total_and_only_counters_do() -> None:
    for metric in all_metrics():
        assert metric.name.endswith("_total") == (metric.type == "counter"), metric.name


def test_info_metrics_end_in_info() -> None:
    for metric in all_metrics():
        assert metric.name.endswith("_info") == (metric.type == "info"), metric.name


def test_readme_catalogue_is_the_code_s() -> None:
    text = METRICS_PAGE.read_text()
    assert markdown_table() in text, (
        "docs/metrics.md's metric table differs from the code: regenerate it with "
        "`python -m hwinfo.exporter.catalogue` and paste it in"
    )


def _documented_series() -> dict[str, tuple[int, int]]:
    """The cardinality table of docs/metrics.md: scenario -> (series, series with --process-metrics)."""
    section = METRICS_PAGE.read_text().split("## Cardinality", 1)[1]
    rows = re.findall(r"^\| `([a-z0-9-]+)`[^|]*\| (\d+) \| (\d+) \|$", section, re.MULTILINE)
    return {name: (int(plain), int(per_process)) for name, plain, per_process in rows}


def _served_series(*args: str) -> int:
    """Sample lines a real daemon serves: the series one scrape adds to Prometheus. The host
    is a fixture tree, so that the count does not depend on this machine's CPU flags."""
    with serving(*args, "--root", str(shared_tree(COUNTED_ON))) as url, urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def test_readme_series_counts_are_what_the_daemon_serves() -> None:
    documented = _documented_series()
    assert set(documented) == {"dgx-h100", "dgx-a100-mig"}, "the cardinality table of docs/metrics.md moved"
    served = {name: (_served_series("--simulate", name),
                     _served_series("--simulate", name, "--process-metrics"))
              for name in documented}
    assert served == documented, "update the cardinality table of docs/metrics.md to these figures"
    # bench/exporter.py scrapes dgx-a100-mig with --process-metrics: its row names that count.
    benchmarks = (DOCS / "benchmarks.md").read_text()
    assert f"with per-process series: {served['dgx-a100-mig'][1]} series" in benchmarks
