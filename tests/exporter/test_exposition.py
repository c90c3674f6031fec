"""Our exposition against prometheus-client's rendering of the same samples, in both formats."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text
from prometheus_client.utils import floatToGoString

from hwinfo import sim
from hwinfo.collect.sources import open_collector
from hwinfo.exporter.exposition import Selection, families, go_float, render
from hwinfo.exporter.status import DaemonStatus
from hwinfo.model.snapshot import Snapshot

AWKWARD = ['o"brien', "zoë", "line\nbreak", "back\\slash", "ユーザー"]


def _snapshot(source: str | Path) -> Snapshot:
    collector = open_collector("/", str(source))
    try:
        return collector.collect()
    finally:
        collector.close()
        sim.uninstall()


def _awkward_scenario(tmp_path: Path) -> Path:
    doc = json.loads((Path(sim.__file__).parent / "scenarios" / "cloud-t4.json").read_text())
    doc["gpus"][0]["processes"] = [
        {"pid": 5000 + n, "used_memory_mib": 100, "user": user, "command": f"run {user} 'x'"}
        for n, user in enumerate(AWKWARD)
    ]
    path = tmp_path / "awkward.json"
    path.write_text(json.dumps(doc))
    return path


class _Reference:
    """The same samples as prometheus-client families (its own collector protocol)."""

    def __init__(self, read: list) -> None:
        self.read = read

    def collect(self) -> Iterator[object]:
        for metric, samples in self.read:
            labels = list(metric.labels)
            if metric.type == "info":
                fam = InfoMetricFamily(metric.full_name.removesuffix("_info"), metric.help,
                                       labels=labels)
                for values, _ in samples:
                    fam.add_metric(list(values), {})
            else:
                cls = CounterMetricFamily if metric.type == "counter" else GaugeMetricFamily
                fam = cls(metric.full_name.removesuffix("_total") if metric.type == "counter"
                          else metric.full_name, metric.help, labels=labels)
                for values, value in samples:
                    fam.add_metric(list(values), value)
            yield fam


def _parsed(parse: object, text: str) -> set[tuple[str, str, tuple, float]]:
    return {
        (family.name, family.type, tuple(sorted(sample.labels.items())), sample.value)
        for family in parse(text)  # type: ignore[operator]
        for sample in family.samples
    }


@pytest.mark.parametrize("source", ["dgx-a100-mig", "faults-demo", "vgpu-guest", "no-driver",
                                    "awkward"])
def test_same_samples_as_prometheus_client(source: str, tmp_path: Path) -> None:
    snapshot = _snapshot(_awkward_scenario(tmp_path) if source == "awkward" else source)
    status = DaemonStatus("0.1.0", time.time())
    selection = Selection(process_metrics=True)
    ours = render(snapshot, status, selection)
    reference = _Reference(families(snapshot, status, selection))
    assert _parsed(parse_text, ours.text.decode()) == _parsed(
        parse_text, generate_latest(reference).decode())  # type: ignore[arg-type]
    assert _parsed(parse_openmetrics, ours.openmetrics.decode()) == _parsed(
        parse_openmetrics, generate_openmetrics(reference).decode())  # type: ignore[arg-type]


def test_awkward_names_survive_the_round_trip(tmp_path: Path) -> None:
    snapshot = _snapshot(_awkward_scenario(tmp_path))
    ours = render(snapshot, DaemonStatus("0.1.0", time.time()), Selection(process_metrics=True))
    users = {
        sample.labels["user"]
        for family in parse_openmetrics(ours.openmetrics.decode())
        for sample in family.samples if "user" in sample.labels
    }
    assert set(AWKWARD) <= users


def test_groups_can_be_switched_off() -> None:
    snapshot = _snapshot("cloud-t4")
    rendered = render(snapshot, DaemonStatus("0.1.0", time.time()),
                      Selection(disabled_groups=frozenset({"host", "users"})))
    assert b"hwinfo_gpu_temperature_celsius" in rendered.text
    assert b"hwinfo_memory_total_bytes" not in rendered.text
    assert b"hwinfo_gpu_user_memory_used_bytes" not in rendered.text


@given(st.floats() | st.integers(-(1 << 64), 1 << 64).map(float)
       | st.sampled_from([1e6, 999999.0, 1234567.5, 1e15, 1e16, 8.589934592e10, 5e-324, -1e7]))
def test_sample_values_are_written_as_prometheus_client_writes_them(value: float) -> None:
    assert go_float(value) == floatToGoString(value)
