"""Real jobs whose verdicts are known, on this machine's cgroup v1: a real Slurm (task/cgroup,
jobacct_gather/cgroup: tests/deploy/slurm_stack.py) runs a job that burns its one CPU, one
that sleeps and one that sleeps while its GPU is busy; a real Docker daemon runs a container
that burns its 0.25-CPU quota and one that reads a file from disk (O_DIRECT, past the page
cache). Their processes are a scenario's GPU processes (tests/deploy/test_slurm.py says how);
a real daemon and Prometheus record them with the shipped rules.

The Slurm burner burns its one CPU at nice -19 on a machine shared with others: how much of
it it gets is the kernel's to say. It is cpu-bound either way: near its allotment, or starved
by others' work on its CPU, which /proc/stat shows saturated while it runs (cgroup v1 keeps no
CPU pressure). The container's 0.25-CPU quota is far below what any process gets here: it is
cpu-bound, truth and verdict alike.

The truth is computed by hand from the kernel's own counters over the same window: each job's
CPU time (cpuacct.usage) over its allotment and the wall time; the reader's bytes
(blkio.throttle.io_service_bytes_recursive) and its disk's busy time (/proc/diskstats). The
containers keep off the Slurm burner's CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import require

from hwinfo.collect import cgroup_files
from hwinfo.collect.cpu_load import CpuTimes, parse_cpu_times
from hwinfo.cpulist import format_cpulist, parse_cpulist
from hwinfo.ledger import verdict
from tests.deploy.container_stack import docker_image, dockerd, rootfs
from tests.deploy.ledger_stack import rules_every_second
from tests.deploy.prometheus_stack import Stack, prometheus_scraping, wait_for
from tests.deploy.slurm_stack import Slurm, slurm
from tests.exporter.serving import serving

BURN = "while :; do :; done"
# Evaluations of the rules (every second here) the window of the truth spans.
WINDOW_EVALUATIONS = 20
CGROUP = Path("/sys/fs/cgroup")
# GPU utilization of each job's GPU in the scenario, and the verdict it should have where its
# hand figures say so.
SLURM_JOBS = {"burn": (10, "--gres=gpu:2", f"exec nice -n -19 sh -c '{BURN}'", "sh"),
              "idle": (0, "--gres=gpu:1", "exec sleep 600", "sleep"),
              "busy": (80, "--gres=gpu:1", "exec sleep 601", "sleep")}
DOCKER_UTILIZATION = {"burner": 10, "reader": 20}


@dataclass
class Window:
    """The kernel's counters at the start and end of the window the figures are read over."""

    start: float
    end: float
    cpu: dict[str, tuple[float, float]]  # job -> CPU seconds at start and end
    read: tuple[int, int]  # the reader's bytes read
    disk: tuple[cgroup_files.DiskStat, cgroup_files.DiskStat]  # its disk
    host: tuple[CpuTimes, CpuTimes]  # /proc/stat
    cpusets: dict[str, list[int]]  # Slurm job -> its cpuset's CPUs

    def cpu_efficiency(self, job: str, allotted: float) -> float:
        before, after = self.cpu[job]
        return (after - before) / (self.end - self.start) / allotted

    def cpus_busy(self, job: str) -> float:
        """How busy the job's CPUs were, with anyone's work: their mean busy share."""
        before, after = self.host
        shares = [(after[c][0] - before[c][0]) / (after[c][1] - before[c][1])
                  for c in self.cpusets[job]]
        return sum(shares) / len(shares)


@dataclass
class Lab:
    slurm: Slurm
    jobs: dict[str, str]  # name -> Slurm job id
    containers: dict[str, str]  # name -> container id
    scenario: Path
    stack: Stack
    window: Window


def _slurm_cpu(cluster: Slurm, job: str) -> float:
    return int((cluster.job_cgroup("cpuacct", job) / "cpuacct.usage").read_text()) / 1e9


def _docker_cpu(container: str) -> float:
    return int((CGROUP / f"cpuacct/docker/{container}/cpuacct.usage").read_text()) / 1e9


def _reader(container: str) -> tuple[int, str]:
    """The reader's bytes read, and the device they came from (MAJ:MIN)."""
    text = (CGROUP / f"blkio/docker/{container}/blkio.throttle.io_service_bytes_recursive").read_text()
    found = cgroup_files.blkio(text) or {}
    device, (read, _) = max(found.items(), key=lambda kv: kv[1][0] or 0)
    return read or 0, device


