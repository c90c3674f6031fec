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
from hwinfo.model.attribution import charged_user
from tests.fixtures.cgroups import CASES, FORGED


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_real_cgroup_files(case) -> None:
    found = parse(case.text, case.uid)
    assert {k: getattr(found, k) for k in case.expected} == case.expected


@pytest.mark.parametrize("case", FORGED, ids=[c.name for c in FORGED])
def test_a_forged_cgroup_names_no_one_else(case) -> None:
    found = parse(case.text, case.uid)
    assert {k: getattr(found, k) for k in case.expected} == case.expected
    # Nothing to charge but its own user: no job, pod or container of anyone's.
    assert not found.known and charged_user("root", found) == "root"


def test_an_owner_not_known_passes_no_layout_that_needs_one() -> None:
    v1_job = "6:freezer:/slurm/uid_1000/job_4242/step_0/task_0\n"
    assert parse(v1_job, 1000).slurm_job == "4242"
    assert parse(v1_job, 1001).kind == parse(v1_job).kind == "none"
    rootless = next(c for c in CASES if c.name.startswith("podman-rootless"))
    assert parse(rootless.text).kind == "service"  # its user@1001.service, as a unit


def test_the_controllers_lines_decide_on_cgroup_v1() -> None:
    """A real Slurm job on v1 whose name=systemd line (the user's to write) names a pod."""
    text = ("6:freezer:/slurm/uid_1000/job_77/step_0/task_0\n1:name=systemd:/kubepods.slice/"
            "kubepods-pod0125ec2f_b64a_4868_8f5b_94b56cbab864.slice\n")
    assert (parse(text, 1000).kind, parse(text, 1000).slurm_job) == ("slurm", "77")
    # Where the kernel wrote no controller line (cgroup v2), its lines are what there is.
    assert parse("0::/kubepods/besteffort/pod0125ec2f-b64a-4868-8f5b-94b56cbab864\n").kind == "pod"


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
    assert read_attribution(root, 42, 0).container_runtime == "docker"
    assert read_attribution(root, 43, 0) is None  # no such process: not read, not "none"


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
    found = read_attribution(root, 5, 0)
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
    assert read_attribution(Root(tmp_path), 9, 0) is None
    (proc / "cgroup").unlink()
    (proc / "cgroup").symlink_to("/dev/zero")  # never ends
    assert read_attribution(Root(tmp_path), 9, 0) is None


def test_a_process_that_ends_reads_as_not_read() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    root = Root("/")
    assert read_attribution(root, child.pid, os.getuid()) is not None
    child.communicate(b"")
    assert read_attribution(root, child.pid, os.getuid()) is None


def test_tree_owners_read_status_cmdline_and_cgroup(tmp_path: Path) -> None:
    from hwinfo.collect.gpu.owners import ProcessOwner, tree_owners

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


def test_the_job_s_own_cgroup_in_each_hierarchy_that_has_it() -> None:
    """A Slurm job's cgroup is job_N (every step below it), a container's its scope, a pod's
    container its own; on v1 only the controllers whose line places the same unit."""
    from tests.fixtures.cgroups import CASE

    assert parse(CASE["slurm-v2"].text, 1000).cgroups == {
        "unified": "/system.slice/slurmstepd.scope/job_3385"}
    assert parse(CASE["slurm-v1-debian"].text, 0).cgroups == {"freezer": "/slurm_vm/uid_0/job_1"}
    docker = "/docker/5dace3de0735f73d2b5048f12d41a71741a02e49668de921fdae62f7e65dc498"
    assert parse(CASE["docker-cgroupfs-v1"].text).cgroups == dict.fromkeys(
        ("perf_event", "freezer", "memory"), docker)
    # containerd's v1 form sits under containerd.service in blkio, at the top in perf_event.
    cri = parse(CASE["kubernetes-containerd-systemd-v1"].text).cgroups
    assert cri["blkio"] == "/system.slice/containerd.service/" + cri["perf_event"][1:]
    assert parse(CASE["kind-containerd-systemd-v2"].text).cgroups["unified"].endswith(
        "-pod1e597579_417e_482f_bf65_5fe170c3aebd.slice/cri-containerd-a09bc17f5aa29b0dbdec9ede"
        "5f46cf1396d2405917ab02e6f1eb1019f388396e.scope")
    # A v1 "cpu,cpuacct" line is both controllers'; a unit or none has no cgroup to read.
    both = parse("2:cpu,cpuacct:/slurm/uid_7/job_9/step_0/task_0\n", 7).cgroups
    assert both == {"cpu": "/slurm/uid_7/job_9", "cpuacct": "/slurm/uid_7/job_9"}
    assert parse(CASE["slurm-without-cgroups"].text).cgroups == {}


def test_a_hybrid_host_s_unified_line_counts_only_where_it_places_the_same_unit() -> None:
    docker = "5dace3de0735f73d2b5048f12d41a71741a02e49668de921fdae62f7e65dc498"
    same = f"4:memory:/docker/{docker}\n0::/docker/{docker}\n"
    assert parse(same).cgroups == {"memory": f"/docker/{docker}", "unified": f"/docker/{docker}"}
    other = f"4:memory:/docker/{docker}\n0::/system.slice/slurmstepd.scope/job_1/step_0/user\n"
    assert parse(other).cgroups == {"memory": f"/docker/{docker}"}
