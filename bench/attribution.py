"""What naming jobs and pods costs a sample: `python bench/attribution.py`.

Eight GPUs, a process on each, looked up in a --root tree as `report --simulate S --root DIR`
does: first eight Slurm job processes whose environments are 2 MB of empty entries (within ARG_MAX,
what one user may give a job), then eight pod processes beside 10,000 kubelet log links. For
each it prints the median GPU sample (the part inside the NVML deadline, and the whole sample
with the labels read after it) over 30 samples, after one warm-up sample.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hwinfo import sim
from hwinfo.collect.sources import open_collector

GPUS = 8
ENVIRON_BYTES = 2_000_000  # 2 MB: within ARG_MAX (2 MiB) with the variables after it
LOG_LINKS = 10_000
SAMPLES = 30
_POD = "0125ec2f-b64a-4868-8f5b-94b56cbab864"


def _tree(where: Path, kind: str) -> str:
    """A root whose /proc holds a GPU process per GPU; the scenario's path."""
    passwd = where / "etc/passwd"
    passwd.parent.mkdir(parents=True)
    passwd.write_text("root:x:0:0::/root:/bin/sh\nalice:x:1001:1001::/h:/bin/sh\n")
    for gpu in range(GPUS):
        proc = where / "proc" / str(1000 + gpu)
        proc.mkdir(parents=True)
        (proc / "status").write_text("Name:\tpython\nUid:\t1001\t1001\t1001\t1001\n")
        (proc / "cmdline").write_bytes(b"python\x00train.py\x00")
        (proc / "stat").write_text(f"{1000 + gpu} (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
                                   f"{5000 + gpu} 0 0\n")
        if kind == "slurm":
            (proc / "cgroup").write_text(f"0::/system.slice/slurmstepd.scope/job_{4000 + gpu}"
                                         "/step_0/user/task_0\n")
            (proc / "environ").write_bytes(b"\x00" * ENVIRON_BYTES + f"SLURM_JOB_ID={4000 + gpu}"
                                           "\x00SLURM_ARRAY_JOB_ID=4000\x00".encode())
        else:
            (proc / "cgroup").write_text(f"0::/kubepods/besteffort/pod{_POD}/{gpu:064x}\n")
    if kind == "pods":
        links = where / "var/log/containers"
        links.mkdir(parents=True)
        for n in range(LOG_LINKS):  # the pods' own links last, as a scan would meet them
            (links / f"pod-{n}_default_c-{GPUS + n:064x}.log").symlink_to("/nonexistent")
    scenario = where / "bench.json"
    scenario.write_text(json.dumps({"format": 1, "description": "labels", "gpus": [
        {"board": "H100-SXM5-80GB", "processes": [
            {"pid": 1000 + gpu, "used_memory_mib": 1024, "user": "alice", "command": "python"}]}
        for gpu in range(GPUS)]}))
    return str(scenario)


def _medians(root: Path, scenario: str) -> tuple[float, float]:
    """(inside the NVML deadline, the whole GPU sample) medians in seconds."""
    collector = open_collector(str(root), sim.install(scenario), processes_below_root=True,
                               nvml_timeout=600)
    guarded = collector.gpu
    inner = guarded.inner  # type: ignore[union-attr]
    try:
        guarded.collect()  # type: ignore[union-attr]
        nvml, whole = [], []
        for _ in range(SAMPLES):
            started = time.perf_counter()
            guarded.worker.call(inner.collect, 600)  # type: ignore[union-attr]
            nvml.append(time.perf_counter() - started)
            started = time.perf_counter()
            guarded.collect()  # type: ignore[union-attr]
            whole.append(time.perf_counter() - started)
    finally:
        collector.close()
    return statistics.median(nvml), statistics.median(whole)


def main() -> None:
    print(f"{GPUS} GPU processes, median of {SAMPLES} samples; Python {sys.version.split()[0]}")
    for kind, what in (("slurm", f"Slurm jobs, {ENVIRON_BYTES / 1e6:g} MB environments"),
                       ("pods", f"pods, {LOG_LINKS:,} kubelet log links")):
        with tempfile.TemporaryDirectory() as where:
            scenario = _tree(Path(where), kind)
            nvml, whole = _medians(Path(where), scenario)
        print(f"{what:<40} inside the NVML deadline {nvml * 1000:8.1f} ms   "
              f"whole GPU sample {whole * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