def _counters(cluster: Slurm, jobs: dict[str, str], containers: dict[str, str]
              ) -> tuple[float, dict, int, cgroup_files.DiskStat, CpuTimes]:
    read, device = _reader(containers["reader"])
    disk = cgroup_files.diskstats(Path("/proc/diskstats").read_text())[device]
    cpu = {name: _slurm_cpu(cluster, job) for name, job in jobs.items()}
    cpu.update({name: _docker_cpu(c) for name, c in containers.items()})
    return time.time(), cpu, read, disk, parse_cpu_times(Path("/proc/stat").read_text())


def _cpuset(cluster: Slurm, job: str) -> list[int]:
    return parse_cpulist((cluster.job_cgroup("cpuset", job) / "cpuset.effective_cpus").read_text())


def _disk_of(path: Path) -> str:
    """/dev/<disk> of the whole disk a file's filesystem is on."""
    number = os.stat(path).st_dev
    device = Path(f"/sys/dev/block/{os.major(number)}:{os.minor(number)}").resolve()
    require(device.exists(), f"{path} is on no block device (tmpfs, overlay): nothing to read")
    disk = device.parent if (device / "partition").exists() else device
    return f"/dev/{disk.name}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    require(os.geteuid() == 0, "Slurm's and Docker's daemons run as root")
    require((CGROUP / "cpuacct").is_dir(), "the kernel's cgroup v1 hierarchies (this test's truth)")
    workdir = tmp_path_factory.mktemp("verdicts")
    data = workdir / "data" / "set.bin"
    data.parent.mkdir()
    with data.open("wb") as out:
        for _ in range(64):
            out.write(os.urandom(1 << 20))
    with ExitStack() as running:
        cluster = running.enter_context(slurm(workdir / "slurm", confined=True))
        jobs, pids = {}, {}
        for name, (_, gres, command, program) in SLURM_JOBS.items():
            jobs[name] = cluster.run("sbatch", "--parsable", "--oversubscribe", gres, "-c", "1",
                                     "-J", name, "-o", "/dev/null", "--wrap", command).strip()
            running.callback(subprocess.run, ["scancel", jobs[name]], env=cluster.env,
                             check=False, capture_output=True, timeout=30)
        for name, (_, _, _, program) in SLURM_JOBS.items():
            pids[name] = cluster.job_process(jobs[name], program)
        # The containers keep off the Slurm burner's CPU: it burns that one alone.
        burning = set(_cpuset(cluster, jobs["burn"]))
        others = format_cpulist(sorted(set(range(os.cpu_count() or 1)) - burning)) or "0"
        client = running.enter_context(dockerd(workdir / "docker"))
        bundle = workdir / "bundle"
        rootfs(bundle, ("sleep", "sh", "nice", "dd"))
        docker_image(client, bundle / "rootfs", "hwinfo-work:test")
        containers = {}
        for name, args in (
                ("burner", ["--cpus", "0.25", "hwinfo-work:test", "nice", "-n", "-19", "sh", "-c", BURN]),
                # A read limit far above what the disk does: since Linux 6.10, v1 counts a
                # cgroup's block I/O only on a disk some cgroup has a throttle limit on.
                ("reader", ["-v", f"{data.parent}:/data:ro", "--device-read-bps",
                            f"{_disk_of(data)}:100gb", "hwinfo-work:test", "nice", "-n",
                            "-19", "sh", "-c", ("while :; do dd if=/data/set.bin of=/dev/null "
                            "bs=8M iflag=direct 2>/dev/null; done")])):
            containers[name] = subprocess.run(
                [*client, "run", "--detach", "--network=none", "--cap-add=SYS_NICE",
                 f"--cpuset-cpus={others}", *args],
                capture_output=True, text=True, check=True, timeout=60).stdout.strip()
            running.callback(subprocess.run, [*client, "rm", "--force", containers[name]],
                             capture_output=True, timeout=60, check=False)
            pids[name] = int(subprocess.run(
                [*client, "inspect", "--format", "{{.State.Pid}}", containers[name]],
                capture_output=True, text=True, check=True, timeout=30).stdout)
        utilization = {**{n: u for n, (u, *_) in SLURM_JOBS.items()}, **DOCKER_UTILIZATION}
        scenario = workdir / "jobs.json"
        scenario.write_text(json.dumps({"format": 1, "description": "real jobs on A100s", "gpus": [
            {"board": "A100-SXM4-80GB", "utilization_gpu_percent": utilization[name],
             "processes": [{"pid": pid, "used_memory_mib": 4096, "user": "nobody",
                            "command": "train"}]} for name, pid in pids.items()]}))
        daemon = running.enter_context(serving("--simulate", str(scenario), "--root", "/",
                                               "--interval", "0.5"))
        stack = running.enter_context(prometheus_scraping(
            [daemon], workdir / "prometheus",
            rule_files=[rules_every_second(workdir, **{"[1m]": "[2s]"})]))
        stack.wait_until_scraped()
        every = (f"count(count_over_time(hwinfo:ledger_job_cpu_used:cpus[1m]) >= 3) == "
                 f"{len(jobs) + len(containers)}")
        wait_for("the jobs' first records", lambda: stack.query(every), timeout=90)
        start, cpu0, read0, disk0, host0 = _counters(cluster, jobs, containers)
        evaluations = f"count_over_time(hwinfo:ledger_evaluations:count[{round(time.time() - start) + 60}s])"
        first = float(stack.query(evaluations)[0]["value"][1])
        wait_for(f"{WINDOW_EVALUATIONS} evaluations", lambda: float(stack.query(
            evaluations)[0]["value"][1]) >= first + WINDOW_EVALUATIONS, timeout=120)
        end, cpu1, read1, disk1, host1 = _counters(cluster, jobs, containers)
        window = Window(start, end, {n: (cpu0[n], cpu1[n]) for n in cpu0}, (read0, read1),
                        (disk0, disk1), (host0, host1),
                        {name: _cpuset(cluster, job) for name, job in jobs.items()})
        yield Lab(cluster, jobs, containers, scenario, stack, window)


