from __future__ import annotations

from collections.abc import Iterable

import pytest

from hwinfo.health import rules_gpu
from hwinfo.health.evaluate import RULE_NAMES, evaluate
from hwinfo.health.findings import Problem, Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.gpu import (
    Ecc,
    GpuProcess,
    Mig,
    MigDevice,
    PcieLink,
    RemappedRows,
    RetiredPages,
    XidErrors,
)

from .factories import GIB, make_gpu, make_snapshot, make_system

DEFAULTS = Thresholds()


def only(problems: Iterable[Problem]) -> Problem:
    (problem,) = list(problems)
    return problem


def link(gen: int, max_gen: int, width: int, max_width: int) -> PcieLink:
    return PcieLink(gen, max_gen, max_gen, width, max_width, None, None, None)


def process(user: str | None, mib: int) -> GpuProcess:
    return GpuProcess(4242, mib << 20, "compute", None, None, user is not None, user, "python")


# The driver and the GPU set.


def test_driver_mismatch_is_critical_and_quotes_nvml() -> None:
    system = make_system(status="driver_mismatch", message="NVIDIA driver and library versions differ")
    problem = only(rules_gpu.driver_mismatch(system, DEFAULTS))
    assert problem.severity is Severity.CRITICAL
    assert problem.message == "NVIDIA driver and library versions differ"
    assert not list(rules_gpu.driver_mismatch(make_system(), DEFAULTS))


@pytest.mark.parametrize("status", ["no_permission", "error"])
def test_nvml_that_cannot_tell_is_unknown(status: str) -> None:
    problem = only(rules_gpu.nvml_unavailable(make_system(status=status, message="why"), DEFAULTS))
    assert problem.severity is Severity.UNKNOWN and problem.facts == {"status": status}


@pytest.mark.parametrize("status", ["ok", "no_library", "no_driver", "driver_mismatch"])
def test_nvml_states_with_a_verdict_of_their_own_are_not_unknown(status: str) -> None:
    assert not list(rules_gpu.nvml_unavailable(make_system(status=status), DEFAULTS))


def test_no_driver_is_fine_unless_gpus_are_expected() -> None:
    system = make_system(status="no_library", message="no NVIDIA driver installed")
    assert not list(rules_gpu.gpu_count(system, DEFAULTS))
    assert not list(rules_gpu.gpu_count(system, Thresholds(expect_gpus=0)))
    problem = only(rules_gpu.gpu_count(system, Thresholds(expect_gpus=2)))
    assert problem.severity is Severity.CRITICAL
    assert problem.message == "0 of 2 expected GPUs present: no NVIDIA driver installed"


def test_fewer_gpus_than_expected() -> None:
    system = make_system(*(make_gpu(i) for i in range(7)))
    problem = only(rules_gpu.gpu_count(system, Thresholds(expect_gpus=8)))
    assert problem.facts == {"gpus": 7, "expected": 8, "status": "ok"}
    assert not list(rules_gpu.gpu_count(system, Thresholds(expect_gpus=7)))
    assert not list(rules_gpu.gpu_count(system, Thresholds(expect_gpus=6)))


def test_gpus_are_not_counted_when_the_driver_cannot_list_them() -> None:
    # The driver mismatch is the finding; "0 GPUs" beside it would be a second, wrong one.
    system = make_system(status="driver_mismatch", message="mismatch")
    assert not list(rules_gpu.gpu_count(system, Thresholds(expect_gpus=8)))


# One GPU.


def test_lost_gpu_is_critical_and_not_also_unreadable() -> None:
    gpu = make_gpu(2, lost=True, unavailable={"gpu": "GPU is lost"})
    assert only(rules_gpu.gpu_lost(gpu, DEFAULTS)).severity is Severity.CRITICAL
    assert not list(rules_gpu.gpu_unreadable(gpu, DEFAULTS))
    assert not list(rules_gpu.gpu_lost(make_gpu(), DEFAULTS))


def test_unreadable_gpu_is_unknown() -> None:
    gpu = make_gpu(1, unavailable={"gpu": "Insufficient Permissions"})
    problem = only(rules_gpu.gpu_unreadable(gpu, DEFAULTS))
    assert problem.severity is Severity.UNKNOWN
    assert problem.message == "NVML cannot read the GPU: Insufficient Permissions"


