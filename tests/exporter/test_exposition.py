"""The exposition prometheus-client renders from our declarations, read back by its parsers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text

from hwinfo import sim
from hwinfo.collect.sources import open_collector
from hwinfo.exporter.exposition import Selection, families, render
from hwinfo.exporter.status import DaemonStatus
from hwinfo.model.snapshot import Snapshot

AWKWARD = ['o"brien', "zoë", "line\nbreak", "back\\slash", "ユーザー"]
LATIN1 = "caf\udce9"  # "café" in Latin-1, as psutil hands over a byte that is not UTF-8


def _snapshot(source: str | Path) -> Snapshot:
    collector = open_collector("/", sim.install(source))
    try:
        return collector.collect()
    finally:
        collector.close()
        sim.uninstall()


def _awkward_scenario(tmp_path: Path) -> Path:
    doc = json.loads((Path(sim.__file__).parent / "scenarios" / "cloud-t4.json").read_text())
    doc["gpus"][0]["processes"] = [
        {"pid": 5000 + n, "used_memory_mib": 100, "user": user, "command": f"run {user} 'x'"}
        for n, user in enumerate([*AWKWARD, LATIN1])
    ]
    path = tmp_path / "awkward.json"
    path.write_text(json.dumps(doc))
    return path


def _parsed(parse: object, text: str) -> dict[str, tuple[str, set[str], set[frozenset[str]]]]:
    """family -> (type, sample names, label-name sets) as prometheus-client's parser reads it."""
    found: dict[str, tuple[str, set[str], set[frozenset[str]]]] = {}
    for family in parse(text):  # type: ignore[operator]
        found[family.name] = (family.type, {s.name for s in family.samples},
                              {frozenset(s.labels) for s in family.samples})
    return found


@pytest.mark.parametrize("source", ["dgx-a100-mig", "faults-demo", "vgpu-guest", "no-driver",
                                    "awkward"])
def test_every_series_is_named_and_labelled_as_declared(source: str, tmp_path: Path) -> None:
    """Dashboards, alerts and the ledger's rules read these names: prometheus-client's own
    suffixes (`_total`, `_info`, `_created`) must not change one."""
    snapshot = _snapshot(_awkward_scenario(tmp_path) if source == "awkward" else source)
    status = DaemonStatus("0.1.0", time.time())
    selection = Selection(process_metrics=True)
    read = families(snapshot, status, selection)
    rendered = render(snapshot, status, selection)

    def declared(suffixes: dict[str, str], types: dict[str, str]) -> dict[str, object]:
        return {
            m.full_name.removesuffix(suffixes.get(m.type, "")): (
                types.get(m.type, m.type),
                {m.full_name} if samples else set(),
                {frozenset(m.labels)} if samples else set(),
            )
            for m, samples in read
        }

    # Both parsers name a counter's family without `_total`; the text format has no info
    # type (a gauge of value 1 there), OpenMetrics names its family without `_info`.
    assert _parsed(parse_text, rendered.text.decode()) == declared(
        {"counter": "_total"}, {"info": "gauge"})
    assert _parsed(parse_openmetrics, rendered.openmetrics.decode()) == declared(
        {"counter": "_total", "info": "_info"}, {})
    assert rendered.openmetrics.endswith(b"# EOF\n")
    assert sum(len(samples) for _, samples in read) == sum(
        1 for line in rendered.text.decode().splitlines() if not line.startswith("#"))


def test_awkward_names_survive_the_round_trip(tmp_path: Path) -> None:
    snapshot = _snapshot(_awkward_scenario(tmp_path))
    ours = render(snapshot, DaemonStatus("0.1.0", time.time()), Selection(process_metrics=True))
    users = {
        sample.labels["user"]
        for family in parse_openmetrics(ours.openmetrics.decode())
        for sample in family.samples if "user" in sample.labels
    }
    assert set(AWKWARD) <= users
    assert "caf\\xe9" in users  # UTF-8 has no lone surrogate: the byte is written out


def test_groups_can_be_switched_off() -> None:
    snapshot = _snapshot("cloud-t4")
    rendered = render(snapshot, DaemonStatus("0.1.0", time.time()),
                      Selection(disabled_groups=frozenset({"host", "users"})))
    assert b"hwinfo_gpu_temperature_celsius" in rendered.text
    assert b"hwinfo_memory_total_bytes" not in rendered.text
    assert b"hwinfo_gpu_user_memory_used_bytes" not in rendered.text
