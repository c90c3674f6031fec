"""`hwinfo report --simulate S --root DIR`: each GPU process looked up below DIR/proc/PID/,
so a fixture tree shows what the report makes of every cgroup layout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.cgroups import ALICE, CASE, FORGED, MALLORY, attributed_tree, write_process
from tests.fixtures.machines import MACHINES, write_tree

HWINFO = [sys.executable, "-m", "hwinfo"]


def _report(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWINFO, "report", "--simulate", "workstation-geforce", "--root",
                           str(root), "--no-color", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_json_carries_each_process_attribution(tmp_path: Path) -> None:
    done = _report(attributed_tree(tmp_path), "--format", "json")
    document = json.loads(done.stdout)
    procs = {p["pid"]: p for g in document["gpu"]["gpus"] for p in g["processes"] or ()}
    assert procs[58812]["attribution"]["slurm_job"] == "3385"
    assert procs[58812]["user"] == "maria"
    assert procs[1873]["user"] == "root"
    assert procs[1873]["attribution"]["container_runtime"] == "docker"
    assert procs[4120]["attribution"]["pod_uid"] == "a5c1f8d5-1919-434d-add7-4afaafdaef89"
    assert procs[3391]["attribution"]["kind"] == "none"  # binary: read, names nothing
    assert procs[2264]["attribution"] is None and procs[2264]["user"] == "maria"  # the scenario's
    users = {(u["gpu_index"], u["user"]): u for u in document["gpu"]["users"]}
    # Root's process in a known container is the container's, never root's.
    assert not any(user == "root" for _, user in users)
    assert users[(0, "docker:5dace3de0735")]["attributions"] == ["docker:5dace3de0735"]
    assert "slurm:3385.0" in users[(1, "maria")]["attributions"]


def test_text_shows_the_job_in_the_process_table_and_the_rollup(tmp_path: Path) -> None:
    text = _report(attributed_tree(tmp_path)).stdout
    rows = [line.split() for line in text.splitlines()]
    xorg = next(r for r in rows if "1873" in r)
    assert "docker:5dace3de0735" in xorg and "root" in xorg
    training = next(r for r in rows if "58812" in r)
    assert "slurm:3385.0" in training
    users = text[text.index("GPU users"):]
    assert "Jobs" in users and "docker:5dace3de0735" in users and "slurm:3385.0" in users


def test_without_root_the_scenario_alone_speaks(tmp_path: Path) -> None:
    done = subprocess.run([*HWINFO, "report", "--simulate", "workstation-geforce", "--format",
                           "json"], capture_output=True, text=True, timeout=60, check=False)
    procs = [p for g in json.loads(done.stdout)["gpu"]["gpus"] for p in g["processes"] or ()]
    assert all(p["attribution"] is None for p in procs)


def test_metrics_attribute_mig_devices_and_charge_containers(tmp_path: Path) -> None:
    """dgx-a100-mig's GPU 0, MIG device of GPU instance 7: root's process 412300 in a Docker
    container, carol's 412307 in Slurm job 3385."""
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\ncarol:x:1000:1000::/h:/bin/sh\n")
    write_process(root, 412300, 0, "python serve.py", CASE["docker-cgroupfs-v1"].text.encode())
    write_process(root, 412307, 1000, "python train.py", CASE["slurm-v2"].text.encode())
    done = subprocess.run([*HWINFO, "export", "--simulate", "dgx-a100-mig", "--root", str(root),
                           "--textfile", "-"], capture_output=True, text=True, timeout=60,
                          check=False)
    attributed = _series(done.stdout, "hwinfo_gpu_attributed_memory_used_bytes", keep_gpu=True)
    assert len(attributed) == 2
    assert all(("gpu", "0") in labels and ("gpu_instance_id", "7") in labels
               and ("compute_instance_id", "0") in labels for labels in attributed)
    owners = {dict(labels)["user"]: dict(labels) for labels in attributed}
    assert owners["carol"]["slurm_job"] == "3385"
    assert owners["docker:5dace3de0735"]["container_id"].startswith("5dace3de0735")
    mig_users = {dict(labels)["user"] for labels in _series(
        done.stdout, "hwinfo_mig_device_user_memory_used_bytes", keep_gpu=True)
        if ("gpu", "0") in labels and ("gpu_instance_id", "7") in labels}
    assert "docker:5dace3de0735" in mig_users
    assert "root" not in mig_users