def test_xid_severity_follows_the_critical_list() -> None:
    gpu = make_gpu(xid_errors=[XidErrors(79, 1, 1_790_000_000.0), XidErrors(13, 3, 1_790_000_060.0)])
    fell_off, app = rules_gpu.xid_errors(gpu, DEFAULTS)
    assert fell_off.severity is Severity.CRITICAL
    assert fell_off.message == "XID 79 once, last at 2026-09-21 14:13:20 UTC"
    assert app.severity is Severity.WARNING and app.message.startswith("XID 13 3 times")
    assert app.facts["count"] == 3 and app.facts["last_timestamp_seconds"] == 1_790_000_060.0
    limits = Thresholds(xid_critical=(13,), xid_ignore=(79,))
    assert [(p.facts["xid"], p.severity) for p in rules_gpu.xid_errors(gpu, limits)] == [
        (13, Severity.CRITICAL)
    ]


def test_uncorrectable_ecc_since_driver_load_is_critical() -> None:
    gpu = make_gpu(ecc=Ecc(True, True, 12, 1, 31, 1))
    problem = only(rules_gpu.ecc_uncorrected(gpu, DEFAULTS))
    assert problem.severity is Severity.CRITICAL
    assert problem.facts == {"volatile_uncorrected": 1, "aggregate_uncorrected": 1}


@pytest.mark.parametrize("ecc", [None, Ecc(True, True, 40, 0, 90, 3), Ecc(True, True, None, None, 2, 2)])
def test_corrected_or_old_ecc_errors_are_not_findings(ecc: Ecc | None) -> None:
    assert not list(rules_gpu.ecc_uncorrected(make_gpu(ecc=ecc), DEFAULTS))


@pytest.mark.parametrize(
    ("rows", "failed", "pending"),
    [
        (RemappedRows(0, 1, pending=True, failure=False), False, True),
        (RemappedRows(0, 9, pending=False, failure=True), True, False),
        (RemappedRows(2, 1, pending=False, failure=False), False, False),
        (None, False, False),
    ],
)
def test_row_remapping(rows: RemappedRows | None, failed: bool, pending: bool) -> None:
    gpu = make_gpu(remapped_rows=rows)
    failures = list(rules_gpu.row_remap_failed(gpu, DEFAULTS))
    waits = list(rules_gpu.row_remap_pending(gpu, DEFAULTS))
    assert [p.severity for p in failures] == ([Severity.CRITICAL] if failed else [])
    assert [p.severity for p in waits] == ([Severity.WARNING] if pending else [])


def test_retired_pages_pending() -> None:
    problem = only(rules_gpu.retired_pages_pending(make_gpu(retired_pages=RetiredPages(2, 1, True)),
                                                   DEFAULTS))
    assert problem.severity is Severity.WARNING and problem.facts == {"single_bit": 2, "double_bit": 1}
    assert not list(rules_gpu.retired_pages_pending(make_gpu(retired_pages=RetiredPages(2, 1, False)),
                                                    DEFAULTS))


THROTTLE_RULES = {
    "thermal_throttling": rules_gpu.thermal_throttling,
    "power_throttling": rules_gpu.power_throttling,
    "hardware_slowdown": rules_gpu.hardware_slowdown,
}


@pytest.mark.parametrize(
    ("reasons", "fired"),
    [
        (["sw_thermal_slowdown"], {"thermal_throttling"}),
        (["hw_thermal_slowdown", "sw_power_cap"], {"thermal_throttling", "power_throttling"}),
        (["hw_power_brake_slowdown"], {"power_throttling"}),
        (["hw_slowdown"], {"hardware_slowdown"}),
        (["hw_slowdown", "hw_thermal_slowdown"], {"thermal_throttling"}),
        (["hw_slowdown", "hw_power_brake_slowdown"], {"power_throttling"}),
        (["gpu_idle"], set()),
        (["applications_clocks_setting", "sync_boost"], set()),
        (None, set()),
    ],
)
def test_throttling_by_cause(reasons: list[str] | None, fired: set[str]) -> None:
    gpu = make_gpu(clock_event_reasons=reasons)
    found = {name for name, rule in THROTTLE_RULES.items() if list(rule(gpu, DEFAULTS))}
    assert found == fired


def test_throttling_names_the_reasons() -> None:
    busy = make_gpu(clock_event_reasons=["sw_power_cap", "sync_boost"], performance_state=0,
                    utilization_gpu_ratio=0.9)
    problem = only(rules_gpu.power_throttling(busy, DEFAULTS))
    assert problem.message == "clocks held down by power: sw_power_cap"
    assert problem.facts == {"reasons": ["sw_power_cap"]}


# (clock event reasons, P-state, utilization): GPUs at rest, and GPUs that work.
AT_REST = [
    (["gpu_idle", "sw_power_cap"], None, None),
    (["sw_power_cap"], 8, 0.0),  # the real idle RTX 3090 (captures/rtx-3090-driver590-v13.xml)
    (["sw_power_cap"], 12, None),  # MIG mode has no utilization
    (["sw_power_cap"], 8, 0.03),
]
WORKING = [
    (["sw_power_cap"], 0, 0.0),  # between kernels at full clocks
    (["sw_power_cap"], 2, 0.95),
    (["sw_power_cap"], 8, 0.6),
    (["sw_power_cap"], None, 0.0),  # P-state unknown: no reason to excuse it
]


