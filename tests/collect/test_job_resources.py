"""The jobs' own cgroups read by the snapshot, on fixture hosts of cgroup v1 and v2 whose
truth is known (tests/fixtures/job_cgroups.py), and on hostile files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hwinfo import sim
from hwinfo.collect.job_resources import JobResourcesCollector, jobs_on
from hwinfo.collect.sources import open_collector
from hwinfo.collect.sysfs import Root
from hwinfo.model.attribution import ATTRIBUTED_LIMIT, Attribution
from hwinfo.model.gpu import Gpu, GpuProcess, GpuSystem
from hwinfo.model.jobs import JobResources
from tests.fixtures.job_cgroups import (
    DISKSTATS,
    DOCKER_V1,
    HOSTS,
    POD_V2,
    SLURM_V1,
    SLURM_V2,
    JobHost,
    write_host,
)


def _scenario(tmp_path: Path, pids: list[int], gib: int = 30) -> str:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"format": 1, "description": "jobs", "gpus": [
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 30, "processes": [
            {"pid": pid, "used_memory_mib": gib * 1024, "user": "nobody", "command": "python"}
            for pid in pids]}]}))
    return str(path)


def _jobs(root: Path, pids: list[int], daemon: bool = True) -> list[JobResources]:
    collector = open_collector(str(root), sim.install(_scenario(root, pids)), between_samples=daemon,
                               processes_below_root=True)
    try:
        snapshot = collector.collect()
    finally:
        collector.close()
    assert snapshot.jobs is not None
    return snapshot.jobs


@pytest.mark.parametrize("host", HOSTS, ids=[h.name for h in HOSTS])
def test_a_job_s_own_cgroup_is_read(tmp_path: Path, host: JobHost) -> None:
    (job,) = _jobs(write_host(host, tmp_path), [host.pid])
    assert {k: getattr(job, k) for k in host.expected} == host.expected
    assert job.busy_cpus is None  # one reading: no rate yet


def test_slurm_v2_io_and_pressure(tmp_path: Path) -> None:
    (job,) = _jobs(write_host(SLURM_V2, tmp_path), [SLURM_V2.pid])
    # cgroup-v2.rst's example: 8:0 is sda, 8:16 sdb, named from /proc/diskstats.
    assert [(d.device, d.read_bytes, d.written_bytes) for d in job.devices] == [
        ("sda", 90430464, 299008000), ("sdb", 1459200, 314773504)]
    assert job.read_bytes == 90430464 + 1459200
    assert (job.pressure["io"].some_seconds, job.pressure["io"].full_seconds) == (2700.0, 1800.0)
    assert job.pressure["cpu"].some_seconds == 1.5 and job.pressure["memory"].full_seconds == 0
    assert job.unavailable == {}


def test_v1_has_no_pressure_and_says_so(tmp_path: Path) -> None:
    (job,) = _jobs(write_host(SLURM_V1, tmp_path), [SLURM_V1.pid])
    assert job.unavailable == {"pressure": "cgroup v1 keeps no pressure (PSI) per cgroup"}
    assert [(d.device, d.read_bytes) for d in job.devices] == [("sda", 90430464)]


def test_a_kernel_without_memory_peak_or_the_recursive_blkio_file(tmp_path: Path) -> None:
    (pod,) = _jobs(write_host(POD_V2, tmp_path / "pod"), [POD_V2.pid])
    assert "memory.peak" in pod.unavailable["memory_peak_bytes"]
    assert pod.devices == [] and pod.read_bytes == 0  # read: no I/O at all
    # A container has no child cgroup: the plain blkio file holds all of its I/O.
    (docker,) = _jobs(write_host(DOCKER_V1, tmp_path / "docker"), [DOCKER_V1.pid])
    assert [(d.device, d.read_bytes) for d in docker.devices] == [("sdb", 1459200)]
    assert "devices" not in docker.unavailable


def test_a_job_without_a_cgroup_of_its_own_in_a_controller(tmp_path: Path) -> None:
    """Slurm with task/none and no jobacct_gather/cgroup (tests/fixtures/cgroups.py's
    slurm-v1-debian): the job is in freezer only, so its CPU time and memory are not read,
    and its CPUs are the top cpuset's, all the machine's."""
    host = JobHost("slurm-v1-freezer", 7002, 0,
                   "6:freezer:/slurm_vm/uid_0/job_1/step_batch\n4:memory:/\n3:cpuset:/\n"
                   "2:cpu,cpuacct:/\n",
                   {**{k: v for k, v in SLURM_V1.files.items() if "job_4242" not in k},
                    "sys/fs/cgroup/cpuset/cpuset.effective_cpus": "0-1\n"}, {})
    (job,) = _jobs(write_host(host, tmp_path), [host.pid])
    assert (job.cpu_seconds, job.memory_used_bytes, job.cpuset_cpus) == (None, None, 2)
    assert job.unavailable["cpu_seconds"] == ("it has no cgroup of its own in the cpuacct "
                                              "hierarchy")


def _busy(tmp_path: Path, host: JobHost) -> tuple[Path, JobResourcesCollector, GpuSystem]:
    root = write_host(host, tmp_path)
    collector = open_collector(str(root), sim.install(_scenario(root, [host.pid])), between_samples=True,
                               processes_below_root=True)
    gpu = collector.collect().gpu
    collector.close()
    assert gpu is not None
    return root, JobResourcesCollector(Root(root)), gpu


def test_cpu_use_between_two_readings(tmp_path: Path) -> None:
    root, collector, gpu = _busy(tmp_path, SLURM_V2)
    (first,) = collector.collect(gpu)
    usage = root / "sys/fs/cgroup/system.slice/slurmstepd.scope/job_3385/cpu.stat"
    usage.write_text("usage_usec 7203000000\n")  # 3 CPU-seconds later
    (second,) = collector.collect(gpu)
    assert first.busy_cpus is None and second.cpu_seconds == 7203.0
    assert second.busy_cpus is not None and second.busy_cpus > 0
    # A cgroup made again under the same id (its counter went back): no rate, never negative.
    usage.write_text("usage_usec 5\n")
    (third,) = collector.collect(gpu)
    assert third.busy_cpus is None


def test_a_device_s_busy_time_is_shared_by_bytes(tmp_path: Path) -> None:
    """sda moves 100 MB in a second of busy time; the job moved 25 MB of them: 0.25 s."""
    root, collector, gpu = _busy(tmp_path, SLURM_V2)
    (first,) = collector.collect(gpu)
    assert [d.busy_seconds for d in first.devices] == [0.0, 0.0]
    stat = root / "sys/fs/cgroup/system.slice/slurmstepd.scope/job_3385/io.stat"
    stat.write_text("8:0 rbytes=115430464 wbytes=299008000\n8:16 rbytes=1459200 wbytes=314773504\n")
    sectors = 100_000_000 // 512
    (root / "proc/diskstats").write_text(DISKSTATS.replace(
        "sda 9000 0 176622 9000 1300 0 583984 2000 0 12000",
        f"sda 9100 0 {176622 + sectors} 9000 1300 0 583984 2000 0 13000"))
    (second,) = collector.collect(gpu)
    sda = second.devices[0]
    assert sda.device == "sda" and sda.busy_seconds == pytest.approx(0.25, rel=1e-3)
    assert second.devices[1].busy_seconds == 0.0  # sdb moved nothing


def test_a_one_shot_report_reads_a_new_job_twice(tmp_path: Path) -> None:
    """Outside a daemon, the job's CPU use now is told from two readings a window apart."""
    (job,) = _jobs(write_host(SLURM_V2, tmp_path), [SLURM_V2.pid], daemon=False)
    assert job.busy_cpus == 0.0  # the fixture's counter does not move