def hwinfo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                          text=True, timeout=120, check=False, env=env)


def _range(lab: Lab) -> list[str]:
    return ["--since", f"{round((lab.window.end - lab.window.start) * 1000)}ms", "--until",
            f"{lab.window.end:.3f}"]


def _job(lab: Lab, name: str, *more: str, env: dict[str, str] | None = None) -> dict:
    done = hwinfo("job", lab.jobs[name], "--prometheus", lab.stack.prometheus, *_range(lab),
                  "--format", "json", *more, env=env or lab.slurm.env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _expected(efficiency: float, utilization: float, cpus_busy: float = 0.0) -> str:
    """The verdict of a job whose GPU is `utilization` busy, whose CPU use is `efficiency` of
    its allotment and whose CPUs were `cpus_busy` with anyone's work, doing no I/O."""
    if utilization >= verdict.GPU_BUSY_RATIO:
        return "gpu-bound"
    if efficiency >= verdict.CPU_NEAR_RATIO or (cpus_busy >= verdict.CPU_SATURATED_RATIO
                                                and efficiency >= verdict.CPU_STARVED_RATIO):
        return "cpu-bound"
    return "idle" if utilization <= 0.05 else "underused"


@pytest.mark.parametrize("name", SLURM_JOBS)
def test_a_slurm_job_s_verdict_and_efficiency_are_the_hand_truth(lab: Lab, name: str) -> None:
    document = _job(lab, name)
    truth = lab.window.cpu_efficiency(name, 1.0)  # -c 1: a cpuset of one CPU
    assert document["cpu_efficiency"] == pytest.approx(min(1.0, truth), abs=0.1)
    busy = lab.window.cpus_busy(name)
    assert document["host"]["cpuset_busy_ratio"] == pytest.approx(busy, abs=0.1)
    assert document["verdict"] == _expected(truth, SLURM_JOBS[name][0] / 100, busy)
    limit = lab.slurm.job_cgroup("memory", lab.jobs[name]) / "memory.limit_in_bytes"
    assert document["host"]["memory_limit_bytes"] == int(limit.read_text())


def test_the_burner_is_cpu_bound_as_its_hand_truth_says(lab: Lab) -> None:
    """Near its allotment, or starved by others' work on its saturated CPU: cpu-bound."""
    efficiency, busy = lab.window.cpu_efficiency("burn", 1.0), lab.window.cpus_busy("burn")
    if efficiency < verdict.CPU_STARVED_RATIO:
        # cgroup v1 keeps no CPU pressure: a job that ran for under CPU_STARVED_RATIO of its
        # CPU looks like one that sleeps, and the hand truth is then not cpu-bound either
        # (the parametrized test above still holds the verdict to it).
        pytest.skip(f"the machine starved the burner to {efficiency:.1%} of its CPU "
                    f"({busy:.0%} busy): too little to tell it from a sleeper without pressure")
    assert _expected(efficiency, 0.1, busy) == "cpu-bound", (efficiency, busy)
    document = _job(lab, "burn")
    assert document["verdict"] == "cpu-bound"


def test_what_slurm_says_of_the_job_beside_what_the_ledger_saw(lab: Lab) -> None:
    """What jobstats prints, from the real controller: the burner asked for 2 GPUs; the
    ledger saw it hold 1 and use it (10 % busy)."""
    document = _job(lab, "burn")
    slurm = document["slurm"]
    assert (slurm["name"], slurm["user"], slurm["partition"], slurm["state"], slurm["nodes"],
            slurm["gpus_requested"], slurm["time_limit_seconds"], slurm["source"]) == (
        "burn", "root", "gpu", "RUNNING", lab.slurm.node, 2, None, "scontrol")
    assert slurm["elapsed_seconds"] > 0
    assert (document["gpus_held"], document["gpus_used"]) == (1, 1)
    text = hwinfo("job", lab.jobs["burn"], "--prometheus", lab.stack.prometheus, *_range(lab),
                  "--no-color", env=lab.slurm.env).stdout
    assert f"Verdict: {document['verdict']}" in text and "GPUs asked for 2, held 1, used 1" in text


def test_without_slurm_the_ledger_still_answers(lab: Lab) -> None:
    document = _job(lab, "idle", env={**lab.slurm.env, "PATH": ""})
    assert document["slurm"] is None and document["verdict"] == "idle"
    assert document["slurm_note"] == "cannot be asked here: no scontrol on PATH; no sacct on PATH"
    assert (document["gpus_held"], document["gpus_used"]) == (1, 0)
    assert _job(lab, "idle", "--no-slurm")["slurm_note"] == "not asked (--no-slurm)"


def _by_user(lab: Lab) -> dict[str, dict]:
    done = hwinfo("usage", "--prometheus", lab.stack.prometheus, *_range(lab), "--by", "user",
                  "--format", "json")
    assert done.returncode == 0, done.stderr
    return {row["user"]: row for row in json.loads(done.stdout)["rows"]}


def test_the_container_at_its_quota_is_cpu_bound(lab: Lab) -> None:
    truth = lab.window.cpu_efficiency("burner", 0.25)
    row = _by_user(lab)[f"docker:{lab.containers['burner'][:12]}"]
    assert row["cpu_efficiency"] == pytest.approx(min(1.0, truth), abs=0.1)
    assert row["verdict"] == _expected(truth, DOCKER_UTILIZATION["burner"] / 100) == "cpu-bound"


def test_the_container_reading_from_disk_is_io_bound(lab: Lab) -> None:
    """cgroup v1 keeps no I/O pressure: its disk's busy time, shared by the bytes it read,
    over the window, is the hand truth."""
    window = lab.window
    disk_before, disk_after = window.disk
    moved = disk_after.moved_bytes - disk_before.moved_bytes
    read = window.read[1] - window.read[0]
    busy = ((disk_after.busy_seconds - disk_before.busy_seconds) * min(1.0, read / moved)
            / (window.end - window.start))
    assert read > 0 and busy >= verdict.IO_BUSY_RATIO, (read, busy)
    row = _by_user(lab)[f"docker:{lab.containers['reader'][:12]}"]
    assert row["verdict"] == "io-bound"


def test_the_report_shows_each_process_s_job_cpu(lab: Lab) -> None:
    done = hwinfo("report", "--simulate", str(lab.scenario), "--root", "/", "--format", "json")
    jobs = {(j["slurm_job"] or j["container_id"]): j for j in json.loads(done.stdout)["jobs"]}
    assert jobs[lab.jobs["burn"]]["allotted_cpus"] == 1
    assert jobs[lab.containers["burner"]]["cpu_quota_cpus"] == 0.25
    assert all(j["busy_cpus"] is not None for j in jobs.values())
    text = hwinfo("report", "--simulate", str(lab.scenario), "--root", "/", "--no-color").stdout
    assert "Job CPU" in text and "/0.25" in text


def test_usage_by_job_has_each_job_s_efficiency_and_verdict(lab: Lab) -> None:
    done = hwinfo("usage", "--prometheus", lab.stack.prometheus, *_range(lab), "--by", "job",
                  "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = {row["job"]: row for row in json.loads(done.stdout)["rows"]}
    verdicts = {name: rows[job]["verdict"] for name, job in lab.jobs.items()}
    assert verdicts == {name: _expected(lab.window.cpu_efficiency(name, 1.0), utilization / 100,
                                        lab.window.cpus_busy(name))
                        for name, (utilization, *_) in SLURM_JOBS.items()}
    assert (verdicts["idle"], verdicts["busy"]) == ("idle", "gpu-bound")
    text = hwinfo("usage", "--prometheus", lab.stack.prometheus, *_range(lab), "--by", "job",
                  "--no-color").stdout
    header = next(line for line in text.splitlines() if line.strip().startswith("JOB"))
    assert header.split()[-3:] == ["CPU", "EFF", "VERDICT"]
