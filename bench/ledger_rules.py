"""What the ledger's minute rules cost the engine: Prometheus's own evaluation time of the
group `hwinfo-ledger` (GET /api/v1/rules, `evaluationTime`) on a lab of realistic size.

    .venv/bin/python bench/ledger_rules.py                       # 100 hosts, the shipped rules
    .venv/bin/python bench/ledger_rules.py --hosts 30 --rules old.yml --rules prometheus/hwinfo-ledger.yml

For each rule file, writes 90 minutes of the series `hwinfo serve` exports up to now
(bench/ledger_scale.py's lab: 8 GPUs a host, every tenth host in MIG mode, 40 users coming and
going; here every hold is also a Slurm job's, and whole GPUs sample their holders' SM
utilization, so that every branch of the rules has series to read), backfills them into a
Prometheus TSDB, starts Prometheus over it with the file's minute group evaluated every 10 s,
and takes the median of --evaluations evaluation times (the first, on cold caches, left out),
with the rules that cost most. Each file is timed on a lab written afresh: backfilled
samples must end before Prometheus's head, and its instant selectors see them for 5 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from ledger_scale import RULES, STEP, Device, Prometheus, families, gpu_labels, lab, run

MINUTE_GROUP = "hwinfo-ledger"
EVERY = "10s"  # the minute group's interval here, for evaluations in seconds, not minutes


def slurm_families(devices: list[Device], first: int, count: int, start: float
                   ) -> Iterator[tuple[str, Iterator[str]]]:
    """Each hold as a Slurm job's (one job a session), and each whole GPU's holder's SM samples."""
    minutes = range(first, first + count)

    def labels(d: Device, i: int) -> str:
        user = d.held[i][0] if d.held[i] else ""
        gi, ci = ("", "") if d.gi is None else (str(d.gi), "0")
        job = 1000 + (d.host * 97 + d.gpu * 13 + (d.gi or 0)) * 41 % 90000
        return (f'{gpu_labels(d.host, d.gpu)},gpu_instance_id="{gi}",compute_instance_id="{ci}",'
                f'user="{user}",slurm_job="{job}",pod_uid="",container_id=""')

    yield "hwinfo_gpu_attributed_memory_used_bytes", (
        f"{{{labels(d, i)}}} {d.held[i][2]:.0f} {start + i * STEP:.0f}"
        for d in devices for i in minutes if d.held[i])
    yield "hwinfo_gpu_user_sm_utilization_ratio", (
        f'{{{gpu_labels(d.host, d.gpu)},user="{d.held[i][0]}"}} {d.held[i][1]:.3f} {start + i * STEP:.0f}'
        for d in devices for i in minutes if d.held[i] and d.gi is None)