def _processes(n: int) -> GpuSystem:
    procs = [GpuProcess(pid=100 + i, used_memory_bytes=(i + 1) * 2**20, type="compute",
                        gpu_instance_id=None, compute_instance_id=None, visible=True,
                        user="maria", name="python",
                        attribution=Attribution("slurm", slurm_job=str(1000 + i),
                                                cgroups={"unified": f"/j/job_{1000 + i}"}))
             for i in range(n)]
    gpu = Gpu(**{**{f: None for f in Gpu.__dataclass_fields__ if f not in (
        "index", "lost", "processes", "unavailable", "xid_errors")},
        "index": 0, "lost": False, "processes": procs})
    return GpuSystem("ok", None, None, None, None, gpus=[gpu])


def test_at_most_the_bound_of_jobs_those_holding_the_most_gpu_memory() -> None:
    kept = jobs_on(_processes(ATTRIBUTED_LIMIT + 36))
    assert len(kept) == ATTRIBUTED_LIMIT
    assert {u.who.slurm_job for u in kept} == {str(1000 + i) for i in range(36, 100)}


def test_processes_of_one_job_are_one_cgroup_read() -> None:
    system = _processes(3)
    for proc in system.gpus[0].processes:
        proc.attribution = Attribution("slurm", slurm_job="7", cgroups={"unified": "/j/job_7"})
    (unit,) = jobs_on(system)
    assert unit.gpu_memory == (1 + 2 + 3) * 2**20


HOSTILE = {
    "huge": b"usage_usec 1\n" * 100_000,
    "binary": bytes(range(256)) * 16,
    "nul": b"usage_usec 12\x00\n",
    "negative": b"usage_usec -5\n",
    "absurd": b"usage_usec " + b"9" * 400 + b"\n",
}


