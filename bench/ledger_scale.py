"""The ledger at scale, on the engine we chose: months of labs of 10 to 100 hosts in a real
Prometheus, and the current state of 1,000 hosts.

    .venv/bin/python bench/ledger_scale.py                              # all of it (about an hour)
    .venv/bin/python bench/ledger_scale.py --hosts 5 --days 1 --fleet-hosts 50   # a quick look

For each lab size (--hosts, default 100, 30 and 10 hosts of 8 GPUs, --days of history):
1. Writes the series `hwinfo serve` exports that the ledger rules read, at 60 s resolution,
   for a lab whose users come and go: each GPU (or MIG device, on every tenth host) is held
   in sessions of a few hours by one of 40 users, busy or (one session in five) held idle,
   with free gaps between; what only `fleet` reads (current state) for the last 2 hours.
   One OpenMetrics file per 2-hour block, so that promtool parses each sample once.
2. Backfills them, starts Prometheus on the blocks, and backfills the shipped ledger rules
   with `promtool tsdb create-blocks-from rules`, one layer at a time (a rule that reads
   another recorded series needs that series backfilled first; two promtools per layer),
   the hourly roll-ups last.
3. Waits until Prometheus has compacted the backfilled blocks (a lab's Prometheus did that
   long ago), then times `hwinfo usage --since 7d` and `--since 30d`, by user (the table) and
   by host, as fresh processes, and checks the held GPU-hours against the generated truth.
After the first lab, the same for --fleet-hosts hosts (default 1,000) with 4 hours of data,
timing `hwinfo fleet --need-memory 40GiB` (and the listing, `hwinfo fleet`). It ends with the
growth table the README quotes.

The fleet's history ends an hour after its benchmark starts, so that at the time `fleet` is
timed the hosts have current data, as a live fleet would; the labs' ends before it starts.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from common import median_wall

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "prometheus" / "hwinfo-ledger.yml"
STEP = 60  # seconds between samples, as the shipped rules' interval
BLOCK = 2 * 3600  # seconds in one TSDB block that promtool cuts
MODEL = "NVIDIA A100-SXM4-80GB"
GIB = 2**30
RESERVED = GIB // 2  # what the driver keeps of each GPU's memory
USERS = [f"user{n:02d}" for n in range(40)]
# A MIG host's layout on each GPU: (GPU instance id, profile, share of the GPU, memory).
MIG_LAYOUT = [(2, "3g.40gb", 3 / 7, 39.5 * GIB), (3, "2g.20gb", 2 / 7, 19.5 * GIB),
              (9, "1g.10gb", 1 / 7, 9.5 * GIB), (10, "1g.10gb", 1 / 7, 9.5 * GIB)]
# What could still be created beside that layout (free instances, memory, share).
MIG_FREE = [("1g.10gb", 1, 9.5 * GIB, 1 / 7), ("2g.20gb", 0, 19.5 * GIB, 2 / 7),
            ("3g.40gb", 0, 39.5 * GIB, 3 / 7)]


@dataclass
class Device:
    """A whole GPU, or one MIG device; `held[i]` is (user, utilization, bytes) or None."""

    host: int
    gpu: int
    gi: int | None
    held: list[tuple[str, float, float] | None]


def sessions(rng: random.Random, minutes: int, max_bytes: float) -> list[tuple[str, float, float] | None]:
    """Minute by minute: free gaps, then a user's session, busy or (one in five) held idle."""
    out: list[tuple[str, float, float] | None] = []
    while len(out) < minutes:
        out.extend([None] * int(rng.expovariate(1 / 180)))
        user = rng.choice(USERS)
        utilization = rng.uniform(0.0, 0.03) if rng.random() < 0.2 else rng.uniform(0.4, 0.98)
        memory = rng.uniform(0.1, 0.9) * max_bytes
        out.extend([(user, utilization, memory)] * max(1, int(rng.expovariate(1 / 360))))
    return out[:minutes]