def write_lab(data: Path, hosts: int, gpus: int) -> None:
    """The lab's last 90 minutes, up to a minute before now, in `data`. Backfilled blocks must
    end before the head, where the rules write: Prometheus's instant selectors see their last
    samples for 5 minutes (its lookback), and each host's last GPU sample says it was taken an
    hour later than it was (the rules count a GPU whose data is over 60 s old as unseen)."""
    end = int(time.time()) // STEP * STEP - STEP
    minutes = 90
    start = end - (minutes - 1) * STEP
    devices = lab(hosts, gpus, minutes)
    staging = data.parent / "staging.om"
    with staging.open("w") as out:
        for name, lines in [*families(devices, hosts, gpus, 0, minutes, start, current=True),
                            *slurm_families(devices, 0, minutes, start)]:
            if name == "hwinfo_last_success_timestamp_seconds":
                lines = (f"{labels} {float(value) + 3600:.0f} {ts}"
                         for labels, value, ts in (line.rsplit(" ", 2) for line in lines))
            out.write(f"# TYPE {name} gauge\n")
            out.writelines(f"{name}{line}\n" for line in lines)
        out.write("# EOF\n")
    run("promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(staging), str(data))
    staging.unlink()


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has used (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def evaluation_times(prometheus: Prometheus, count: int
                     ) -> tuple[list[float], dict[str, list[float]], float]:
    """`count` evaluation times of the minute group, each rule's, as /api/v1/rules gives them,
    and Prometheus's CPU seconds per evaluation between the first and the last of them (on a
    busy machine, what the evaluations cost whatever else runs)."""
    seen: set[str] = set()
    group_times: list[float] = []
    rule_times: dict[str, list[float]] = {}
    cpu: list[float] = []
    assert prometheus.proc is not None
    deadline = time.monotonic() + 240  # the lab's last samples are 5 minutes old by then
    while len(group_times) < count and time.monotonic() < deadline:
        with urllib.request.urlopen(prometheus.url + "/api/v1/rules", timeout=30) as answer:
            groups = json.load(answer)["data"]["groups"]
        (group,) = [g for g in groups if g["name"] == MINUTE_GROUP]
        last = group.get("lastEvaluation", "")
        if group.get("evaluationTime") and last not in seen and not last.startswith("0001"):
            seen.add(last)
            if len(seen) > 1:  # the first evaluation reads cold caches
                cpu.append(cpu_seconds(prometheus.proc.pid))
                group_times.append(group["evaluationTime"])
                for rule in group["rules"]:
                    rule_times.setdefault(rule["name"], []).append(rule["evaluationTime"])
        time.sleep(1)
    per_evaluation = (cpu[-1] - cpu[0]) / (len(cpu) - 1) if len(cpu) > 1 else float("nan")
    return group_times, rule_times, per_evaluation


def measure(root: Path, rules: Path, hosts: int, gpus: int, count: int) -> None:
    """The lab written afresh under `root`, and Prometheus evaluating `rules` over it."""
    data = root / "data"
    data.mkdir(parents=True)
    write_lab(data, hosts, gpus)
    fast = data.parent / f"{rules.stem}-{EVERY}.yml"
    # Only the measured group runs faster: the jobs' group (interval 1m too) reads series this
    # lab has none of, and would add its own evaluations to Prometheus's CPU time.
    text, n = re.subn(rf"(- name: {MINUTE_GROUP}\n\s+interval:) 1m\b", rf"\1 {EVERY}",
                      rules.read_text())
    assert n == 1, f"{rules}: no group {MINUTE_GROUP} at `interval: 1m`"
    fast.write_text(text)
    prometheus = Prometheus(data)
    prometheus.start(fast)
    try:
        group_times, rule_times, cpu = evaluation_times(prometheus, count)
        series = prometheus.query("count(hwinfo:ledger_held:share)")
    finally:
        prometheus.stop()
    if not group_times:
        raise SystemExit(f"{rules}: no evaluation of {MINUTE_GROUP} recorded")
    median = statistics.median(group_times)
    print(f"{rules}: group {MINUTE_GROUP}, {len(group_times)} evaluations: median "
          f"{median * 1000:.0f} ms (min {min(group_times) * 1000:.0f}, max "
          f"{max(group_times) * 1000:.0f}); Prometheus CPU {cpu * 1000:.0f} ms an evaluation; "
          f"held series {series[0]['value'][1] if series else 0}",
          flush=True)
    costly = sorted(rule_times.items(), key=lambda item: -statistics.median(item[1]))[:6]
    for name, times in costly:
        print(f"    {name:<45} {statistics.median(times) * 1000:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--rules", type=Path, action="append", help=f"rule files (default {RULES})")
    parser.add_argument("--evaluations", type=int, default=10)
    args = parser.parse_args()
    print(f"ledger rules: {args.hosts} hosts x {args.gpus} GPUs", flush=True)
    with tempfile.TemporaryDirectory(prefix="hwinfo-ledger-rules-") as root:
        for n, rules in enumerate(args.rules or [RULES]):
            measure(Path(root) / str(n), rules.resolve(), args.hosts, args.gpus, args.evaluations)


if __name__ == "__main__":
    main()