@pytest.mark.parametrize("content", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_cpu_stat_costs_its_figure_only(tmp_path: Path, content: bytes) -> None:
    root = write_host(SLURM_V2, tmp_path)
    (root / "sys/fs/cgroup/system.slice/slurmstepd.scope/job_3385/cpu.stat").write_bytes(content)
    (job,) = _jobs(root, [SLURM_V2.pid])
    assert job.cpu_seconds is None and "cpu_seconds" in job.unavailable
    assert job.memory_used_bytes == 32 * 2**30 and job.allotted_cpus == 16


def test_blank_lines_in_io_stat_and_pressure_cost_nothing(tmp_path: Path) -> None:
    """No kernel writes a blank line there, but a file that holds one was a ValueError that
    took every job's figures with it; its other lines are still read."""
    root = write_host(SLURM_V2, tmp_path)
    job_dir = root / "sys/fs/cgroup/system.slice/slurmstepd.scope/job_3385"
    for name in ("io.stat", "cpu.pressure"):
        (job_dir / name).write_text("\n" + (job_dir / name).read_text() + "\n\n")
    (job,) = _jobs(root, [SLURM_V2.pid])
    assert job.read_bytes == 90430464 + 1459200 and job.pressure["cpu"].some_seconds == 1.5
    assert job.unavailable == {}


def test_a_fifo_or_a_huge_io_stat_is_not_read(tmp_path: Path) -> None:
    root = write_host(SLURM_V2, tmp_path)
    job_dir = root / "sys/fs/cgroup/system.slice/slurmstepd.scope/job_3385"
    (job_dir / "io.stat").unlink()
    os.mkfifo(job_dir / "io.stat")
    (job_dir / "memory.max").write_text("8:0 " * 50_000)
    (job,) = _jobs(root, [SLURM_V2.pid])
    assert "not a regular file" in job.unavailable["devices"] and job.devices == []
    assert job.read_bytes is None  # not read, never 0
    assert job.memory_limit_bytes is None and "larger than" in job.unavailable["memory_limit_bytes"]
    assert job.cpu_seconds == 7200.0


def test_a_cgroup_path_deeper_than_any_layout_is_not_followed(tmp_path: Path) -> None:
    """A cpuset walk goes up at most to the top of the hierarchy, whatever the path."""
    root = write_host(POD_V2, tmp_path)
    (job,) = _jobs(root, [POD_V2.pid])
    assert job.cpuset_cpus == 16  # the top's, seven levels up


def test_a_v1_kernel_that_keeps_no_block_io_per_cgroup_says_so(tmp_path: Path) -> None:
    """Since Linux 6.10, v1 counts a cgroup's block I/O only on a disk some cgroup has a
    throttle limit on: where the top cgroup's counters name no disk, the job's zeros are not
    its I/O (this machine's kernel: its top blkio file is "Total 0")."""
    root = write_host(DOCKER_V1, tmp_path)
    top = root / "sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes_recursive"
    top.write_text("Total 0\n")
    (job,) = _jobs(root, [DOCKER_V1.pid])
    assert job.devices == [] and job.read_bytes is None
    assert "only on disks with a blkio throttle limit" in job.unavailable["devices"]
    # A limit on sdb (docker run --device-read-bps): counted there, the job's figures stand.
    top.write_text("8:16 Read 1459200\n8:16 Write 0\nTotal 1459200\n")
    (job,) = _jobs(root, [DOCKER_V1.pid])
    assert [(d.device, d.read_bytes) for d in job.devices] == [("sdb", 1459200)]


def _stat(busy: int) -> str:
    """/proc/stat of 40 CPUs, each `busy` ticks user and 10,000 idle."""
    return "".join(f"cpu{n} {busy} 0 0 10000 0 0 0 0 0 0\n" for n in range(40))


def test_how_busy_the_job_s_cpus_were_with_anyone_s_work(tmp_path: Path) -> None:
    """Its cpuset is CPUs 0-7 and 32-39; each ran a second more (whose work it was, the host's
    counters do not say): its cpuset was busy a second on average, counted from when the
    job was first seen."""
    root, collector, gpu = _busy(tmp_path, SLURM_V2)
    (root / "proc/stat").write_text(_stat(500))
    assert collector.collect(gpu)[0].cpuset_busy_seconds is None  # no earlier reading
    assert collector.collect(gpu)[0].cpuset_busy_seconds == 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    (root / "proc/stat").write_text(_stat(500 + ticks))
    assert collector.collect(gpu)[0].cpuset_busy_seconds == pytest.approx(1.0)
