"""What an import infers rather than reads is marked wherever hwinfo shows it.

A dump without `nvidia-smi -L` and `mig -lgi` names no MIG profile, lists no MIG device
UUID and says nothing of placements: the import matches profiles by memory and SMs, derives
UUIDs and picks placements, and says so per GPU instance (`guessed`). The report marks them
(text, JSON), the exporter marks them on `hwinfo_mig_device_info` and leaves them out of the
series that cannot carry a mark. Third-party clients read the same values through NVML,
unmarked: NVML always answers a MIG device's name and UUID, so the simulator does too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pynvml
import pytest
from fixtures.simulated import simulated_snapshot
from fixtures.smi_dumps import dump_xml, mig_device

import hwinfo.sim
from hwinfo.exporter.metrics_mig import METRICS
from hwinfo.sim.importer import import_dump
from hwinfo.sim.scenario import parse_scenario
from hwinfo.sim.scenario_model import ScenarioError

# An A100-SXM4-80GB with a 3g.40gb (GI 2) and a 1g.10gb (GI 8), as `nvidia-smi -q -x` shows it.
DUMP = dump_xml(
    {"mig_mode/current_mig": "Enabled", "mig_mode/pending_mig": "Enabled"},
    mig_devices=[mig_device(2, 0, 42, 40192), mig_device(8, 0, 14, 9856, engines="0/0/0")],
)
INFERRED_GI = ["placement", "profile", "uuid"]


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "imported.json"
    path.write_text(json.dumps(import_dump(DUMP, "a100.xml")))
    return path


def test_the_import_says_per_gpu_instance_what_it_inferred(scenario: Path) -> None:
    data = json.loads(scenario.read_text())
    instances = data["gpus"][0]["mig"]["gpu_instances"]
    assert [(gi["profile"], gi["guessed"]) for gi in instances] == [
        ("3g.40gb", INFERRED_GI), ("1g.10gb", INFERRED_GI)]
    assert len(data["imported"]["guessed"]) == 4  # the lines for a person stay


def test_the_json_report_marks_each_inferred_field(scenario: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hwinfo", "report", "--simulate", str(scenario), "--format",
         "json"], capture_output=True, text=True, timeout=60, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("HWINFO")},
    )
    assert done.returncode == 0, done.stderr
    mig = json.loads(done.stdout)["gpu"]["gpus"][0]["mig"]
    assert [(d["profile"], d["guessed"]) for d in mig["devices"]] == [
        ("3g.40gb", ["profile", "uuid"]), ("1g.10gb", ["profile", "uuid"])]
    assert [gi["guessed"] for gi in mig["gpu_instances"]] == [
        ["placement_size", "placement_start", "profile", "profile_id"]] * 2


def test_the_text_report_marks_inferred_profiles(scenario: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hwinfo", "report", "--simulate", str(scenario), "--no-color"],
        capture_output=True, text=True, timeout=60, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("HWINFO")},
    )
    assert done.returncode == 0, done.stderr
    assert "3g.40gb*" in done.stdout and "1g.10gb*" in done.stdout
    assert "* inferred by the import of a dump that names no profile, not read" in done.stdout


def test_metrics_mark_them_on_the_info_series_and_leave_them_out_elsewhere(
    scenario: Path,
) -> None:
    snapshot = simulated_snapshot(scenario)
    by_name = {m.name: m for m in METRICS}
    info = by_name["mig_device_info"]
    rows = [dict(zip(info.labels, labels)) for labels, _ in info.read(snapshot)]
    assert [(r["profile"], r["guessed"]) for r in rows] == [
        ("3g.40gb", "profile,uuid"), ("1g.10gb", "profile,uuid")]
    memory = by_name["mig_gpu_instance_memory_total_bytes"]
    assert [dict(zip(memory.labels, labels))["profile"] for labels, _ in memory.read(snapshot)] \
        == ["", ""]


def test_a_scenario_without_guesses_is_marked_nowhere() -> None:
    snapshot = simulated_snapshot("dgx-a100-mig")
    for gpu in snapshot.gpu.gpus:  # type: ignore[union-attr]
        assert all(not d.guessed for d in gpu.mig.devices)  # type: ignore[union-attr]
        assert all(not gi.guessed for gi in gpu.mig.gpu_instances or ())  # type: ignore[union-attr]


def test_third_party_clients_read_the_derived_uuid_unmarked(
    scenario: Path, tmp_path: Path
) -> None:
    """NVML always has a MIG device's UUID and name: the derived ones are what a client reads
    (marking them would take a value no real driver gives). The report marks the same UUID."""
    report = simulated_snapshot(scenario)
    marked = [d.uuid for d in report.gpu.gpus[0].mig.devices]  # type: ignore[union-attr]
    hwinfo.sim.install(parse_scenario(json.loads(scenario.read_text()), "i.json", "imported"))
    try:
        pynvml.nvmlInit()
        gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
        read = [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i))
                for i in range(2)]
        names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i))
                 for i in range(2)]
    finally:
        hwinfo.sim.uninstall()
    assert read == marked and all(u.startswith("MIG-") for u in read)
    assert names == ["NVIDIA A100-SXM4-80GB MIG 3g.40gb", "NVIDIA A100-SXM4-80GB MIG 1g.10gb"]


@pytest.mark.parametrize("guessed", [["colour"], "profile", [1]])
def test_an_unknown_guessed_fact_is_one_line(guessed: Any) -> None:
    data = {"format": 1, "gpus": [{"board": "A100-SXM4-80GB", "mig": {
        "enabled": True, "gpu_instances": [{"profile": "3g.40gb", "guessed": guessed}]}}]}
    with pytest.raises(ScenarioError, match=r"gpu_instances\[0\]\.guessed") as caught:
        parse_scenario(data, "t.json", "t")
    assert "\n" not in str(caught.value)
