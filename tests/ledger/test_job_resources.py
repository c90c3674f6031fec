"""What the ledger asks of jobs' own resources: minute records, or their hourly roll-ups, each
measure as the rules record it (real engines answer it in tests/deploy/test_job_ledger.py)."""

from __future__ import annotations

from hwinfo.ledger.job_resources import ROLLUPS, SEEN_ROLLUP, _measures, _rows
from hwinfo.ledger.prometheus import Sample


def test_minutes_count_evaluations_and_hours_sum_their_counts() -> None:
    minutes = _measures("slurm_job", 'slurm_job="7"', "[1h]", rolled=False)
    assert 'count_over_time(hwinfo:ledger_job_cpu_allotted:cpus{slurm_job="7"}[1h])' in minutes
    hours = _measures("slurm_job", 'slurm_job="7"', "[3h] offset 1h", rolled=True)
    assert f'sum_over_time({SEEN_ROLLUP}{{slurm_job="7"}}[3h] offset 1h)' in hours
    assert "hwinfo:ledger_job_cpu_used:cpus_1h" in hours and "cpus{" not in hours.replace("_1h{", "")
    # Every roll-up read is one the hourly group records (the rules' test checks the file).
    assert {r for r in ROLLUPS if r in hours} == ROLLUPS


def test_rows_add_up_seconds_and_keep_peaks() -> None:
    def s(measure: str, value: float, **labels: str) -> Sample:
        return Sample({"slurm_job": "7", "measure": measure, **labels}, value)

    rows = _rows([s("cpu_used", 30), s("cpu_allotted", 40), s("seen", 10), s("cpu_used", 30),
                  s("cpu_allotted", 40), s("seen", 10), s("memory_peak", 5e9),
                  s("memory_peak", 7e9), s("waiting", 6, resource="io"),
                  s("read", 1e6, device="sda"), s("read_total", 1e6)], "slurm_job", 60)
    job = rows["7"]
    assert job.cpu_efficiency == 0.75 and job.seen_seconds == 1200
    assert job.memory_peak_bytes == 7e9 and job.pressure_ratio("io") == 0.3
    assert job.read_bytes == job.read_bytes_by_device["sda"] == 6e7
