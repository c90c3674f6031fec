"""Every speed and memory target of hwinfo, measured on this machine: `python bench/run.py`.

Medians of repeated runs; fresh-process figures run the installed `hwinfo` command. The
exporter part needs wrk (apt-get install -y wrk) and takes about ten minutes, most of it
10,000 sampler cycles of churn; `python bench/run.py --quick` runs 1,000, and
`python bench/run.py --startup` only the start-up figures (a minute, no wrk).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from common import installed_hwinfo, median_call, median_wall, row
from exporter import churn, resident_after_start, scrapes_and_cost


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def startup(cmd: list[str]) -> None:
    """Fresh `hwinfo report` times, and a fresh `hwinfo serve`'s resident memory."""
    print(row("hwinfo report (fresh process, this machine)",
              median_wall([*cmd, "report", "--no-color"], runs=21), 110))
    print(row("hwinfo report --simulate dgx-a100-mig (fresh)",
              median_wall([*cmd, "report", "--no-color", "--simulate", "dgx-a100-mig"]), 400))
    sizes = resident_after_start(cmd)
    print(f"{'hwinfo serve dgx-a100-mig resident, fresh':<48} median {statistics.median(sizes):5.1f} MiB"
          f"  (min {min(sizes):.1f}, max {max(sizes):.1f})  target 30 MiB")


def main() -> None:
    print(f"hwinfo benchmarks on {machine()}")
    with tempfile.TemporaryDirectory() as where:
        cmd = installed_hwinfo(Path(where))
        startup(cmd)
    if "--startup" in sys.argv:
        return

    from hwinfo.collect.cpu import CpuCollector
    from hwinfo.collect.gpu.collector import GpuCollector
    from hwinfo.collect.sources import scenario_owners
    from hwinfo.collect.sysfs import Root

    # A one-shot report gets 250 ms in all; the CPU's share, without its window, is small.
    cpu = CpuCollector(Root("/"), min_window_seconds=0)
    print(row("CPU collection, this machine (in-process)", median_call(cpu.collect), 50))
    collector = GpuCollector(scenario_owners("dgx-a100-mig"))
    print(row("GPU collection, 8x A100 MIG (in-process)", median_call(collector.collect), 30))
    collector.close()
    scrapes_and_cost()
    churn(1_000 if "--quick" in sys.argv else 10_000)


if __name__ == "__main__":
    main()
