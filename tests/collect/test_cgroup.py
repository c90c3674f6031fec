"""The cgroup collector on real cgroup files of each runtime, and on hostile ones."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from hwinfo.collect.cgroup import parse, read_attribution
from hwinfo.collect.sysfs import Root
from tests.fixtures.cgroups import CASES


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_real_cgroup_files(case) -> None:
    found = parse(case.text)
    assert {k: getattr(found, k) for k in case.expected} == case.expected


def test_labels_name_the_unit_people_reason_in() -> None:
    labels = [parse(c.text).label for c in CASES]
    assert "docker:5dace3de0735" in labels
    assert "slurm:3385.0" in labels
    assert "pod:7d4424e6" in labels
    assert "slurmd.service" in labels
    assert "-" in labels


def _tree(tmp_path: Path, pid: int, content: bytes) -> Root:
    proc = tmp_path / "proc" / str(pid)
    proc.mkdir(parents=True)
    (proc / "cgroup").write_bytes(content)
    return Root(tmp_path)


def test_reads_below_root(tmp_path: Path) -> None:
    root = _tree(tmp_path, 42, CASES[0].text.encode())
    assert read_attribution(root, 42).container_runtime == "docker"
    assert read_attribution(root, 43) is None  # no such process: not read, not "none"


def test_array_task_from_a_readable_environment(tmp_path: Path) -> None:
    root = _tree(tmp_path, 7, b"0::/system.slice/slurmstepd.scope/job_1240/step_0/user/task_0\n")
    environ = b"HOME=/x\x00SLURM_JOB_ID=1240\x00SLURM_ARRAY_JOB_ID=1234\x00SLURM_ARRAY_TASK_ID=6\x00"
    (tmp_path / "proc/7/environ").write_bytes(environ)
    found = read_attribution(root, 7)
    assert (found.slurm_job, found.slurm_array_task, found.label) == ("1240", "1234_6", "slurm:1234_6.0")
    # An environment of another job (inherited, or a reused pid) names nothing.
    (tmp_path / "proc/7/environ").write_bytes(environ.replace(b"=1240", b"=99"))
    assert read_attribution(root, 7).slurm_array_task is None


HOSTILE = {
    "huge": b"0::/" + b"a" * (1 << 20),
    "binary": bytes(range(256)) * 64,
    "ten-thousand-lines": b"".join(b"%d:x:/a\n" % i for i in range(10_000)),
    "many-short-lines-then-a-job": b"1:x:/\n" * 64 + b"0::/system.slice/slurmstepd.scope/job_1/step_0\n",
    "deep": b"0::" + b"/d" * 30_000 + b"\n",
    "deep-with-a-job": b"0::/system.slice/slurmstepd.scope/job_1/step_0" + b"/d" * 100 + b"\n",
    "nul": b"0::/docker/\x00" + b"a" * 64 + b"\n",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_are_bounded_and_never_guessed(tmp_path: Path, name: str) -> None:
    root = _tree(tmp_path, 5, HOSTILE[name])
    tracemalloc.start()
    started = time.perf_counter()
    found = read_attribution(root, 5)
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Generous: a deadline, not a speed target (bench/ has those).
    assert elapsed < 5.0 and peak < 4 << 20
    if name in ("huge", "ten-thousand-lines"):
        assert found is None  # larger than any file a kernel writes: not read
    else:
        assert found is not None and found.kind == "none"


def test_special_files_are_not_read(tmp_path: Path) -> None:
    proc = tmp_path / "proc" / "9"
    proc.mkdir(parents=True)
    os.mkfifo(proc / "cgroup")  # would block a plain open() forever
    assert read_attribution(Root(tmp_path), 9) is None
    (proc / "cgroup").unlink()
    (proc / "cgroup").symlink_to("/dev/zero")  # never ends
    assert read_attribution(Root(tmp_path), 9) is None


def test_a_process_that_ends_reads_as_not_read() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    root = Root("/")
    assert read_attribution(root, child.pid) is not None
    child.communicate(b"")
    assert read_attribution(root, child.pid) is None


def test_tree_owners_read_status_cmdline_and_cgroup(tmp_path: Path) -> None:
    from hwinfo.collect.gpu.processes import ProcessOwner, tree_owners

    root = _tree(tmp_path, 11, HOSTILE["huge"])  # a hostile cgroup: the user stays
    (tmp_path / "proc/11/status").write_text("Name:\tpython3\nUid:\t1234\t1234\t1234\t1234\n")
    (tmp_path / "proc/11/cmdline").write_bytes(b"python3\x00train.py\x00")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\nalice:x:1234:1234::/h:/bin/sh\n")
    owners = tree_owners(root, lambda pid: ProcessOwner("from-scenario", None))
    owner = owners(11)
    assert (owner.user, owner.command, owner.attribution) == ("alice", "python3 train.py", None)
    assert owners(12).user == "from-scenario"  # not in the tree: the scenario's


def test_live_owner_carries_the_attribution() -> None:
    from hwinfo.collect.gpu.processes import local_owner

    owner = local_owner(os.getpid())
    assert owner is not None and owner.attribution is not None


# A kubelet log link as published (https://github.com/openshift/origin/issues/13212).
LOG_LINK = ("synthetic-logger-0.25lps-pod_default_synth-lgr-"
            "997599971ee6366d4a5920d25b79286ad45ff37a74494f262e3bc98d909d0a7b.log")


def test_pod_names_come_from_the_kubelet_log_links(tmp_path: Path) -> None:
    container = "997599971ee6366d4a5920d25b79286ad45ff37a74494f262e3bc98d909d0a7b"
    root = _tree(tmp_path, 21, f"2:cpu:/kubepods/besteffort/pod9a18ffb8-8513-11e7-b26e-7e29fbe2a5a3/"
                               f"{container}\n".encode())
    assert read_attribution(root, 21).pod_name is None  # no links on this host: ids only
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    (links / ("other_default_x-" + "0" * 64 + ".log")).symlink_to("/nonexistent")
    (links / LOG_LINK).symlink_to("/var/log/pods/nonexistent/0.log")  # a dangling link names too
    found = read_attribution(root, 21)
    assert (found.pod_namespace, found.pod_name, found.container_name) == (
        "default", "synthetic-logger-0.25lps-pod", "synth-lgr")
    assert found.label == "pod:default/synthetic-logger-0.25lps-pod"
