from __future__ import annotations

import pytest

from hwinfo.health import rules_host
from hwinfo.health.evaluate import evaluate
from hwinfo.health.findings import Severity
from hwinfo.health.thresholds import Thresholds
from hwinfo.model.sources import SourceError

from .factories import GIB, make_memory, make_snapshot

DEFAULTS = Thresholds()


@pytest.mark.parametrize(
    ("available_gib", "severity"),
    [
        (80, None),
        (10, None),  # exactly 10%: not below the warning threshold
        (9.5, Severity.WARNING),
        (5, Severity.WARNING),
        (4.5, Severity.CRITICAL),
        (0, Severity.CRITICAL),
    ],
)
def test_memory_pressure_levels(available_gib: float, severity: Severity | None) -> None:
    memory = make_memory(total=100 * GIB, available=int(available_gib * GIB))
    snapshot = make_snapshot(memory=memory)
    problems = list(rules_host.memory_pressure(snapshot, DEFAULTS))
    assert [p.severity for p in problems] == ([severity] if severity else [])


def test_memory_pressure_says_how_much_is_left() -> None:
    snapshot = make_snapshot(memory=make_memory(total=64 * GIB, available=2 * GIB))
    (problem,) = rules_host.memory_pressure(snapshot, DEFAULTS)
    assert problem.message == "2.00 GiB of 64.0 GiB memory available (3%)"
    assert problem.facts == {"available_bytes": 2 * GIB, "total_bytes": 64 * GIB}


def test_memory_thresholds_come_from_the_config() -> None:
    snapshot = make_snapshot(memory=make_memory(total=64 * GIB, available=12 * GIB))  # 18.75%
    limits = Thresholds(memory_available_warning_percent=25, memory_available_critical_percent=20)
    assert [p.severity for p in rules_host.memory_pressure(snapshot, limits)] == [Severity.CRITICAL]


@pytest.mark.parametrize(
    ("swap_used_gib", "severity"),
    [(0, None), (3.5, None), (4, Severity.WARNING), (7, Severity.WARNING), (7.5, Severity.CRITICAL)],
)
def test_swap_pressure_levels(swap_used_gib: float, severity: Severity | None) -> None:
    memory = make_memory(swap_total=8 * GIB, swap_used=int(swap_used_gib * GIB))
    problems = list(rules_host.swap_pressure(make_snapshot(memory=memory), DEFAULTS))
    assert [p.severity for p in problems] == ([severity] if severity else [])


def test_no_swap_and_no_memory_section_are_not_judged() -> None:
    assert not list(rules_host.swap_pressure(make_snapshot(memory=make_memory(swap_total=0)), DEFAULTS))
    assert not list(rules_host.memory_pressure(make_snapshot(memory=None), DEFAULTS))
    assert not list(rules_host.swap_pressure(make_snapshot(memory=None), DEFAULTS))


def test_a_failed_source_is_unknown() -> None:
    snapshot = make_snapshot(errors=[SourceError("memory", "OSError: /proc/meminfo: EIO")])
    (finding,) = evaluate(snapshot, DEFAULTS)
    assert (finding.severity, finding.rule, finding.subject) == (
        Severity.UNKNOWN, "collection_failed", "host")
    assert finding.message == "memory not read: OSError: /proc/meminfo: EIO"


def test_a_fault_outranks_an_unknown_in_the_verdict() -> None:
    from hwinfo.health.findings import worst

    snapshot = make_snapshot(memory=make_memory(total=64 * GIB, available=5 * GIB),
                             errors=[SourceError("cpu", "boom")])
    findings = evaluate(snapshot, DEFAULTS)
    assert [f.severity for f in findings] == [Severity.WARNING, Severity.UNKNOWN]
    assert worst(findings) is Severity.WARNING
    assert worst([]) is Severity.OK
