"""Array tasks and pod names: read once per process, from a bounded prefix, after NVML's
sample; and a node whose jobs carry 2 MB environments keeps its GPU series."""

from __future__ import annotations

import json
import time
import tracemalloc
import urllib.request
from pathlib import Path

from hwinfo.collect.cgroup import read_attribution
from hwinfo.collect.job_labels import ENVIRON_PREFIX_BYTES, JobLabels, array_task
from hwinfo.collect.sysfs import Root
from hwinfo.model.gpu import GpuProcess
from tests.exporter.serving import serving
from tests.fixtures.cgroups import write_process
from tests.fixtures.machines import MACHINES, write_tree


def _tree(tmp_path: Path, pid: int, cgroup: bytes) -> Root:
    write_process(tmp_path, pid, 1000, "python train.py", cgroup)
    return Root(tmp_path)


def test_array_task_from_a_readable_environment(tmp_path: Path) -> None:
    root = _tree(tmp_path, 7, b"0::/system.slice/slurmstepd.scope/job_1240/step_0/user/task_0\n")
    environ = b"HOME=/x\x00SLURM_JOB_ID=1240\x00SLURM_ARRAY_JOB_ID=1234\x00SLURM_ARRAY_TASK_ID=6\x00"
    (tmp_path / "proc/7/environ").write_bytes(environ)
    assert array_task(root, 7, "1240") == "1234_6"
    # An environment of another job (inherited, or a reused pid) names nothing; nor does an
    # array after the job (Slurm numbers tasks from the array's id up), nor a padded id.
    assert array_task(root, 7, "99") is None
    (tmp_path / "proc/7/environ").write_bytes(environ.replace(b"=1234", b"=4242"))
    assert array_task(root, 7, "1240") is None
    (tmp_path / "proc/7/environ").write_bytes(environ.replace(b"=1234", b"=01234"))
    assert array_task(root, 7, "1240") is None


def test_only_a_prefix_of_the_environment_is_read(tmp_path: Path) -> None:
    """2 MiB of empty entries (what ARG_MAX allows) ahead of Slurm's variables: not searched."""
    root = _tree(tmp_path, 8, b"")
    slurm = b"SLURM_JOB_ID=1240\x00SLURM_ARRAY_JOB_ID=1234\x00SLURM_ARRAY_TASK_ID=6\x00"
    (tmp_path / "proc/8/environ").write_bytes(b"\x00" * (2 << 20) + slurm)
    tracemalloc.start()
    assert array_task(root, 8, "1240") is None
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 * ENVIRON_PREFIX_BYTES
    (tmp_path / "proc/8/environ").write_bytes(slurm + b"\x00" * (2 << 20))
    assert array_task(root, 8, "1240") == "1234_6"




# A kubelet log link as published (https://github.com/openshift/origin/issues/13212).
LOG_LINK = ("synthetic-logger-0.25lps-pod_default_synth-lgr-"
            "997599971ee6366d4a5920d25b79286ad45ff37a74494f262e3bc98d909d0a7b.log")


def _pod_process(tmp_path: Path, pid: int, container: str) -> GpuProcess:
    root = _tree(tmp_path, pid, f"2:cpu:/kubepods/besteffort/pod9a18ffb8-8513-11e7-b26e-7e29fbe2a5a3/"
                                f"{container}\n".encode())
    return GpuProcess(pid, 1 << 30, "compute", None, None, True, "root", "python",
                      attribution=read_attribution(root, pid, 0))


def test_pod_names_come_from_the_kubelet_log_links(tmp_path: Path) -> None:
    container = "997599971ee6366d4a5920d25b79286ad45ff37a74494f262e3bc98d909d0a7b"
    proc = _pod_process(tmp_path, 21, container)
    labels = JobLabels()
    labels.apply(Root(tmp_path), [proc])
    assert proc.attribution.pod_name is None  # no links on this host: ids only
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    (links / ("other_default_x-" + "0" * 64 + ".log")).symlink_to("/nonexistent")
    (links / LOG_LINK).symlink_to("/var/log/pods/nonexistent/0.log")  # a dangling link names too
    labels.apply(Root(tmp_path), [proc])
    found = proc.attribution
    assert (found.pod_namespace, found.pod_name, found.container_name) == (
        "default", "synthetic-logger-0.25lps-pod", "synth-lgr")
    assert found.label == "pod:default/synthetic-logger-0.25lps-pod"