def lab(hosts: int, gpus: int, minutes: int, seed: int = 1) -> list[Device]:
    rng = random.Random(seed)
    devices = []
    for host in range(hosts):
        for gpu in range(gpus):
            if host % 10 == 9:
                devices += [Device(host, gpu, gi, sessions(rng, minutes, memory))
                            for gi, _, _, memory in MIG_LAYOUT]
            else:
                devices.append(Device(host, gpu, None, sessions(rng, minutes, 80 * GIB)))
    return devices


def instance(host: int) -> str:
    return f"gpu-node-{host:03d}:9110"


def uuid(host: int, gpu: int) -> str:
    return f"GPU-{host:08x}-0000-4000-8000-{gpu:012x}"


def gpu_labels(host: int, gpu: int) -> str:
    return f'job="hwinfo",instance="{instance(host)}",gpu="{gpu}",uuid="{uuid(host, gpu)}"'


def families(devices: list[Device], hosts: int, gpus: int, first: int, count: int,
             start: float, current: bool) -> Iterator[tuple[str, Iterator[str]]]:
    """(metric name, its sample lines) for minutes first .. first+count of the history; with
    `current`, the series only `fleet` reads too."""
    minutes = range(first, first + count)

    def ts(i: int) -> str:
        return f"{start + i * STEP:.0f}"

    def constant(labels: str, value: float) -> Iterator[str]:
        return (f"{{{labels}}} {value:g} {ts(i)}" for i in minutes)

    mig_hosts = {h for h in range(hosts) if h % 10 == 9}
    whole = [d for d in devices if d.gi is None]
    mig = [d for d in devices if d.gi is not None]
    gpu_keys = [(h, g) for h in range(hosts) for g in range(gpus)]
    host_labels = [f'job="hwinfo",instance="{instance(h)}"' for h in range(hosts)]

    yield "up", (line for labels in host_labels for line in constant(labels, 1))
    yield "hwinfo_collection_stalled", (line for labels in host_labels
                                        for line in constant(f'{labels},source="gpu"', 0))
    yield "hwinfo_last_success_timestamp_seconds", (
        f'{{{labels},source="gpu"}} {ts(i)} {ts(i)}' for labels in host_labels for i in minutes)
    yield "hwinfo_gpu_info", (line for h, g in gpu_keys for line in constant(
        f'{gpu_labels(h, g)},name="{MODEL}",architecture="ampere",driver_version="550.54.15"', 1))
    yield "hwinfo_gpu_mig_enabled", (line for h, g in gpu_keys
                                     for line in constant(gpu_labels(h, g), int(h in mig_hosts)))
    yield "hwinfo_gpu_power_draw_watts", (
        f"{{{gpu_labels(d.host, d.gpu)}}} {60 + 300 * (d.held[i][1] if d.held[i] else 0):.1f} {ts(i)}"
        for d in whole for i in minutes)
    yield "hwinfo_gpu_utilization_ratio", (
        f"{{{gpu_labels(d.host, d.gpu)}}} {d.held[i][1] if d.held[i] else 0:.3f} {ts(i)}"
        for d in whole for i in minutes)
    yield "hwinfo_gpu_user_memory_used_bytes", (
        f'{{{gpu_labels(d.host, d.gpu)},user="{d.held[i][0]}"}} {d.held[i][2]:.0f} {ts(i)}'
        for d in whole for i in minutes if d.held[i])
    layout = {gi: (profile, share, memory) for gi, profile, share, memory in MIG_LAYOUT}

    def mig_labels(d: Device) -> str:
        return f'{gpu_labels(d.host, d.gpu)},gpu_instance_id="{d.gi}",compute_instance_id="0"'

    yield "hwinfo_mig_device_gpu_share_ratio", (line for d in mig for line in constant(
        f'{mig_labels(d)},profile="{layout[d.gi or 0][0]}"', layout[d.gi or 0][1]))
    yield "hwinfo_mig_device_user_memory_used_bytes", (
        f'{{{mig_labels(d)},user="{d.held[i][0]}"}} {d.held[i][2]:.0f} {ts(i)}'
        for d in mig for i in minutes if d.held[i])
    if not current:
        return
    yield "hwinfo_gpus", (line for labels in host_labels for line in constant(labels, gpus))
    yield "hwinfo_gpu_lost", (line for h, g in gpu_keys for line in constant(gpu_labels(h, g), 0))
    yield "hwinfo_gpu_memory_total_bytes", (line for h, g in gpu_keys
                                            for line in constant(gpu_labels(h, g), 80 * GIB))
    yield "hwinfo_gpu_processes", (f"{{{gpu_labels(d.host, d.gpu)}}} {1 if d.held[i] else 0} {ts(i)}"
                                   for d in whole for i in minutes)
    yield "hwinfo_gpu_user_processes", (
        f'{{{gpu_labels(d.host, d.gpu)},user="{d.held[i][0]}"}} 1 {ts(i)}'
        for d in whole for i in minutes if d.held[i])
    yield "hwinfo_mig_device_user_processes", (
        f'{{{mig_labels(d)},user="{d.held[i][0]}"}} 1 {ts(i)}'
        for d in mig for i in minutes if d.held[i])
    # What a GPU's holders use (a MIG GPU's: its devices' holders), and what is left to a new
    # job after the driver's reserve.
    used: dict[tuple[int, int], list[float]] = {}
    for d in devices:
        row = used.setdefault((d.host, d.gpu), [0.0] * count)
        for n, i in enumerate(minutes):
            row[n] += d.held[i][2] if d.held[i] else 0.0
    yield "hwinfo_gpu_memory_used_bytes", (
        f"{{{gpu_labels(h, g)}}} {row[n]:.0f} {ts(i)}"
        for (h, g), row in used.items() for n, i in enumerate(minutes))
    yield "hwinfo_gpu_memory_free_bytes", (
        f"{{{gpu_labels(h, g)}}} {80 * GIB - RESERVED - row[n]:.0f} {ts(i)}"
        for (h, g), row in used.items() for n, i in enumerate(minutes))
    yield "hwinfo_mig_device_info", (line for d in mig for line in constant(
        f'{mig_labels(d)},mig_index="{d.gi}",mig_uuid="MIG-{d.host:04x}{d.gpu:04x}{d.gi:04x}",'
        f'profile="{layout[d.gi or 0][0]}"', 1))
    yield "hwinfo_mig_gpu_instance_memory_total_bytes", (line for d in mig for line in constant(
        f'{gpu_labels(d.host, d.gpu)},gpu_instance_id="{d.gi}",profile="{layout[d.gi or 0][0]}"',
        layout[d.gi or 0][2]))
    yield "hwinfo_mig_device_processes", (
        f"{{{mig_labels(d)}}} {1 if d.held[i] else 0} {ts(i)}" for d in mig for i in minutes)
    mig_gpus = [(h, g) for h, g in gpu_keys if h in mig_hosts]
    for name, index in (("hwinfo_mig_profile_free_instances", 1),
                        ("hwinfo_mig_profile_memory_bytes", 2),
                        ("hwinfo_mig_profile_gpu_share_ratio", 3)):
        yield name, (line for h, g in mig_gpus for free in MIG_FREE for line in constant(
            f'{gpu_labels(h, g)},profile="{free[0]}"', free[index]))


