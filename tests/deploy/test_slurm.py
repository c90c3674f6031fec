"""A real Slurm job as the GPU process of a simulated scenario: the report, the metrics, the
ledger (`usage --by job`) and `hwinfo job` must name the job, from its cgroup alone.

The job runs `sleep` under proctrack/cgroup (tests/deploy/slurm_stack.py); a scenario names
that process's real PID, and `--root /` makes hwinfo look it up in this machine's /proc.
Two daemons serve the same scenario, so Prometheus sees the job on two hosts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.ledger_stack import rules_every_second
from tests.deploy.prometheus_stack import Stack, prometheus_scraping, wait_for
from tests.deploy.slurm_stack import Slurm, slurm
from tests.exporter.serving import Daemon, serving

RULE_SAMPLES = 10
# The job's process holds 30 GiB of a busy 80 GiB A100 beside an untracked 10 GiB one of
# bob's (a PID no process has here: the scenario's owner stands).
JOB_MIB, OTHER_MIB = 30720, 10240


@dataclass
class Lab:
    slurm: Slurm
    job: str
    pid: int
    array_job: str  # an array of one task, 7: its process is on the second GPU
    array_pid: int
    scenario: Path
    daemons: list[Daemon]
    prometheus: Stack


def _scenario(pid: int, array_pid: int) -> dict[str, object]:
    return {"format": 1, "description": "a Slurm job's process on an A100", "gpus": [
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 80, "power_draw_w": 250,
         "processes": [
             {"pid": pid, "used_memory_mib": JOB_MIB, "user": "nobody", "command": "sleep"},
             {"pid": 4_000_000, "used_memory_mib": OTHER_MIB, "user": "bob",
              "command": "python other.py"}]},
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 0, "power_draw_w": 50,
         "processes": [{"pid": array_pid, "used_memory_mib": 1024, "user": "nobody",
                        "command": "sleep"}]}]}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    workdir = tmp_path_factory.mktemp("slurm")
    with ExitStack() as running:
        cluster = running.enter_context(slurm(workdir / "slurm"))
        job = cluster.run("sbatch", "--parsable", "--gres=gpu:1", "-o", "/dev/null",
                          "--wrap", "exec sleep 600").strip().split(";")[0]
        running.callback(lambda: subprocess.run(["scancel", job], env=cluster.env, check=False,
                                                capture_output=True, timeout=30))
        pid = cluster.job_process(job, "sleep")
        array_job = cluster.run("sbatch", "--parsable", "--array=7", "-o", "/dev/null",
                                "--wrap", "exec sleep 600").strip().split(";")[0]
        running.callback(lambda: subprocess.run(["scancel", array_job], env=cluster.env,
                                                check=False, capture_output=True, timeout=30))
        array_pid = cluster.job_process(array_job, "sleep")
        scenario = workdir / "slurm-job.json"
        scenario.write_text(json.dumps(_scenario(pid, array_pid)))
        daemons = [running.enter_context(serving("--simulate", str(scenario), "--root", "/",
                                                 "--interval", "0.5")) for _ in range(2)]
        stack = running.enter_context(prometheus_scraping(
            daemons, workdir / "prometheus", rule_files=[rules_every_second(workdir)]))
        stack.wait_until_scraped()
        wait_for(f"{RULE_SAMPLES} evaluations of the attribution rules",
                 lambda: _attributed(stack, job, pid), timeout=120)
        yield Lab(cluster, job, pid, array_job, array_pid, scenario, daemons, stack)


def _attributed(stack: Stack, job: str, pid: int) -> bool:
    """Whether the rules have charged the job RULE_SAMPLES times on each host; if not, what
    was seen (for wait_for's message)."""
    counts = [float(series["value"][1]) for series in stack.query(
        f'count_over_time(hwinfo:ledger_attributed_held:share{{slurm_job="{job}"}}[1m])')]
    assert len(counts) == 2 and min(counts) >= RULE_SAMPLES, (
        f"job {job}'s evaluations per host: {counts}; its process {pid} "
        + ("runs" if Path(f"/proc/{pid}").exists() else "has ended"))
    return True


def hwinfo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_the_job_process_sits_in_the_slurm_cgroup(lab: Lab) -> None:
    text = Path(f"/proc/{lab.pid}/cgroup").read_text()
    assert f"/job_{lab.job}/step_batch" in text, text


def test_report_names_the_job(lab: Lab) -> None:
    done = hwinfo("report", "--simulate", str(lab.scenario), "--root", "/", "--format", "json")
    procs = {p["pid"]: p for g in json.loads(done.stdout)["gpu"]["gpus"] for p in g["processes"]}
    attribution = procs[lab.pid]["attribution"]
    assert (attribution["kind"], attribution["slurm_job"], attribution["slurm_step"]) == (
        "slurm", lab.job, "batch")
    assert procs[lab.pid]["user"] == "root"  # the job's real user, not the scenario's
    assert procs[4_000_000]["attribution"] is None and procs[4_000_000]["user"] == "bob"
    # An array task as Slurm names it (the daemon, as root, may read the environment).
    task = procs[lab.array_pid]["attribution"]
    assert (task["slurm_job"], task["slurm_array_task"]) == (lab.array_job, f"{lab.array_job}_7")
    text = hwinfo("report", "--simulate", str(lab.scenario), "--root", "/", "--no-color").stdout
    assert f"slurm:{lab.job}.batch" in text and f"slurm:{lab.array_job}_7.batch" in text


def test_the_metrics_name_the_job(lab: Lab) -> None:
    with urllib.request.urlopen(lab.daemons[0] + "/metrics", timeout=10) as response:
        metrics = response.read().decode()
    line = next(line for line in metrics.splitlines()
                if line.startswith("hwinfo_gpu_attributed_memory_used_bytes{"))
    assert f'slurm_job="{lab.job}"' in line and 'user="root"' in line
    assert float(line.rsplit(" ", 1)[1]) == JOB_MIB * 2**20


def test_usage_by_job_names_the_job_on_both_hosts(lab: Lab) -> None:
    done = hwinfo("usage", "--prometheus", lab.prometheus.prometheus, "--since", "1m",
                  "--by", "job", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = {row["job"]: row for row in json.loads(done.stdout)["rows"]}
    assert set(rows) == {lab.job, lab.array_job}
    row = rows[lab.job]
    # 30 of the GPU's 40 GiB held: 3/4 of a GPU on each of two hosts; the GPU is 80 % busy.
    by_user = json.loads(hwinfo("usage", "--prometheus", lab.prometheus.prometheus, "--since",
                                "1m", "--format", "json").stdout)
    bob = next(r for r in by_user["rows"] if r["user"] == "bob")
    assert row["held_gpu_seconds"] / bob["held_gpu_seconds"] == pytest.approx(3, rel=0.1)
    # Busy throughout; the activity the rules read is the ledger group's, so the first
    # evaluations after Prometheus starts can be unknown (never idle).
    assert row["idle_held_gpu_seconds"] == 0 and row["busy_gpu_seconds"] > 0
    assert row["busy_gpu_seconds"] + row["unknown_gpu_seconds"] == pytest.approx(row["held_gpu_seconds"])
    assert row["mean_utilization_ratio"] == pytest.approx(0.8)
    assert row["peak_memory_bytes"] == JOB_MIB * 2**20


def test_job_report_adds_up_its_hosts(lab: Lab) -> None:
    done = hwinfo("job", lab.job, "--prometheus", lab.prometheus.prometheus, "--since", "1m",
                  "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["slurm_job"] == lab.job and document["users"] == ["root"]
    assert len(document["hosts"]) == 2 and len(document["gpus"]) == 2
    gpus = document["gpus"]
    assert all(g["gpu"] == "0" and g["model"] == "NVIDIA A100-SXM4-80GB" for g in gpus)
    assert document["totals"]["held_gpu_seconds"] == pytest.approx(
        sum(g["held_gpu_seconds"] for g in gpus))
    for gpu in gpus:
        assert gpu["held_gpu_seconds"] == pytest.approx(0.75 * gpu["held_seconds"], rel=0.1)
        assert gpu["busy_ratio"] == 1 and gpu["mean_utilization_ratio"] == pytest.approx(0.8)
        assert gpu["idle_held_gpu_seconds"] == 0
        assert gpu["peak_memory_bytes"] == JOB_MIB * 2**20
        assert gpu["memory_total_bytes"] == 80 * 2**30
    text = hwinfo("job", lab.job, "--prometheus", lab.prometheus.prometheus, "--since", "1m",
                  "--no-color").stdout
    assert f"Slurm job {lab.job}" in text and "2 hosts" in text and "30.0 GiB / 80.0 GiB" in text


def test_an_unknown_job_is_one_line_and_exit_1(lab: Lab) -> None:
    done = hwinfo("job", "999999", "--prometheus", lab.prometheus.prometheus, "--since", "1m")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "Slurm job 999999" in done.stderr


def test_series_end_with_the_job(lab: Lab) -> None:
    lab.slurm.run("scancel", lab.job)
    wait_for("the job's process to end", lambda: not Path(f"/proc/{lab.pid}").exists())

    def gone() -> bool:
        with urllib.request.urlopen(lab.daemons[0] + "/metrics", timeout=10) as response:
            series = [line for line in response.read().decode().splitlines()
                      if line.startswith("hwinfo_gpu_attributed_memory_used_bytes{")]
        # The array task still runs: its series stays. (What was seen goes in the message.)
        assert not any(f'slurm_job="{lab.job}"' in line for line in series), series
        assert any(f'slurm_job="{lab.array_job}"' in line for line in series), series
        return True

    wait_for("the job's series to end", gone)
