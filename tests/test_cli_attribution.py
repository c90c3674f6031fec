"""`hwinfo report --simulate S --root DIR`: each GPU process looked up below DIR/proc/PID/,
so a fixture tree shows what the report makes of every cgroup layout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fixtures.cgroups import CASE, attributed_tree, write_process
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
    lines = done.stdout.splitlines()
    attributed = [line for line in lines if line.startswith("hwinfo_gpu_attributed_memory_used_bytes{")]
    assert len(attributed) == 2
    assert all('gpu="0"' in line and 'gpu_instance_id="7",compute_instance_id="0"' in line
               for line in attributed)
    assert any('slurm_job="3385"' in line and 'user="carol"' in line for line in attributed)
    assert any('container_id="5dace3de0735' in line and 'user="docker:5dace3de0735"' in line
               for line in attributed)
    mig_users = [line for line in lines if line.startswith("hwinfo_mig_device_user_memory_used_bytes{")
                 and 'gpu="0"' in line and 'gpu_instance_id="7"' in line]
    assert any('user="docker:5dace3de0735"' in line for line in mig_users)
    assert not any('user="root"' in line for line in mig_users)
