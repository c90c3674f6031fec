"""Every speed and memory target of hwinfo, measured on this machine: `python bench/run.py`.

Medians of repeated runs; fresh-process figures run the installed `hwinfo` command. The
exporter part needs wrk (apt-get install -y wrk) and takes about ten minutes, most of it
10,000 sampler cycles of churn; `python bench/run.py --quick` runs 1,000.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from pathlib import Path

from common import installed_hwinfo, median_call, median_wall, row
from exporter import churn, scrapes_and_cost


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def report_timings(cmd: list[str]) -> None:
    print(row("hwinfo report (fresh process, this machine)",
              median_wall([*cmd, "report", "--no-color"]), 250))
    print(row("hwinfo report --simulate dgx-a100-mig (fresh)",
              median_wall([*cmd, "report", "--no-color", "--simulate", "dgx-a100-mig"]), 400))


def main() -> None:
    print(f"hwinfo benchmarks on {machine()}")
    with tempfile.TemporaryDirectory() as where:
        cmd = installed_hwinfo(Path(where))
        report_timings(cmd)

    from hwinfo.collect.gpu.collector import GpuCollector
    from hwinfo.collect.sources import scenario_owners

    collector = GpuCollector(scenario_owners("dgx-a100-mig"))
    print(row("GPU collection, 8x A100 MIG (in-process)", median_call(collector.collect), 30))
    collector.close()
    scrapes_and_cost()
    churn(1_000 if "--quick" in sys.argv else 10_000)


if __name__ == "__main__":
    main()
