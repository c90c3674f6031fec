"""The health column's words: the worst finding of check's own rules, per GPU."""

from __future__ import annotations

from hwinfo import sim
from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.sources import scenario_owners
from hwinfo.health.findings import Severity
from hwinfo.health.labels import LABELS, gpu_health
from hwinfo.health.rules_gpu import GPU_RULES
from hwinfo.model.gpu import GpuSystem


def _system(name: str, samples: int = 1) -> GpuSystem:
    collector = GpuCollector(scenario_owners(name))
    try:
        for _ in range(samples):
            system = collector.collect()
        return system
    finally:
        collector.close()
        sim.uninstall()


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