def expected_held_hours(devices: list[Device], start: float, since: float, until: float) -> float:
    """What the lab holds in (since, until], by construction: each device's share per minute."""
    share = {gi: s for gi, _, s, _ in MIG_LAYOUT}
    total = 0.0
    for d in devices:
        weight = 1.0 if d.gi is None else share[d.gi]
        total += weight * sum(1 for i, h in enumerate(d.held) if h and since < start + i * STEP <= until)
    return total * STEP / 3600


def write_block(path: Path, devices: list[Device], hosts: int, gpus: int,
                first: int, count: int, start: float, current: bool) -> int:
    """One OpenMetrics file of `count` minutes; the number of samples written."""
    samples = 0
    with path.open("w") as out:
        for name, lines in families(devices, hosts, gpus, first, count, start, current):
            out.write(f"# TYPE {name} gauge\n")
            for line in lines:
                out.write(f"{name}{line}\n")
                samples += 1
        out.write("# EOF\n")
    return samples


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(*argv: str, cwd: Path | None = None) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        sys.exit(f"{argv[0]} {argv[1:4]} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


class Prometheus:
    """A Prometheus on loopback over a data directory, scraping nothing. With `lookback`, its
    instant selectors look back that far instead of 5 minutes."""

    def __init__(self, data: Path, lookback: str | None = None) -> None:
        self.data, self.port, self.proc = data, free_port(), None
        self.lookback = lookback
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self, rules: Path | None = None) -> None:
        config = self.data.parent / "prometheus.yml"
        config.write_text(json.dumps({"global": {"scrape_interval": "1m"},
                                      "rule_files": [str(rules)] if rules else []}))
        log = (self.data.parent / "prometheus.log").open("ab")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={self.data}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=30d",
             *([f"--query.lookback-delta={self.lookback}"] if self.lookback else [])],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 300  # opening a week of blocks takes a while
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        sys.exit("Prometheus did not become ready in 300 s")

    def settle(self, quiet_seconds: float = 90.0, limit_seconds: float = 900.0) -> None:
        """Wait until Prometheus has compacted what was just backfilled: it merges the
        2-hour blocks into larger ones (a lab's Prometheus did that long ago), and a week of
        small blocks makes every query slower. Compaction is checked each minute, so the
        block count must hold for longer than that."""
        def state() -> str:
            with urllib.request.urlopen(self.url + "/metrics", timeout=10) as answer:
                text = answer.read().decode()
            return " ".join(line for line in text.splitlines() if line.startswith(
                ("prometheus_tsdb_blocks_loaded ", "prometheus_tsdb_compactions_total ")))

        deadline = time.monotonic() + limit_seconds
        last, since = state(), time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < quiet_seconds:
            time.sleep(1)
            now = state()
            if now != last:
                last, since = now, time.monotonic()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
            self.proc = None

    def query(self, expr: str) -> list[dict]:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=120) as answer:
            return json.load(answer)["data"]["result"]


