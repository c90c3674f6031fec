"""Soak: `hwinfo serve` keeps answering while GPUs and the driver misbehave.

    python bench/soak.py [--minutes 10]

The daemon runs in this process (its HTTP server on the main thread, as `hwinfo serve`
runs it) so a controller thread can change the simulated machine while wrk keeps 20
scrapers on it. Phases, each with its own measurements:
1. an NVML call hangs for 30 s;
2. a GPU is lost in the middle of a run and comes back;
3. MIG reconfigured between samples, thousands of short-lived processes, and user and
   command names with quotes, newlines and non-ASCII characters;
4. random faults of all those kinds for --minutes, 20 concurrent scrapers throughout;
5. (a separate daemon) NVML failing to start, as during a driver reload, and starting later.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from common import MIG_LAYOUTS, churn_processes
from prometheus_client.parser import text_string_to_metric_families

SCENARIO = "dgx-a100-mig"
INTERVAL = 0.5
# Scenario samples are seconds of simulated time since the driver loaded (docs/scenario-format.md).
HANG_AT_SAMPLE = 10


def rss_mib() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def threads() -> int:
    return int(Path("/proc/self/status").read_text().split("Threads:")[1].split()[0])


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
        body = response.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(body):  # fails on a malformed exposition
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def value(metrics: dict[str, Any], name: str, **labels: str) -> float | None:
    for got, v in metrics.get(name, []):
        if all(got.get(k) == want for k, want in labels.items()):
            return v
    return None


def _seconds(took: float | None) -> str:
    return "NEVER (timed out)" if took is None else f"{took:.1f} s"


class Wrk:
    """20 keep-alive scrapers for a while, in a process of their own."""

    def __init__(self, url: str, seconds: float, connections: int = 20) -> None:
        wrk = shutil.which("wrk")
        if wrk is None:
            raise SystemExit("bench/soak.py needs wrk: apt-get install -y wrk")
        self.proc = subprocess.Popen(
            [wrk, "-t2", f"-c{connections}", f"-d{int(seconds)}s", "--latency", "--timeout", "5s",
             "-H", "Accept-Encoding: gzip", url + "/metrics"],
            stdout=subprocess.PIPE, text=True,
        )

    def result(self) -> str:
        out = self.proc.communicate()[0]
        p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
        p99_ms = float(p99.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[p99.group(2)] if p99 else -1
        requests = re.search(r"(\d+) requests in", out)
        failed = sum(int(n) for n in re.findall(r"(?:Non-2xx or 3xx responses|"
                                                r"connect|read|write|timeout)[: ]+(\d+)", out))
        return (f"{requests.group(1) if requests else '?'} scrapes, p99 {p99_ms:.1f} ms, "
                f"{failed} failed")


class Controller:
    def __init__(self, machine: Any, url: str, minutes: float) -> None:
        self.machine, self.url, self.minutes = machine, url, minutes
        self.rng = random.Random(11)
        self.pid_base = 200000
        self.churned = 0

    def churn_once(self) -> None:
        layout, slots = self.rng.choice(MIG_LAYOUTS)
        self.machine.reconfigure_mig(3, layout, churn_processes(self.rng, slots, self.pid_base))
        for gpu in (6, 7):
            procs = churn_processes(self.rng, None, self.pid_base + 1000 * gpu)
            self.machine.set_processes(gpu, procs)
            self.churned += len(procs)
        self.pid_base += 10000

    def wait_for(self, predicate: Any, timeout: float) -> float | None:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if predicate(scrape(self.url)):
                return time.monotonic() - started
            time.sleep(0.1)
        return None

    def hang(self) -> None:
        print("1. an NVML call hangs for 30 s (nvmlDeviceGetPowerUsage on GPU 7)")
        load = Wrk(self.url, 40)
        took = self.wait_for(lambda m: value(m, "hwinfo_collection_stalled", source="gpu") == 1, 30)
        most_threads = threads()
        print(f"   staleness visible {_seconds(took)} into the phase (the hang starts "
              f"{HANG_AT_SAMPLE} samples, i.e. seconds, after the driver loaded)")
        back = self.wait_for(lambda m: value(m, "hwinfo_collection_stalled", source="gpu") == 0, 45)
        most_threads = max(most_threads, threads())
        print(f"   recovered {_seconds(back)} after it went stale")
        print(f"   scrapes during the hang: {load.result()}; threads at most {most_threads}")

    def lost_gpu(self) -> None:
        print("2. GPU 2 is lost in the middle of the run, then comes back")
        load = Wrk(self.url, 8)
        self.machine.set_lost(2, True)
        took = self.wait_for(lambda m: value(m, "hwinfo_gpu_lost", gpu="2") == 1, 10)
        others = scrape(self.url)
        live = [value(others, "hwinfo_gpu_temperature_celsius", gpu=str(i)) for i in (0, 1, 3, 4)]
        self.machine.set_lost(2, False)
        back = self.wait_for(lambda m: value(m, "hwinfo_gpu_lost", gpu="2") == 0, 10)
        print(f"   marked lost after {_seconds(took)}; other GPUs reporting: "
              f"{all(v is not None for v in live)}; back after {_seconds(back)}; "
              f"scrapes: {load.result()}")

    def churn(self) -> None:
        print("3. MIG reconfigured between samples, short-lived processes, awkward names")
        load = Wrk(self.url, 15)
        parsed = 0
        ends = time.monotonic() + 15
        while time.monotonic() < ends:
            self.churn_once()
            scrape(self.url)  # raises if a name broke the exposition
            parsed += 1
            time.sleep(INTERVAL / 2)
        body = urllib.request.urlopen(self.url + "/metrics", timeout=5).read()
        promtool = shutil.which("promtool")
        check = "promtool not installed"
        if promtool:
            result = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                                    check=False)
            check = "promtool: no problems" if result.returncode == 0 else result.stdout.decode()
        print(f"   {self.churned} processes so far, {parsed} scrapes parsed; {check}; "
              f"scrapes: {load.result()}")

    def random_faults(self) -> None:
        seconds = self.minutes * 60
        print(f"4. random faults for {self.minutes:g} min, 20 concurrent scrapers")
        load = Wrk(self.url, seconds)
        time.sleep(2)
        start_rss, most_threads = rss_mib(), threads()
        ends = time.monotonic() + seconds - 3
        lost: set[int] = set()
        while time.monotonic() < ends:
            kind = self.rng.random()
            if kind < 0.6:
                self.churn_once()
            elif kind < 0.8:
                gpu = self.rng.choice([0, 1, 2, 4, 5])
                self.machine.set_lost(gpu, gpu not in lost)
                lost ^= {gpu}
            else:
                self.machine.inject_xid(self.rng.randrange(8), self.rng.choice([13, 31, 43, 48, 79]))
            most_threads = max(most_threads, threads())
            time.sleep(self.rng.uniform(0.05, 0.5))
        for gpu in lost:
            self.machine.set_lost(gpu, False)
        print(f"   scrapes: {load.result()}")
        print(f"   resident memory {start_rss:.1f} -> {rss_mib():.1f} MiB "
              f"({rss_mib() - start_rss:+.1f} MiB; target < 5), threads at most {most_threads}")


def driver_reload() -> None:
    print("5. NVML fails to start (driver reloading) and starts on the 4th attempt")
    doc = json.loads((Path(__file__).resolve().parents[1] / "hwinfo/sim/scenarios/cloud-t4.json")
                     .read_text())
    doc |= {"init_error": "DriverNotLoaded", "init_error_attempts": 3}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    proc = subprocess.Popen([sys.executable, "-m", "hwinfo", "serve", "--simulate", f.name,
                             "--address", "127.0.0.1", "--port", "0", "--interval", "0.5"],
                            stderr=subprocess.PIPE, text=True)
    try:
        port = next(int(m.group(1)) for line in proc.stderr  # type: ignore[union-attr]
                    if (m := re.search(r"listening on \S+:(\d+)", line)))
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # type: ignore[union-attr]
        url, started = f"http://127.0.0.1:{port}", time.monotonic()
        up = None
        while time.monotonic() - started < 30 and up != 1.0:
            try:
                up = value(scrape(url), "hwinfo_nvml_up")
            except OSError:
                pass
            time.sleep(0.2)
        print(f"   nvml_up became 1 after {time.monotonic() - started:.1f} s, by itself"
              if up == 1.0 else "   NEVER RECONNECTED")
    finally:
        proc.terminate()
        proc.wait()
        os.unlink(f.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    args = parser.parse_args()

    from hwinfo import sim
    from hwinfo.collect.gpu.collector import GpuCollector
    from hwinfo.collect.snapshot import SnapshotCollector
    from hwinfo.collect.sources import machine_owners
    from hwinfo.collect.sysfs import Root
    from hwinfo.exporter.daemon import Daemon, Options
    from hwinfo.exporter.exposition import Selection
    from hwinfo.exporter.http import Server

    doc = json.loads((Path(sim.__file__).parent / "scenarios" / f"{SCENARIO}.json").read_text())
    doc["faults"] = [{"call": "nvmlDeviceGetPowerUsage", "gpu": 7, "delay_seconds": 30,
                      "after_samples": HANG_AT_SAMPLE, "for_samples": 1}]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    machine = sim.install(f.name)
    collector = SnapshotCollector(Root("/"), GpuCollector(machine_owners(machine), between_samples=True))
    daemon = Daemon(collector, Options(interval=INTERVAL, nvml_timeout=2.0,
                                       selection=Selection(process_metrics=True)))
    server = Server(("127.0.0.1", 0), daemon.routes())
    url = f"http://127.0.0.1:{server.address[1]}"
    print(f"soak on {os.cpu_count()} CPUs: {SCENARIO} with per-process series, interval "
          f"{INTERVAL} s, NVML deadline 2 s; threads at start {threads()}, RSS {rss_mib():.1f} MiB")

    def control() -> None:
        try:
            controller = Controller(machine, url, args.minutes)
            controller.wait_for(lambda m: "hwinfo_gpus" in m, 20)
            controller.hang()
            controller.lost_gpu()
            controller.churn()
            controller.random_faults()
            driver_reload()
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=control, daemon=True).start()
    try:
        daemon.serve(server)
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    main()
