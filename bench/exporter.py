"""`hwinfo serve` against its targets, on the 8-GPU A100 MIG scenario with per-process series.

- scrape latency, one scraper and 20 concurrent ones with no pause between scrapes
  (keep-alive and gzip, as Prometheus scrapes), driven by wrk;
- the sampler's CPU cost per sample, as a share of one core at a 5 s interval;
- the daemon's resident memory, and its growth over many sampler cycles of churn
  (processes, users and MIG layouts coming and going), measured in-process.
"""

from __future__ import annotations

import http.client
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import MIG_LAYOUTS, churn_processes

SCENARIO = "dgx-a100-mig"
_LISTENING = re.compile(r"listening on \S+:(\d+)")
_TICK = 100  # USER_HZ: /proc/PID/stat counts CPU time in 1/100 s


def start_daemon(*args: str, cmd: tuple[str, ...] = (sys.executable, "-m", "hwinfo")
                 ) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [*cmd, "serve", "--address", "127.0.0.1", "--port", "0",
         "--simulate", SCENARIO, "--process-metrics", *args],
        stderr=subprocess.PIPE, text=True,
    )
    for line in proc.stderr:  # type: ignore[union-attr]
        if match := _LISTENING.search(line):
            threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()  # type: ignore[union-attr]
            return proc, int(match.group(1))
    raise SystemExit("hwinfo serve did not start")


def wait_ready(port: int) -> None:
    for _ in range(200):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("GET", "/-/ready")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            conn.close()
        time.sleep(0.05)
    raise SystemExit("hwinfo serve did not become ready")


def wrk_latency(port: int, connections: int, seconds: int = 10,
                strict: bool = True) -> tuple[float, float, int]:
    """(median ms, p99 ms, requests) from wrk: a C load generator, so the client is not what
    we measure (Python client threads on this 2-core machine are slower than the server).
    Failed scrapes end the benchmark, unless not `strict` (a peer measured beside us)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("bench/exporter.py needs wrk: apt-get install -y wrk")
    out = subprocess.run(
        [wrk, f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds}s", "--latency",
         "-H", "Accept-Encoding: gzip", f"http://127.0.0.1:{port}/metrics"],
        capture_output=True, text=True, check=True,
    ).stdout
    if strict and ("Non-2xx" in out or "Socket errors" in out):
        raise SystemExit(f"wrk saw failed scrapes:\n{out}")

    def ms(label: str) -> float:
        value, unit = re.search(rf"{label}%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return ms("50"), ms("99"), requests


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def rss_mib(pid: int | str = "self") -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def resident_after_start(cmd: list[str], runs: int = 5, samples: int = 5) -> list[float]:
    """The daemon's resident MiB once it has sampled and served `samples` times, per fresh start."""
    sizes = []
    for _ in range(runs):
        proc, port = start_daemon("--interval", "0.5", cmd=tuple(cmd))
        try:
            wait_ready(port)
            for _ in range(samples):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/metrics")
                conn.getresponse().read()
                conn.close()
                time.sleep(0.5)  # one sampler interval between scrapes
            sizes.append(rss_mib(proc.pid))
        finally:
            proc.terminate()
            proc.wait()
    return sizes


def report_latency(name: str, result: tuple[float, float, int]) -> None:
    median, p99, requests = result
    print(f"{name:<48} median {median:6.2f} ms  p99 {p99:6.2f} ms  ({requests} scrapes)"
          "  targets 5 / 20 ms")


def scrapes_and_cost() -> None:
    proc, port = start_daemon("--interval", "1")
    try:
        wait_ready(port)
        time.sleep(1)
        report_latency("scrape, 1 scraper", wrk_latency(port, 1))
        report_latency("scrape, 20 concurrent scrapers (no pause)", wrk_latency(port, 20))
        # Sampler cost: CPU time over idle seconds (no scrapes) at a 1 s interval.
        before, began = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(20)
        spent, wall = cpu_seconds(proc.pid) - before, time.monotonic() - began
        per_sample = spent / wall  # one sample per second
        print(f"{'sampler CPU per sample':<48} {per_sample * 1000:6.1f} ms -> "
              f"{per_sample / 5 * 100:.2f}% of a core at a 5 s interval  (target 2%)")
        print(f"{'daemon resident memory':<48} {rss_mib(proc.pid):6.1f} MiB  (target 60 MB)")
    finally:
        proc.terminate()
        proc.wait()


def churn(cycles: int) -> None:
    """The daemon's sampler, in this process, while the simulated machine keeps changing."""
    from hwinfo import sim
    from hwinfo.collect.gpu.collector import GpuCollector
    from hwinfo.collect.snapshot import SnapshotCollector
    from hwinfo.collect.sources import machine_owners
    from hwinfo.collect.sysfs import Root
    from hwinfo.exporter.daemon import Daemon, Options
    from hwinfo.exporter.exposition import Selection

    machine = sim.install(SCENARIO)
    collector = SnapshotCollector(Root("/"), GpuCollector(machine_owners(machine)))
    sampler = Daemon(collector, Options(selection=Selection(process_metrics=True))).sampler
    rng = random.Random(7)
    plain = [6, 7]  # GPUs whose processes churn; GPU 3 churns its MIG layout too
    warm_at = min(500, cycles // 10)
    warm = 0.0
    for cycle in range(cycles):
        for gpu in plain:
            machine.set_processes(gpu, churn_processes(rng, None, 100000 + cycle * 100 + gpu * 20))
        if cycle % 10 == 0:
            layout, slots = MIG_LAYOUTS[(cycle // 10) % len(MIG_LAYOUTS)]
            machine.reconfigure_mig(3, layout, churn_processes(rng, slots, 900000 + cycle * 50))
        sampler.sample()
        if cycle == warm_at:
            warm = rss_mib()
    print(f"{'resident memory growth over churn':<48} {rss_mib() - warm:+6.1f} MiB from cycle "
          f"{warm_at} to {cycles} (now {rss_mib():.1f} MiB)  target < 5 MB")