def rule_layers(workdir: Path) -> list[Path]:
    """The ledger's recording rules in files that promtool can backfill one after another:
    each file's rules read only raw series and rules of earlier files (each group keeps its
    interval: the roll-ups are evaluated hourly)."""
    layers = []
    done: set[str] = set()
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        rules = [r for r in group["rules"] if "record" in r]
        names = {r["record"] for r in rules}
        while not names <= done:
            ready = [r for r in rules if r["record"] not in done
                     and set(re.findall(r"hwinfo:[a-z_0-9]+:[a-z_0-9]+", r["expr"])) & names <= done]
            path = workdir / f"rules-{len(layers)}.yml"
            path.write_text(yaml.safe_dump({"groups": [{**group, "rules": ready}]}))
            layers.append(path)
            done |= {r["record"] for r in ready}
    return layers


# promtool evaluates a group at a phase hashed from its name and its file's name, as
# Prometheus does: every layer's file has this name (in a directory of its own), so that
# each group is evaluated at one phase, as live, and a record reads the one it chains on at
# the same instant.
LAYER_FILE = "rules.yml"


def halves(layer: Path) -> list[Path]:
    """A layer's rules in two directories' LAYER_FILE, to backfill side by side; the hourly
    roll-ups in one, so that they count their hours alike (one, too, for a single rule)."""
    group = yaml.safe_load(layer.read_text())["groups"][0]
    parts = ([group["rules"]] if group["interval"] == "1h"
             else [group["rules"][0::2], group["rules"][1::2]])
    paths = []
    for n, rules in enumerate(part for part in parts if part):
        path = layer.with_name(f"{layer.stem}-{n}") / LAYER_FILE
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump({"groups": [{**group, "rules": rules}]}))
        paths.append(path)
    return paths


def move_blocks(source: Path, data: Path) -> None:
    if not source.is_dir():  # promtool writes no directory where the rules recorded nothing
        return
    for block in source.iterdir():
        if block.is_dir():
            shutil.move(str(block), data / block.name)