# Alice's real job 4242 beside each way of forging it, on a cgroup v2 host and on a v1 one:
# (pid, uid, the forgery's name in FORGED, or the real layout's), 1 GiB each more than the last.
_V2_HOST = [(4001, ALICE, None), (4002, MALLORY, "slurmstepd-scope-in-a-user-subtree"),
            (4003, MALLORY, "kubepods-in-a-user-subtree"), (4004, MALLORY, "docker-scope-in-a-user-subtree"),
            (4005, MALLORY, "docker-scope-as-rootless"), (4006, ALICE, "job-id-with-leading-zeros"),
            (4007, 0, "root-container-in-a-slurm-job")]
_V1_HOST = [(4001, ALICE, None), (4002, MALLORY, "name-systemd-over-freezer"),
            (4003, MALLORY, "name-systemd-at-the-top"), (4007, 0, "root-container-in-a-slurm-job"),
            (4008, 0, "root-process-in-a-slurm-step")]
_REAL_JOB = {"v2": "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n",
             "v1": "11:freezer:/slurm/uid_1001/job_4242/step_0/task_0\n"
                   "4:memory:/slurm/uid_1001/job_4242/step_0/task_0\n"
                   "1:name=systemd:/system.slice/slurmd.service\n"}


def _forged_host(tmp_path: Path, cgroup: str) -> tuple[Path, Path, dict[int, int]]:
    """A --root tree and a scenario of one H100 whose processes are those of the host."""
    processes = _V2_HOST if cgroup == "v2" else _V1_HOST
    forged = {case.name: case.text for case in FORGED}
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path / "root")
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\nalice:x:1001:1001::/h:/bin/sh\n"
                                     "mallory:x:1002:1002::/h:/bin/sh\n")
    memory = {pid: 1024 * (i + 1) for i, (pid, _, _) in enumerate(processes)}
    for pid, uid, name in processes:
        write_process(root, pid, uid, "python train.py",
                      (forged[name] if name else _REAL_JOB[cgroup]).encode())
    scenario = tmp_path / "forged.json"
    scenario.write_text(json.dumps({"format": 1, "description": "job 4242, forged", "gpus": [
        {"board": "H100-SXM5-80GB", "processes": [
            {"pid": pid, "used_memory_mib": memory[pid], "user": "nobody", "command": "python"}
            for pid, _, _ in processes]}]}))
    return root, scenario, memory


@pytest.mark.parametrize("cgroup", ["v2", "v1"])
def test_forged_cgroups_charge_their_own_users(tmp_path: Path, cgroup: str) -> None:
    """Job 4242's series is alice's alone, and every forged process is its own user's."""
    root, scenario, memory = _forged_host(tmp_path, cgroup)
    done = subprocess.run([*HWINFO, "export", "--simulate", str(scenario), "--root", str(root),
                           "--textfile", "-"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    attributed = _series(done.stdout, "hwinfo_gpu_attributed_memory_used_bytes")
    assert attributed == {(("container_id", ""), ("pod_uid", ""), ("slurm_job", "4242"),
                           ("user", "alice")): memory[4001] * 2**20}
    owners = {pid: uid for pid, uid, _ in (_V2_HOST if cgroup == "v2" else _V1_HOST)}
    names = {ALICE: "alice", MALLORY: "mallory", 0: "root"}
    expected: dict[str, int] = {}
    for pid, uid in owners.items():
        expected[names[uid]] = expected.get(names[uid], 0) + memory[pid] * 2**20
    users = {dict(labels)["user"]: value for labels, value in
             _series(done.stdout, "hwinfo_gpu_user_memory_used_bytes").items()}
    assert users == expected
    report = json.loads(subprocess.run(
        [*HWINFO, "report", "--simulate", str(scenario), "--root", str(root), "--format", "json"],
        capture_output=True, text=True, timeout=60, check=False).stdout)
    in_job = {p["pid"] for g in report["gpu"]["gpus"] for p in g["processes"]
              if (p["attribution"] or {}).get("slurm_job") is not None}
    assert in_job == {4001}


def _series(exposition: str, metric: str, keep_gpu: bool = False
            ) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of one metric, as a scraper parses them: its labels (sorted by name, without
    the GPU's unless `keep_gpu`) -> value."""
    dropped = {"gpu", "uuid", "gpu_instance_id", "compute_instance_id"} if not keep_gpu else set()
    return {tuple(sorted((k, v) for k, v in s.labels.items() if k not in dropped)): s.value
            for family in text_string_to_metric_families(exposition)
            for s in family.samples if s.name == metric}
