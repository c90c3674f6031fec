"""Every speed and memory target of hwinfo, measured on this machine: `python bench/run.py`.

Medians of repeated runs; fresh-process figures run the installed `hwinfo` command. The
exporter part needs wrk (apt-get install -y wrk) and takes about ten minutes, most of it
10,000 sampler cycles of churn; `python bench/run.py --quick` runs 1,000, and
`python bench/run.py --startup` only the start-up figures (a few minutes, no wrk);
`--hwinfo CMD` measures that `hwinfo` command (a venv's bin/hwinfo) instead of a fresh install
of this tree; given more than once, their start-up figures are taken in the same turns (to
compare two versions).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from common import in_turns, installed_hwinfo, median_call, row
from exporter import churn, resident_after_start, scrapes_and_cost

# What `hwinfo report` needs of its dependencies: importing them is as fast as it can start.
BARE_IMPORT = "import click, pynvml, psutil"
REPORT_RATIO_TARGET = 1.25


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


BARE = f"python -c '{BARE_IMPORT}'"
SIMULATED = "hwinfo report --simulate dgx-a100-mig"


def _commands(cmd: list[str]) -> dict[str, list[str]]:
    """The fresh processes timed for one install: its bare import and its reports."""
    python = str(Path(cmd[0]).with_name("python"))  # the same venv's interpreter
    return {
        BARE: [python, "-c", BARE_IMPORT],
        "hwinfo report": [*cmd, "report", "--no-color"],
        SIMULATED: [*cmd, "report", "--no-color", "--simulate", "dgx-a100-mig"],
    }


def startup(installs: list[list[str]]) -> None:
    """Fresh `hwinfo report`s beside the bare import of their dependencies, all in the same
    turns, and a fresh `hwinfo serve`'s resident memory, for each install."""
    times = in_turns({f"{n} {name}": argv for n, cmd in enumerate(installs)
                      for name, argv in _commands(cmd).items()}, runs=21)
    for n, cmd in enumerate(installs):
        print(" ".join(cmd))
        wall, cpu = {}, {}
        for name in _commands(cmd):
            walls, cpus = zip(*times[f"{n} {name}"])
            wall[name], cpu[name] = statistics.median(walls), statistics.median(cpus)
            line = row(name, (wall[name], min(walls), max(walls)), 400 if name == SIMULATED else None)
            print(f"{line}  CPU {cpu[name] * 1000:.1f} ms")
        print(f"{'hwinfo report / the bare import':<48} wall {wall['hwinfo report'] / wall[BARE]:.2f}x,"
              f" CPU {cpu['hwinfo report'] / cpu[BARE]:.2f}x  target {REPORT_RATIO_TARGET}x")
        sizes = resident_after_start(cmd)
        print(f"{'hwinfo serve dgx-a100-mig resident, fresh':<48} median {statistics.median(sizes):5.1f} MiB"
              f"  (min {min(sizes):.1f}, max {max(sizes):.1f})  target 45 MiB")


def main() -> None:
    print(f"hwinfo benchmarks on {machine()}, load average {os.getloadavg()[0]:.1f}")
    given = [sys.argv[i + 1].split() for i, arg in enumerate(sys.argv[:-1]) if arg == "--hwinfo"]
    if given:
        startup(given)
    else:
        with tempfile.TemporaryDirectory() as where:
            startup([installed_hwinfo(Path(where))])
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if "--startup" in sys.argv:
        return

    from hwinfo import sim
    from hwinfo.collect.cpu import CpuCollector
    from hwinfo.collect.gpu.collector import GpuCollector
    from hwinfo.collect.sources import machine_owners
    from hwinfo.collect.sysfs import Root

    # A one-shot report gets 250 ms in all; the CPU's share, without its window, is small.
    cpu = CpuCollector(Root("/"), min_window_seconds=0)
    print(row("CPU collection, this machine (in-process)", median_call(cpu.collect), 50))
    collector = GpuCollector(machine_owners(sim.install("dgx-a100-mig")))
    print(row("GPU collection, 8x A100 MIG (in-process)", median_call(collector.collect), 30))
    collector.close()
    scrapes_and_cost()
    churn(1_000 if "--quick" in sys.argv else 10_000)


if __name__ == "__main__":
    main()