def size_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def backfill(workdir: Path, hosts: int, gpus: int, days: float,
             ahead: bool) -> tuple[Prometheus, list[Device], float]:
    """A lab's history written, backfilled with its ledger rules, and compacted: a running
    Prometheus over it (with the shipped rules loaded), its devices and its start. With
    `ahead`, the history runs an hour past now, so that the hosts' data is current while
    `fleet` is timed; else it ends before now, where the live rules' evaluations begin (an
    hour of both would count that hour's minutes twice, and usage would rightly refuse that
    hour's roll-ups)."""
    data, staging = workdir / "data", workdir / "staging"
    for path in (data, staging):
        path.mkdir(parents=True, exist_ok=True)
    minutes = round(days * 1440)
    # On a block boundary as promtool cuts them.
    end = (int(time.time()) + (3600 + BLOCK if ahead else 0)) // BLOCK * BLOCK
    start = end - minutes * STEP
    print(f"ledger scale: {hosts} hosts x {gpus} GPUs x {days:g} days at {STEP} s "
          f"(every tenth host MIG), in {workdir}", flush=True)
    began = time.monotonic()
    devices = lab(hosts, gpus, minutes)
    per_block = BLOCK // STEP
    samples, files = 0, []
    for n, first in enumerate(range(0, minutes, per_block)):
        path = staging / f"{n:04d}.om"
        count = min(per_block, minutes - first)
        # The series only `fleet` reads, in the last two blocks: with `ahead`, now lies in them.
        samples += write_block(path, devices, hosts, gpus, first, count, start,
                               current=first + count > minutes - 2 * per_block)
        files.append(path)
    print(f"  wrote {samples:,} samples in {len(files)} files: {time.monotonic() - began:.0f} s",
          flush=True)

    began = time.monotonic()

    def openmetrics(path: Path) -> None:
        run("promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(path), str(data))
        path.unlink()

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(openmetrics, files))
    print(f"  promtool create-blocks-from openmetrics: {time.monotonic() - began:.0f} s", flush=True)

    # Backfilled series carry no staleness markers: with the default 5-minute lookback a
    # session's last sample would count for 5 minutes after it ends, and each layer of rules
    # reading a record backfilled before it would add 5 more (busy ran past held). Samples
    # and evaluations are a minute apart on the minute, so 59 s sees each sample at its own
    # minute only, as a scraped series marked stale would be. The fleet is read at any
    # second between two samples: it keeps the default.
    prometheus = Prometheus(data, lookback=None if ahead else "59s")
    began = time.monotonic()

    def rules(layer: Path) -> None:
        output = layer.parent / "blocks"
        run("promtool", "tsdb", "create-blocks-from", "rules", "-q", f"--url={prometheus.url}",
            f"--start={start}", f"--end={end}", f"--output-dir={output}", LAYER_FILE,
            cwd=layer.parent)
        move_blocks(output, data)

    for layer in rule_layers(workdir):
        prometheus.start()
        # Two promtools at once: Prometheus answers each query on one core.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(rules, halves(layer)))
        prometheus.stop()
    print(f"  promtool create-blocks-from rules (the ledger rules, in layers): "
          f"{time.monotonic() - began:.0f} s", flush=True)
    # The shipped rules, as a lab runs them: `usage` reads their intervals from Prometheus.
    prometheus.start(RULES)
    began = time.monotonic()
    prometheus.settle()
    print(f"  Prometheus compacted the backfilled blocks: {time.monotonic() - began:.0f} s")
    # The series of the last 3 hours: a lab's history may end before now.
    series = int(float(prometheus.query("count(last_over_time({__name__=~'.+'}[3h]))")[0]["value"][1]))
    print(f"  TSDB: {size_mib(data):,.0f} MiB, {series:,} series", flush=True)
    return prometheus, devices, start


HWINFO = [sys.executable, "-m", "hwinfo"]
TARGETS = {"7d": 0.5, "30d": 1.0}  # usage over 100 hosts


