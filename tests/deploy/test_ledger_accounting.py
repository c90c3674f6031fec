"""Short jobs through the whole ledger: NVML accounting in a real `hwinfo serve`, the counters
in a real Prometheus, and `hwinfo usage` adding them to held time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.ledger_stack import A100, lab
from tests.deploy.prometheus_stack import wait_for

# dave trains on the GPU; two jobs start and end between samples (they end 12 and 13 s after
# the simulated driver loads, after Prometheus has scraped the counters at 0).
HOST = {"format": 1, "description": "short jobs beside a long one", "gpus": [
    {"board": A100, "utilization_gpu_percent": 80, "power_draw_w": 250,
     "processes": [{"pid": 4000, "used_memory_mib": 30000, "user": "dave"}],
     "accounting": {"enabled": True, "processes": [
         {"pid": 4100, "ended_after_s": 12, "run_ms": 2000, "gpu_util_percent": 50},
         {"pid": 4101, "ended_after_s": 13, "run_ms": 4000, "gpu_util_percent": 100},
     ]}},
]}
UNKNOWN = "(unknown)"


def test_short_jobs_are_counted_once_and_added_to_held_time(tmp_path: Path) -> None:
    with lab(tmp_path, {"short": HOST}) as (stack, _):
        metrics = stack.scrape()
        assert "hwinfo_gpu_accounting_enabled" in metrics
        wait_for("both short jobs in Prometheus", lambda: stack.query(
            f'hwinfo_gpu_user_accounted_seconds_total{{user="{UNKNOWN}"}} == 6'))
        # dave runs on: his counter stays at 0, served from the start.
        (dave,) = stack.query('hwinfo_gpu_user_accounted_seconds_total{user="dave"}')
        assert dave["value"][1] == "0"
        done = subprocess.run(
            [sys.executable, "-m", "hwinfo", "usage", "--prometheus", stack.prometheus,
             "--since", "1m", "--format", "json"],
            capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        rows = {row["user"]: row for row in json.loads(done.stdout)["rows"]}
        short = rows[UNKNOWN]
        # increase() extrapolates a little past the last scrape.
        assert short["accounted_gpu_seconds"] == pytest.approx(6, rel=0.2)
        assert short["held_gpu_seconds"] == short["accounted_gpu_seconds"]
        assert short["busy_gpu_seconds"] == short["idle_held_gpu_seconds"] == 0
        assert short["mean_utilization_ratio"] == pytest.approx(5 / 6, rel=0.05)
        assert rows["dave"]["accounted_gpu_seconds"] == 0
        assert rows["dave"]["held_gpu_seconds"] > 0
