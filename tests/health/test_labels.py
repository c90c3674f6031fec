"""The health column's words: the worst finding of check's own rules, per GPU."""

from __future__ import annotations

from fixtures.simulated import simulated_system as _system

from hwinfo.health.findings import Severity
from hwinfo.health.labels import LABELS, gpu_health
from hwinfo.health.rules_gpu import GPU_RULES


def test_every_gpu_rule_has_words() -> None:
    assert set(LABELS) == {rule.__name__ for rule in GPU_RULES}


def test_faults_demo_says_what_is_wrong_with_each_gpu() -> None:
    words = [gpu_health(g) for g in _system("faults-demo", samples=4).gpus]
    assert words == [
        (Severity.CRITICAL, "ECC uncorrected"),
        (Severity.WARNING, "PCIe x8 of x16"),
        (Severity.CRITICAL, "lost"),
        (Severity.WARNING, "HW thermal slowdown"),
    ]


def test_healthy_busy_box_is_ok() -> None:
    assert {gpu_health(g) for g in _system("dgx-h100").gpus} == {(Severity.OK, "ok")}