def time_usage(prometheus: Prometheus, devices: list[Device], start: float, days: float,
               runs: int, by: str = "user") -> dict[str, float]:
    """`usage --since` 7d and 30d (those the history covers) `--by` user or host: medians,
    held checked."""
    medians = {}
    for since, span_days in (("7d", 7), ("30d", 30)):
        if span_days > days:
            continue
        argv = [*HWINFO, "usage", "--prometheus", prometheus.url, "--since", since, "--by", by]
        med, lo, hi = median_wall(argv, runs)
        medians[since] = med
        until = time.time()
        shown = subprocess.run([*argv, "--until", f"{until:.0f}", "--format", "json"],
                               capture_output=True, text=True, check=True)
        held = json.loads(shown.stdout)["totals"]["held_gpu_seconds"] / 3600
        truth = expected_held_hours(devices, start, until - span_days * 86400, until)
        print(f"  hwinfo usage --since {since:<4} --by {by:<4} median {med:6.2f} s (min {lo:.2f}, max {hi:.2f}); "
              f"held GPU-hours {held:,.1f}, the generated lab {truth:,.1f} ({(held - truth) / truth:+.2%})",
              flush=True)
    return medians


def time_fleet(root: Path, hosts: int, gpus: int, runs: int) -> tuple[float, float, float]:
    """`fleet --need-memory 40GiB` over `hosts` hosts' current state: median, min, max; and
    the listing of every GPU (`fleet`), printed only."""
    # Four hours ending one to three hours past now (promtool's 2-hour blocks).
    prometheus, _, _ = backfill(root / "fleet", hosts, gpus, 4 / 24, ahead=True)
    argv = [*HWINFO, "fleet", "--prometheus", prometheus.url]
    try:
        fits = median_wall([*argv, "--need-memory", "40GiB"], runs)
        listing = median_wall(argv, runs)
    finally:
        prometheus.stop()
    for name, (med, lo, hi) in (("fleet --need-memory 40GiB", fits), ("fleet", listing)):
        print(f"  hwinfo {name:<25} median {med:6.2f} s (min {lo:.2f}, max {hi:.2f})", flush=True)
    return fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", default="100,30,10", help="lab sizes, comma-separated")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--days", type=float, default=30)
    parser.add_argument("--fleet-hosts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command")
    parser.add_argument("--keep", type=Path, help="work here and keep the data (default: a temporary directory)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="hwinfo-ledger-scale-"))
    table: dict[int, dict[str, float]] = {}
    fleet: tuple[float, float, float] | None = None
    try:
        # The fleet after the first (largest) lab: its figures come first if a run is cut short.
        for n, hosts in enumerate(int(n) for n in args.hosts.split(",")):
            prometheus, devices, start = backfill(root / f"{hosts}-hosts", hosts, args.gpus,
                                                  args.days, ahead=False)
            try:
                table[hosts] = time_usage(prometheus, devices, start, args.days, args.runs)
                time_usage(prometheus, devices, start, args.days, args.runs, by="host")
            finally:
                prometheus.stop()
            if args.keep is None:
                shutil.rmtree(root / f"{hosts}-hosts", ignore_errors=True)
            if n == 0:
                fleet = time_fleet(root, args.fleet_hosts, args.gpus, args.runs)
        print(f"\n| hosts x {args.gpus} GPUs | " + " | ".join(f"usage --since {s}" for s in TARGETS) + " |")
        print("|---|" + "---|" * len(TARGETS))
        for hosts, medians in table.items():
            print(f"| {hosts} | " + " | ".join(
                f"{medians[s]:.2f} s" if s in medians else "" for s in TARGETS) + " |")
        if fleet is not None:
            print(f"\nhwinfo fleet --need-memory 40GiB over {args.fleet_hosts} hosts: median "
                  f"{fleet[0]:.2f} s (min {fleet[1]:.2f}, max {fleet[2]:.2f}), target 0.5 s")
        for since, target in TARGETS.items():
            if 100 in table and since in table[100]:
                verdict = "ok" if table[100][since] <= target else "OVER"
                print(f"usage --since {since} over 100 hosts: {table[100][since]:.2f} s, "
                      f"target {target:g} s: {verdict}")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
