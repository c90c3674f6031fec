"""What reading the jobs' own cgroups costs a sample: `python bench/job_resources.py`.

Fixture hosts (tests/fixtures/job_cgroups.py's layouts) with N jobs, each a GPU process whose
cgroup holds every file the collector reads: Slurm jobs on cgroup v2 (ten files each: CPU,
cpuset, quota, memory, I/O, three pressures) and Docker containers on cgroup v1 (their eight),
at 8 jobs (one per GPU) and at 64 (the bound); then 8 v2 jobs whose cpu.stat is 16 MiB of
lines (a hostile tree). Prints the median of 30 samples of the collector alone (after one),
the per-job cost, and the jobs source's share of a whole daemon snapshot.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hwinfo import sim
from hwinfo.collect.job_resources import JobResourcesCollector
from hwinfo.collect.sources import open_collector
from hwinfo.collect.sysfs import Root

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fixtures.job_cgroups import DOCKER_V1, SLURM_V2, JobHost, write_host
from tests.fixtures.machines import MACHINES, write_tree

SAMPLES = 30
GPUS = 8
_HUGE = 16 * 2**20


def _hosts(template: JobHost, jobs: int) -> list[JobHost]:
    """`jobs` copies of the template's job, each its own id, pid and cgroup."""
    made = []
    for n in range(jobs):
        old_job, new_job = ("job_3385", f"job_{5000 + n}") if template is SLURM_V2 else (
            "5dace3de0735f73d2b5048f12d41a71741a02e49668de921fdae62f7e65dc498", f"{n:064x}")
        made.append(JobHost(f"{template.name}-{n}", 10_000 + n, template.uid,
                            template.cgroup.replace(old_job, new_job),
                            {k.replace(old_job, new_job): v for k, v in template.files.items()},
                            {}))
    return made


def _tree(where: Path, hosts: list[JobHost], huge: bool) -> str:
    root = write_tree(MACHINES["x86-2s-smt"], where)
    for host in hosts:
        write_host(host, root)
        if huge:
            stat = next(k for k in host.files if k.endswith("cpu.stat"))
            (root / stat).write_bytes(b"usage_usec 1\n" * (_HUGE // 13))
    scenario = where / "bench.json"
    per_gpu = [hosts[i::GPUS] for i in range(GPUS)]
    scenario.write_text(json.dumps({"format": 1, "description": "jobs", "gpus": [
        {"board": "H100-SXM5-80GB", "processes": [
            {"pid": h.pid, "used_memory_mib": 1024, "user": "nobody", "command": "python"}
            for h in group]} for group in per_gpu]}))
    return str(scenario)


def _measure(where: Path, hosts: list[JobHost], huge: bool = False) -> tuple[float, float, int]:
    """(collector median s, its share of a daemon snapshot, jobs read)."""
    scenario = _tree(where, hosts, huge)
    daemon = open_collector(str(where), sim.install(scenario), processes_below_root=True,
                            between_samples=True, nvml_timeout=600)
    try:
        snapshot = daemon.collect()
        gpu = snapshot.gpu
        jobs = JobResourcesCollector(Root(str(where)))
        jobs.collect(gpu)
        times = []
        for _ in range(SAMPLES):
            started = time.perf_counter()
            found = jobs.collect(gpu)
            times.append(time.perf_counter() - started)
        shares = []
        for _ in range(10):
            taken = daemon.collect().collection_seconds
            shares.append(taken["jobs"] / sum(taken.values()))
    finally:
        daemon.close()
    return statistics.median(times), statistics.median(shares), len(found)


def main() -> None:
    print(f"median of {SAMPLES} samples; Python {sys.version.split()[0]}")
    for what, template, count, huge in (
            ("Slurm jobs, cgroup v2", SLURM_V2, GPUS, False),
            ("Slurm jobs, cgroup v2", SLURM_V2, 64, False),
            ("Docker containers, cgroup v1", DOCKER_V1, GPUS, False),
            ("Docker containers, cgroup v1", DOCKER_V1, 64, False),
            ("Slurm jobs, v2, 16 MiB cpu.stat each", SLURM_V2, GPUS, True)):
        with tempfile.TemporaryDirectory() as where:
            median, share, read = _measure(Path(where), _hosts(template, count), huge)
        print(f"{read:3d} {what:<38} {median * 1000:7.2f} ms a sample, "
              f"{median / read * 1e6:6.0f} µs a job, {share:5.1%} of a snapshot")


if __name__ == "__main__":
    main()