@pytest.mark.parametrize(("reasons", "pstate", "busy"), AT_REST)
def test_power_cap_and_slower_link_at_rest_are_power_management(
    reasons: list[str], pstate: int | None, busy: float | None
) -> None:
    gpu = make_gpu(clock_event_reasons=reasons, performance_state=pstate, utilization_gpu_ratio=busy,
                   pcie=link(1, 4, 16, 16))
    assert gpu.at_rest()
    assert not list(rules_gpu.power_throttling(gpu, DEFAULTS))
    assert not list(rules_gpu.pcie_link_below_max(gpu, DEFAULTS))


@pytest.mark.parametrize(("reasons", "pstate", "busy"), WORKING)
def test_power_cap_and_slower_link_on_a_working_gpu_are_findings(
    reasons: list[str], pstate: int | None, busy: float | None
) -> None:
    gpu = make_gpu(clock_event_reasons=reasons, performance_state=pstate, utilization_gpu_ratio=busy,
                   pcie=link(1, 4, 16, 16))
    assert not gpu.at_rest()
    assert only(rules_gpu.power_throttling(gpu, DEFAULTS)).facts == {"reasons": ["sw_power_cap"]}
    assert only(rules_gpu.pcie_link_below_max(gpu, DEFAULTS)).message == (
        "PCIe link below its maximum: gen1 of gen4")


def test_real_faults_at_rest_are_still_findings() -> None:
    """A power brake, a hardware slowdown or fewer lanes is a fault whether busy or not."""
    gpu = make_gpu(clock_event_reasons=["hw_power_brake_slowdown", "sw_power_cap", "hw_slowdown"],
                   performance_state=8, utilization_gpu_ratio=0.0, pcie=link(1, 4, 8, 16))
    assert gpu.at_rest()
    assert only(rules_gpu.power_throttling(gpu, DEFAULTS)).facts == {
        "reasons": ["hw_power_brake_slowdown"]}
    assert only(rules_gpu.pcie_link_below_max(gpu, DEFAULTS)).message == (
        "PCIe link below its maximum: x8 of x16 lanes")


@pytest.mark.parametrize(
    ("temperature", "margin", "severity"),
    [
        (83.0, 5.0, None),
        (84.0, 5.0, Severity.WARNING),
        (88.0, 5.0, Severity.WARNING),
        (89.0, 5.0, Severity.CRITICAL),
        (93.0, 5.0, Severity.CRITICAL),
        (80.0, 10.0, Severity.WARNING),
        (88.0, 0.0, None),
    ],
)
def test_temperature_near_slowdown(temperature: float, margin: float, severity: Severity | None) -> None:
    gpu = make_gpu(temperature_celsius=temperature, temperature_slowdown_celsius=89.0)
    problems = list(rules_gpu.temperature_near_slowdown(gpu, Thresholds(temperature_margin_celsius=margin)))
    assert [p.severity for p in problems] == ([severity] if severity else [])


def test_temperature_without_a_slowdown_threshold_is_not_judged() -> None:
    assert not list(rules_gpu.temperature_near_slowdown(make_gpu(temperature_celsius=99.0), DEFAULTS))


def test_pcie_width_below_max() -> None:
    problem = only(rules_gpu.pcie_link_below_max(make_gpu(pcie=link(3, 3, 8, 16)), DEFAULTS))
    assert problem.severity is Severity.WARNING
    assert problem.message == "PCIe link below its maximum: x8 of x16 lanes"
    assert problem.facts == {"generation": 3, "max_generation": 3, "width": 8, "max_width": 16}


def test_pcie_generation_below_max_on_a_busy_gpu() -> None:
    problem = only(rules_gpu.pcie_link_below_max(make_gpu(pcie=link(3, 4, 16, 16)), DEFAULTS))
    assert problem.message == "PCIe link below its maximum: gen3 of gen4"


def test_idle_gpu_may_lower_its_generation_but_not_its_width() -> None:
    idle = ["gpu_idle"]
    assert not list(rules_gpu.pcie_link_below_max(
        make_gpu(pcie=link(1, 4, 16, 16), clock_event_reasons=idle), DEFAULTS))
    problem = only(rules_gpu.pcie_link_below_max(
        make_gpu(pcie=link(1, 4, 8, 16), clock_event_reasons=idle), DEFAULTS))
    assert problem.message == "PCIe link below its maximum: x8 of x16 lanes"