def test_labels_are_read_once_per_process(tmp_path: Path) -> None:
    """A process's array task is kept while it runs (its pid and start time); the log
    directory is scanned again only once it changed."""
    root = _tree(tmp_path, 9, b"0::/system.slice/slurmstepd.scope/job_1240/step_0/user/task_0\n")
    environ = tmp_path / "proc/9/environ"
    environ.write_bytes(b"SLURM_JOB_ID=1240\x00SLURM_ARRAY_JOB_ID=1234\x00SLURM_ARRAY_TASK_ID=6\x00")
    stat = tmp_path / "proc/9/stat"
    stat.write_text("9 (python train) S 1 9 9 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0\n")
    proc = GpuProcess(9, 1 << 30, "compute", None, None, True, "alice", "python",
                      attribution=read_attribution(root, 9, 1000))
    labels = JobLabels()
    labels.apply(root, [proc])
    environ.write_bytes(b"")  # read once: what it says now is not read again
    labels.apply(root, [proc])
    assert proc.attribution.slurm_array_task == "1234_6"
    stat.write_text(stat.read_text().replace(" 5000 ", " 6000 "))  # the pid, reused
    labels.apply(root, [proc])
    assert proc.attribution.slurm_array_task is None


# Eight GPUs, a Slurm job's process on each whose environment is 2 MB of empty entries (what
# ARG_MAX lets any user give a job), its variables after them. At c9adf08 reading them took
# 3.7 s a sample on this project's machine (bench/attribution.py), inside the NVML deadline:
# with a 1 s deadline no GPU series was ever served. Now the deadline's part is 3 ms.
_JOBS = 8


def test_eight_2mb_environments_leave_the_gpu_series(tmp_path: Path) -> None:
    write_tree(MACHINES["x86-2s-smt"], tmp_path)
    for gpu in range(_JOBS):
        job = 4000 + gpu
        _tree(tmp_path, job, f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/user/task_0\n".encode())
        (tmp_path / f"proc/{job}/environ").write_bytes(
            b"\x00" * 2_000_000 + f"SLURM_JOB_ID={job}\x00SLURM_ARRAY_JOB_ID={job}\x00".encode())
    scenario = tmp_path / "jobs.json"
    scenario.write_text(json.dumps({"format": 1, "description": "8 jobs, 2 MB environments",
                                    "gpus": [{"board": "H100-SXM5-80GB", "processes": [
                                        {"pid": 4000 + gpu, "used_memory_mib": 1024}]}
                                        for gpu in range(_JOBS)]}))
    with serving("--simulate", str(scenario), "--root", str(tmp_path), "--interval", "0.2",
                 "--nvml-timeout", "1") as url:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _sample(url, "hwinfo_samples_total") < 5:
            time.sleep(0.2)
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            metrics = response.read().decode()
    assert _sample(metrics, 'hwinfo_collection_stalled{source="gpu"}') == 0
    assert sum(line.startswith("hwinfo_gpu_memory_used_bytes{") for line in metrics.splitlines()) == _JOBS
    jobs = {line.split('slurm_job="')[1].split('"')[0] for line in metrics.splitlines()
            if line.startswith("hwinfo_gpu_attributed_memory_used_bytes{")}
    assert jobs == {str(4000 + gpu) for gpu in range(_JOBS)}


def _sample(source: str, series: str) -> float:
    """A series' value in an exposition (or a daemon's, given its URL); -1 where absent."""
    if source.startswith("http"):
        with urllib.request.urlopen(source + "/metrics", timeout=10) as response:
            source = response.read().decode()
    for line in source.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return -1
