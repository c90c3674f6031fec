"""Real containers as a scenario's GPU processes: a real Docker daemon (Debian's docker.io,
on its own socket, no network) runs `sleep` as root from an image imported here, and runc
(the OCI runtime under Docker and containerd) runs it in the cgroup the kubelet's cgroupfs
driver asks for (`/kubepods/besteffort/pod<uid>/<id>`). The report must name each, and charge
the container, never root, in the per-user rollup and the metrics."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import require, require_tool

from tests.deploy.container_stack import docker_image, dockerd, rootfs
from tests.deploy.prometheus_stack import wait_for


def _container(runc: str, state: Path, bundle: Path, name: str, cgroup: str) -> int:
    subprocess.run([runc, "spec"], cwd=bundle, check=True)
    spec = json.loads((bundle / "config.json").read_text())
    spec["root"] = {"path": "rootfs", "readonly": True}
    spec["process"].update(terminal=False, args=["sleep", "600"])
    spec["mounts"] = [m for m in spec["mounts"] if m["type"] not in ("cgroup", "sysfs")]
    spec["linux"]["cgroupsPath"] = cgroup
    (bundle / "config.json").write_text(json.dumps(spec))
    # The container keeps what it inherits open: a file, not a pipe nobody would close.
    with (bundle / "runc.log").open("wb") as log:
        done = subprocess.run([runc, "--root", str(state), "run", "--detach", name], cwd=bundle,
                              stdin=subprocess.DEVNULL, stdout=log, stderr=log, timeout=30,
                              check=False)
    assert done.returncode == 0, (bundle / "runc.log").read_text(errors="replace")

    def pid() -> int | None:
        done = subprocess.run([runc, "--root", str(state), "state", name], capture_output=True,
                              text=True, timeout=10, check=False)
        found = json.loads(done.stdout or "{}")
        return found.get("pid") if found.get("status") == "running" else None

    return wait_for(f"container {name}", pid)


def _docker_container(client: list[str], root: Path) -> tuple[str, int]:
    docker_image(client, root, "hwinfo-sleep:test")
    cid = subprocess.run([*client, "run", "--detach", "--network=none", "hwinfo-sleep:test",
                          shutil.which("sleep") or "sleep", "600"], capture_output=True, text=True, check=True,
                         timeout=60).stdout.strip()
    pid = subprocess.run([*client, "inspect", "--format", "{{.State.Pid}}", cid],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    return cid, int(pid)


@pytest.fixture(scope="module")
def containers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    runc = require_tool("runc")
    require(os.geteuid() == 0, "the container runtimes run as root here")
    workdir = tmp_path_factory.mktemp("containers")
    state, bundle = workdir / "state", workdir / "bundle"
    bundle.mkdir()
    rootfs(bundle)
    pod_container, pod_uid = secrets.token_hex(32), str(uuid.uuid4())
    name = f"hwinfo-pod-{os.getpid()}"
    with ExitStack() as running:
        client = running.enter_context(dockerd(workdir / "docker"))
        docker_id, docker_pid = _docker_container(client, bundle / "rootfs")
        running.callback(subprocess.run, [*client, "rm", "--force", docker_id],
                         capture_output=True, timeout=60, check=False)
        running.callback(subprocess.run, [runc, "--root", str(state), "delete", "--force", name],
                         capture_output=True, timeout=30, check=False)
        pod_pid = _container(runc, state, bundle, name,
                             f"/kubepods/besteffort/pod{pod_uid}/{pod_container}")
        yield {"pids": [docker_pid, pod_pid], "docker_id": docker_id, "pod_uid": pod_uid,
               "pod_container": pod_container, "workdir": workdir}


def _scenario(workdir: Path, pids: list[int]) -> Path:
    path = workdir / "containers.json"
    path.write_text(json.dumps({"format": 1, "description": "two containers on an A100", "gpus": [
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 50, "processes": [
            {"pid": pid, "used_memory_mib": 1024 * (i + 1), "user": "nobody", "command": "sleep"}
            for i, pid in enumerate(pids)]}]}))
    return path


def _hwinfo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hwinfo", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_report_names_the_containers_and_charges_them_not_root(containers) -> None:
    docker_pid, pod_pid = containers["pids"]
    scenario = _scenario(containers["workdir"], containers["pids"])
    done = _hwinfo("report", "--simulate", str(scenario), "--root", "/", "--format", "json")
    document = json.loads(done.stdout)
    procs = {p["pid"]: p for g in document["gpu"]["gpus"] for p in g["processes"]}
    assert procs[docker_pid]["user"] == procs[pod_pid]["user"] == "root"
    assert procs[docker_pid]["attribution"]["container_id"] == containers["docker_id"]
    assert procs[docker_pid]["attribution"]["container_runtime"] == "docker"
    pod = procs[pod_pid]["attribution"]
    assert (pod["kind"], pod["pod_uid"], pod["pod_qos"], pod["container_id"]) == (
        "pod", containers["pod_uid"], "besteffort", containers["pod_container"])
    users = {u["user"] for u in document["gpu"]["users"]}
    assert users == {f"docker:{containers['docker_id'][:12]}", f"pod:{containers['pod_uid']}"}



def test_each_container_s_own_cgroup_is_read(containers) -> None:
    """The container's and the pod container's CPU time and memory, from their own cgroups
    (Docker's /docker/<id>, runc's /kubepods/besteffort/pod<uid>/<id>): the kernel's files."""
    scenario = _scenario(containers["workdir"], containers["pids"])
    done = _hwinfo("report", "--simulate", str(scenario), "--root", "/", "--format", "json")
    jobs = {j["container_id"]: j for j in json.loads(done.stdout)["jobs"]}
    pod = f"/kubepods/besteffort/pod{containers['pod_uid']}/{containers['pod_container']}"
    for cid, cgroup in ((containers["docker_id"], f"/docker/{containers['docker_id']}"),
                        (containers["pod_container"], pod)):
        job = jobs[cid]
        assert (job["cgroup"], job["cgroup_version"]) == (cgroup, 1)
        usage = Path(f"/sys/fs/cgroup/cpuacct{cgroup}/cpuacct.usage").read_text()
        assert 0 < job["cpu_seconds"] <= int(usage) / 1e9  # read before the test's own read
        assert job["memory_used_bytes"] > 0
    assert jobs[containers["pod_container"]]["pod_uid"] == containers["pod_uid"]


def test_metrics_charge_the_containers(containers) -> None:
    scenario = _scenario(containers["workdir"], containers["pids"])
    metrics = _hwinfo("export", "--simulate", str(scenario), "--root", "/", "--textfile", "-").stdout
    users = re.findall(r'^hwinfo_gpu_user_memory_used_bytes\{.*user="([^"]*)"', metrics, re.MULTILINE)
    assert sorted(users) == sorted([f"docker:{containers['docker_id'][:12]}",
                                    f"pod:{containers['pod_uid']}"])
    attributed = [line for line in metrics.splitlines()
                  if line.startswith("hwinfo_gpu_attributed_memory_used_bytes{")]
    assert len(attributed) == 2
    assert any(f'container_id="{containers["docker_id"]}"' in line for line in attributed)
    assert any(f'pod_uid="{containers["pod_uid"]}"' in line for line in attributed)