@pytest.mark.parametrize(
    "pcie", [None, link(4, 4, 16, 16), PcieLink(None, 4, 4, None, 16, None, None, None)]
)
def test_full_or_unknown_pcie_link_is_no_finding(pcie: PcieLink | None) -> None:
    assert not list(rules_gpu.pcie_link_below_max(make_gpu(pcie=pcie), DEFAULTS))


def test_mig_mode_change_pending() -> None:
    problem = only(rules_gpu.mig_mode_change_pending(make_gpu(mig=Mig(False, True)), DEFAULTS))
    assert problem.message == "MIG mode changes to enabled at the next GPU reset"
    assert not list(rules_gpu.mig_mode_change_pending(make_gpu(mig=Mig(True, True)), DEFAULTS))
    assert not list(rules_gpu.mig_mode_change_pending(make_gpu(mig=Mig(True, None)), DEFAULTS))


def test_mig_without_instances() -> None:
    device = MigDevice(0, "MIG-1", "7g.80gb", 0, 0, 98, 80 * GIB, 0)
    assert only(rules_gpu.mig_without_instances(make_gpu(mig=Mig(True, True)), DEFAULTS))
    assert not list(rules_gpu.mig_without_instances(make_gpu(mig=Mig(True, True, [device])), DEFAULTS))
    assert not list(rules_gpu.mig_without_instances(make_gpu(mig=Mig(False, False)), DEFAULTS))


def test_memory_held_on_an_idle_gpu() -> None:
    gpu = make_gpu(utilization_gpu_ratio=0.0, memory_used_bytes=20 * GIB,
                   processes=[process("alice", 10240), process(None, 10240)])
    problem = only(rules_gpu.idle_gpu_memory(gpu, DEFAULTS))
    assert problem.severity is Severity.WARNING
    assert problem.message == ("20.0 GiB held while the GPU is idle (0% busy) "
                               "by 2 process(es) of (unknown), alice")
    assert problem.facts["users"] == ["(unknown)", "alice"]


@pytest.mark.parametrize(
    ("busy", "used", "limits"),
    [
        (0.05, 20 * GIB, DEFAULTS),  # working
        (0.0, 512 << 20, DEFAULTS),  # a CUDA context's worth
        (None, 20 * GIB, DEFAULTS),  # MIG mode: no utilization
        (0.0, 2 * GIB, Thresholds(idle_gpu_memory_mib=4096)),
    ],
)
def test_gpus_that_are_busy_or_hold_little_are_not_idle_holders(
    busy: float | None, used: int, limits: Thresholds
) -> None:
    gpu = make_gpu(utilization_gpu_ratio=busy, memory_used_bytes=used)
    assert not list(rules_gpu.idle_gpu_memory(gpu, limits))


def test_idle_utilization_threshold_is_configurable() -> None:
    gpu = make_gpu(utilization_gpu_ratio=0.03, memory_used_bytes=8 * GIB)
    assert not list(rules_gpu.idle_gpu_memory(gpu, DEFAULTS))
    assert list(rules_gpu.idle_gpu_memory(gpu, Thresholds(idle_gpu_utilization_percent=5)))


def test_an_unknown_gpu_breaks_no_rule() -> None:
    # Everything None (a vGPU guest, an old driver): no rule may guess.
    for rule in rules_gpu.GPU_RULES:
        assert not list(rule(make_gpu(), DEFAULTS)), rule.__name__


# Running the rules.


def test_findings_name_rule_subject_and_uuid_worst_first() -> None:
    hot = make_gpu(1, temperature_celsius=86.0, temperature_slowdown_celsius=89.0)
    lost = make_gpu(3, lost=True)
    findings = evaluate(make_snapshot(make_system(make_gpu(0), hot, lost)), DEFAULTS)
    assert [(f.severity, f.rule, f.subject, f.uuid) for f in findings] == [
        (Severity.CRITICAL, "gpu_lost", "gpu 3", "GPU-00000003"),
        (Severity.WARNING, "temperature_near_slowdown", "gpu 1", "GPU-00000001"),
    ]


def test_disabled_rules_do_not_run() -> None:
    gpu = make_gpu(clock_event_reasons=["sw_power_cap", "sw_thermal_slowdown"])
    snapshot = make_snapshot(make_system(gpu))
    rules = [f.rule for f in evaluate(snapshot, Thresholds(disable=("power_throttling",)))]
    assert rules == ["thermal_throttling"]


def test_rule_names_are_unique_and_cover_every_module() -> None:
    assert len(set(RULE_NAMES)) == len(RULE_NAMES)
    assert {"driver_mismatch", "pcie_link_below_max", "memory_pressure", "gpu_missing",
            "cpu_changed"} <= set(RULE_NAMES)
