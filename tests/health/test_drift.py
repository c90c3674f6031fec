from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwinfo.health import drift
from hwinfo.health.evaluate import evaluate
from hwinfo.health.findings import Finding, Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.gpu import Gpu, Mig, MigDevice
from hwinfo.model.snapshot import Snapshot
from hwinfo.render.json import render_json

from .factories import GIB, make_cpu, make_gpu, make_memory, make_snapshot, make_system

DEFAULTS = Thresholds()


def machine(*gpus: Gpu, memory_gib: float = 512, cpu: str = "AMD EPYC 7742 64-Core Processor",
            status: str = "ok") -> Snapshot:
    total = int(memory_gib * GIB)
    return make_snapshot(make_system(*gpus, status=status), make_memory(total, total // 2),
                         make_cpu(cpu))


def drift_of(before: Snapshot, after: Snapshot) -> list[tuple[Severity, str, str]]:
    """The drift findings only (a baseline with no health findings of its own)."""
    findings: list[Finding] = evaluate(after, DEFAULTS, before)
    return [(f.severity, f.rule, f.subject) for f in findings]


def mig(*profiles: str) -> Mig:
    return Mig(True, True, [MigDevice(i, f"MIG-{i}", p, i + 1, 0, None, None, None)
                            for i, p in enumerate(profiles)])


FOUR = [make_gpu(i) for i in range(4)]


def test_same_machine_no_drift() -> None:
    assert drift_of(machine(*FOUR), machine(*FOUR)) == []


def test_missing_gpu_is_critical() -> None:
    findings = evaluate(machine(*FOUR[:3]), DEFAULTS, machine(*FOUR))
    (finding,) = findings
    assert (finding.severity, finding.rule, finding.subject, finding.uuid) == (
        Severity.CRITICAL, "gpu_missing", "gpu 3", "GPU-00000003")
    assert finding.message == ("in the baseline but gone: NVIDIA A100-SXM4-80GB serial 1320020000003 "
                               "(GPU-00000003)")


def test_added_gpu() -> None:
    assert drift_of(machine(*FOUR[:3]), machine(*FOUR)) == [(Severity.WARNING, "gpu_added", "gpu 3")]


def test_board_swapped_in_the_same_slot_is_a_replacement() -> None:
    swapped = make_gpu(2, uuid="GPU-feedface", serial="1320020009999")
    findings = evaluate(machine(*FOUR[:2], swapped, FOUR[3]), DEFAULTS, machine(*FOUR))
    (finding,) = findings
    assert (finding.rule, finding.subject, finding.uuid) == ("gpu_replaced", "gpu 2", "GPU-feedface")
    assert finding.facts["before"]["serial"] == "1320020000002"
    assert finding.facts["after"]["serial"] == "1320020009999"


def test_gpus_renumbered_after_one_is_pulled_are_matched_by_uuid() -> None:
    # GPU 1 is gone; the driver renumbers the others 0, 1, 2 on the next boot.
    after = [make_gpu(0), make_gpu(1, uuid="GPU-00000002", serial="1320020000002",
                                   pci_bus_id="00000000:02:00.0"),
             make_gpu(2, uuid="GPU-00000003", serial="1320020000003", pci_bus_id="00000000:03:00.0")]
    before = [make_gpu(0), make_gpu(1), make_gpu(2), make_gpu(3)]
    assert drift_of(machine(*before), machine(*after)) == [(Severity.CRITICAL, "gpu_missing", "gpu 1")]


def test_serial_change_under_the_same_uuid_is_a_replacement() -> None:
    after = [*FOUR[:3], make_gpu(3, serial="9999999999999")]
    assert drift_of(machine(*FOUR), machine(*after)) == [(Severity.WARNING, "gpu_replaced", "gpu 3")]


def test_gpu_lost_since_nvml_started_is_not_drift() -> None:
    # NVML never named it in this process: no UUID, no bus id. gpu_lost reports it.
    unnamed = make_gpu(1, uuid=None, serial=None, pci_bus_id=None, name=None, lost=True)
    assert drift_of(machine(*FOUR), machine(FOUR[0], unnamed, *FOUR[2:])) == [
        (Severity.CRITICAL, "gpu_lost", "gpu 1")
    ]


def test_mig_layout_change() -> None:
    before = machine(make_gpu(0, mig=mig("3g.40gb", "3g.40gb")), make_gpu(1, mig=mig()))
    after = machine(make_gpu(0, mig=mig("7g.80gb")), make_gpu(1, mig=Mig(False, False)))
    findings = evaluate(after, DEFAULTS, before)
    assert [(f.rule, f.subject, f.message) for f in findings] == [
        ("mig_layout_changed", "gpu 0", "MIG layout changed: was 3g.40gb, 3g.40gb, now 7g.80gb"),
        ("mig_layout_changed", "gpu 1",
         "MIG layout changed: was MIG enabled, no instances, now MIG disabled"),
    ]
    assert findings[0].facts == {"before": {"enabled": True, "profiles": ["3g.40gb", "3g.40gb"]},
                                 "after": {"enabled": True, "profiles": ["7g.80gb"]}}


def test_mig_device_order_is_not_a_change() -> None:
    reordered = Mig(True, True, list(reversed(mig("3g.40gb", "4g.40gb").devices)))
    assert drift_of(machine(make_gpu(0, mig=mig("3g.40gb", "4g.40gb"))),
                    machine(make_gpu(0, mig=reordered))) == []


def test_gpus_are_not_compared_when_the_driver_cannot_list_them() -> None:
    broken = make_snapshot(make_system(status="driver_mismatch", message="mismatch"),
                           make_memory(512 * GIB, 256 * GIB), make_cpu())
    assert drift_of(machine(*FOUR), broken) == [(Severity.CRITICAL, "driver_mismatch", "gpus")]


def test_driver_removed_since_the_baseline_loses_every_gpu() -> None:
    gone = machine(status="no_library")
    assert drift_of(machine(*FOUR[:2]), gone) == [
        (Severity.CRITICAL, "gpu_missing", "gpu 0"), (Severity.CRITICAL, "gpu_missing", "gpu 1")
    ]


@pytest.mark.parametrize(("after_gib", "changed"), [(512, False), (510, False), (500, True), (1024, True)])
def test_memory_size_change_beyond_the_tolerance(after_gib: float, changed: bool) -> None:
    found = drift_of(machine(memory_gib=512), machine(memory_gib=after_gib))
    assert found == ([(Severity.WARNING, "memory_size_changed", "host")] if changed else [])


def test_memory_tolerance_is_configurable() -> None:
    findings = evaluate(machine(memory_gib=500), Thresholds(memory_drift_percent=5),
                        machine(memory_gib=512))
    assert findings == []


def test_cpu_model_change() -> None:
    findings = evaluate(machine(cpu="AMD EPYC 9654 96-Core Processor"), DEFAULTS, machine())
    (finding,) = findings
    assert finding.rule == "cpu_changed"
    assert finding.message == ("CPU changed: was 2 × AMD EPYC 7742 64-Core Processor, "
                               "now 2 × AMD EPYC 9654 96-Core Processor")


def test_baseline_round_trips_from_report_json(tmp_path: Path) -> None:
    saved = machine(*FOUR)
    path = tmp_path / "baseline.json"
    path.write_text(render_json(saved))
    assert drift.load_baseline(str(path)) == saved


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "baseline {path}: No such file or directory"),
        ("{not json", "baseline {path}: line 1, column 2: invalid JSON: "),
        ("[" * 100_000, "baseline {path}: nested too deeply"),
        ('{"schema_version": NaN}', "baseline {path}: NaN is not a number JSON allows"),
        ('{"hwinfo_version": "0.1.0"}', "baseline {path}: not an hwinfo snapshot (it has no schema_version)"),
        ('{"schema_version": 99}', "baseline {path}: snapshot schema 99, this hwinfo reads 1"),
        ("[1, 2]", "baseline {path}: not an hwinfo snapshot (a JSON list, not an object)"),
        ('{"schema_version": 1, "hwinfo_version": "0.1.0"}',
         "baseline {path}: Snapshot: missing field 'timestamp_seconds'"),
    ],
)
def test_unusable_baseline_is_one_line(tmp_path: Path, content: str | None, says: str) -> None:
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(drift.BaselineError) as caught:
        drift.load_baseline(str(path))
    message = str(caught.value)
    assert message.startswith(says.format(path=path)) and "\n" not in message


def test_baseline_from_a_future_writer_with_extra_keys_loads(tmp_path: Path) -> None:
    document = json.loads(render_json(machine(*FOUR)))
    document["gpu"]["gpus"][0]["new_field"] = 1
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(document))
    assert len(drift.load_baseline(str(path)).gpu.gpus) == 4
