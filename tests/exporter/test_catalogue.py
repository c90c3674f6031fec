"""The metric names are an interface: these rules keep them Prometheus-shaped."""

from __future__ import annotations

import re
from pathlib import Path

from hwinfo.exporter.catalogue import all_metrics, markdown_table

README = Path(__file__).resolve().parents[2] / "README.md"
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
    text = README.read_text()
    assert markdown_table() in text, (
        "README's metric table differs from the code: regenerate it with "
        "`python -m hwinfo.exporter.catalogue` and paste it in"
    )
