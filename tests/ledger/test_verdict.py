"""The verdict on jobs whose figures are known; and docs/jobs.md's table of thresholds is the
code's (the real jobs' verdicts are in tests/deploy/test_job_verdicts.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hwinfo.ledger import verdict
from hwinfo.ledger.job_resources import JobResources
from hwinfo.ledger.verdict import judge

HOUR = 3600.0
INTERVAL = 60.0
IDLE = 0.05  # the shipped rules' idle threshold
DOCS = Path(__file__).resolve().parents[2] / "docs" / "jobs.md"


def _job(efficiency: float = 0.2, allotted: float = 4, io_busy: float = 0.0,
         io_pressure: float | None = None, read: float = 0.0, peak: float | None = None,
         limit: float | None = None, seen: float = HOUR, cpu_pressure: float = 0.0,
         cpuset_busy: float = 0.0) -> JobResources:
    found = JobResources("4242", seen_seconds=seen, cpu_allotted_seconds=allotted * seen,
                         cpu_used_seconds=efficiency * allotted * seen, read_bytes=read,
                         io_busy_seconds=io_busy * seen, memory_peak_bytes=peak,
                         memory_limit_bytes=limit, cpuset_busy_seconds=cpuset_busy * seen)
    if io_pressure is not None:
        found.waiting_seconds = {"io": io_pressure * seen, "cpu": cpu_pressure * seen,
                                 "memory": 0.0}
    return found


def test_busy_gpus_are_gpu_bound_whatever_else() -> None:
    found = judge(0.9, _job(efficiency=1.0), INTERVAL, IDLE)
    assert found.verdict == "gpu-bound" and found.advice[0].startswith("nothing to fix")
    assert judge(0.5, None, INTERVAL, IDLE).verdict == "gpu-bound"  # no CPU figures needed


def test_a_data_loader_starved_of_cpus() -> None:
    found = judge(0.3, _job(efficiency=0.95, allotted=4), INTERVAL, IDLE)
    assert found.verdict == "cpu-bound"
    assert found.figures[:2] == ["GPU utilization 30% while held", "CPU use 95% of 4 allotted CPUs"]
    assert "num_workers" in found.advice[0]
    # GPUs that did nothing at all while the CPUs worked: a CPU-only stage holding them.
    assert "CPU-only stage" in judge(0.0, _job(efficiency=1.0), INTERVAL, IDLE).advice[1]


def test_a_job_starved_of_cpu_by_others_work() -> None:
    """It used half its allotment, but waited for CPUs: by its pressure on cgroup v2, by its
    CPUs saturated with others' work on v1 (where a job that used almost none is not it)."""
    v2 = judge(0.3, _job(efficiency=0.5, io_pressure=0.0, cpu_pressure=0.45), INTERVAL, IDLE)
    assert v2.verdict == "cpu-bound" and "CPUs of its own" in v2.advice[0]
    assert "tasks waiting for a CPU 45% of the time (cpu.pressure)" in v2.figures
    assert judge(0.3, _job(efficiency=0.5, io_pressure=0.0, cpu_pressure=0.1), INTERVAL,
                 IDLE).verdict == "underused"
    v1 = judge(0.3, _job(efficiency=0.44, cpuset_busy=1.0), INTERVAL, IDLE)
    assert v1.verdict == "cpu-bound" and "its CPUs 100% busy with its work and others'" in v1.figures
    assert judge(0.01, _job(efficiency=0.01, cpuset_busy=1.0), INTERVAL, IDLE).verdict == "idle"
    # A job waiting on its disks uses little CPU: busy with others' work beside it, the disks
    # are the cause.
    assert judge(0.2, _job(efficiency=0.1, cpuset_busy=1.0, io_busy=0.9, read=1e9), INTERVAL,
                 IDLE).verdict == "io-bound"


def test_waiting_on_io_by_pressure_where_it_is_kept_else_by_the_disks() -> None:
    assert judge(0.2, _job(io_pressure=0.6, read=1e12), INTERVAL, IDLE).verdict == "io-bound"
    # Pressure says no, though the disks were busy: pressure decides where it exists.
    assert judge(0.2, _job(io_pressure=0.1, io_busy=0.9), INTERVAL, IDLE).verdict == "underused"
    v1 = judge(0.2, _job(io_busy=0.9, read=5e11), INTERVAL, IDLE)
    assert v1.verdict == "io-bound"
    assert "its disks working for it 90% of the time, read 466 GiB" in v1.figures


def test_idle_and_underused_say_what_rules_each_cause_out() -> None:
    idle = judge(0.01, _job(efficiency=0.02), INTERVAL, IDLE)
    assert idle.verdict == "idle" and "release them" in idle.advice[0]
    under = judge(0.3, _job(efficiency=0.4, io_busy=0.1, read=1e9), INTERVAL, IDLE)
    assert under.verdict == "underused"
    assert under.ruled_out == ["not CPU-bound: CPU use 40% of 4 allotted CPUs, under 80%",
                               "not I/O-bound: its disks working for it 10% of the time, read 954 MiB"]
    # No disk I/O recorded at all (Slurm on cgroup v1 keeps none): said, not taken as none.
    assert "I/O not judged" in judge(0.3, _job(efficiency=0.4), INTERVAL, IDLE).ruled_out[1]


def test_unknown_says_why() -> None:
    assert judge(None, _job(), INTERVAL, IDLE).verdict == "unknown"
    assert "not recorded" in judge(0.2, None, INTERVAL, IDLE).figures[1]
    few = judge(0.2, _job(seen=2 * INTERVAL), INTERVAL, IDLE)
    assert few.verdict == "unknown" and "2 of the rules' evaluations" in few.figures[1]


def test_host_memory_near_its_limit_is_said() -> None:
    found = judge(0.9, _job(peak=62 * 2**30, limit=64 * 2**30), INTERVAL, IDLE)
    assert found.advice[1] == ("host memory peaked at 97% of its 64.0 GiB limit: it may swap "
                               "or be killed; ask for more (--mem)")
    assert len(judge(0.9, _job(peak=32 * 2**30, limit=64 * 2**30), INTERVAL, IDLE).advice) == 1


def test_efficiency_is_used_over_allotted_cut_at_one() -> None:
    assert _job(efficiency=0.25).cpu_efficiency == 0.25
    assert JobResources("x", cpu_used_seconds=110, cpu_allotted_seconds=100).cpu_efficiency == 1
    assert JobResources("x").cpu_efficiency is None


def test_the_documented_thresholds_are_the_code_s() -> None:
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([0-9.]+) \|", DOCS.read_text(), re.MULTILINE))
    names = ("GPU_BUSY_RATIO", "CPU_NEAR_RATIO", "CPU_PRESSURE_RATIO", "CPU_SATURATED_RATIO",
             "CPU_STARVED_RATIO", "IO_PRESSURE_RATIO", "IO_BUSY_RATIO", "MEMORY_NEAR_RATIO",
             "MIN_EVALUATIONS")
    assert {n: float(rows[n]) for n in names} == {n: float(getattr(verdict, n)) for n in names}


@pytest.mark.parametrize("name", verdict.VERDICTS)
def test_every_verdict_is_documented(name: str) -> None:
    assert f"| `{name}` |" in DOCS.read_text()
