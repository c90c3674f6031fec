"""The attribution rules end to end on MIG devices: a real Prometheus with the shipped rules
scraping a daemon whose GPU processes are looked up in a fixture tree (--root): root's
process in a Docker container on a 3g.40gb, carol's in Slurm job 3385 on a 1g.10gb."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.deploy.ledger_stack import answer, recorded_until, rules_every_second
from tests.deploy.prometheus_stack import Stack, prometheus_scraping, wait_for
from tests.exporter.serving import serving
from tests.fixtures.cgroups import CASES
from tests.fixtures.machines import MACHINES, write_tree

RULE_SAMPLES = 10
CONTAINER = next(c for c in CASES if c.name == "docker-cgroupfs-v1")
SCENARIO = {"format": 1, "description": "a container and a Slurm job on MIG devices", "gpus": [
    {"board": "A100-SXM4-80GB", "power_draw_w": 140,
     "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.40gb", "start": 4, "id": 2},
                                                {"profile": "1g.10gb", "start": 0, "id": 9}]},
     "processes": [
         {"pid": 3000, "used_memory_mib": 20000, "user": "nobody", "command": "python serve.py",
          "gpu_instance_id": 2, "compute_instance_id": 0},
         {"pid": 3001, "used_memory_mib": 4000, "user": "nobody", "command": "python train.py",
          "gpu_instance_id": 9, "compute_instance_id": 0}]}]}


def _process(root: Path, pid: int, uid: int, cgroup: str) -> None:
    proc = root / "proc" / str(pid)
    proc.mkdir(parents=True)
    (proc / "status").write_text(f"Name:\tpython\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    (proc / "cmdline").write_bytes(b"python\0run.py\0")
    (proc / "cgroup").write_text(cgroup)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("attribution")
    root = write_tree(MACHINES["x86-2s-smt"], workdir / "root")
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\ncarol:x:1000:1000::/h:/bin/sh\n")
    _process(root, 3000, 0, CONTAINER.text)
    _process(root, 3001, 1000, "0::/system.slice/slurmstepd.scope/job_3385/step_0/user/task_0\n")
    scenario = workdir / "mig.json"
    scenario.write_text(json.dumps(SCENARIO))
    with ExitStack() as running:
        daemon = running.enter_context(serving("--simulate", str(scenario), "--root", str(root),
                                               "--interval", "0.5"))
        prometheus = running.enter_context(prometheus_scraping(
            daemon, workdir / "prometheus", rule_files=[rules_every_second(workdir)]))
        prometheus.wait_until_scraped()
        wait_for(f"{RULE_SAMPLES} evaluations of the attribution rules", lambda: prometheus.query(
            "count_over_time(hwinfo:ledger_attributed_held:share"
            f'{{slurm_job="3385"}}[1m]) >= {RULE_SAMPLES}'), timeout=120)
        yield prometheus


def test_a_container_is_charged_not_root(stack: Stack) -> None:
    # One range for every answer, ending where the engine's records are whole: a record
    # written between two of the answers would tell them apart.
    window = ("--since", "1m", "--until", f"{recorded_until(stack):.3f}")
    users = {row["user"]: row for row in answer("usage", "--prometheus", stack.prometheus,
                                                *window)["rows"]}
    assert set(users) == {"docker:5dace3de0735", "carol"}
    containers = answer("usage", "--prometheus", stack.prometheus, *window, "--by",
                        "container")["rows"]
    assert [row["container"] for row in containers] == [CONTAINER.expected["container_id"]]
    # The container alone on its 3g.40gb: 3/7 of the GPU, as its charged user's row says.
    assert containers[0]["held_gpu_seconds"] == pytest.approx(
        users["docker:5dace3de0735"]["held_gpu_seconds"])
    jobs = answer("usage", "--prometheus", stack.prometheus, *window, "--by", "job")["rows"]
    assert [row["job"] for row in jobs] == ["3385"]
    assert containers[0]["held_gpu_seconds"] / jobs[0]["held_gpu_seconds"] == pytest.approx(3, rel=0.15)
    # An A100's MIG devices have no activity signal: unknown, never idle.
    assert jobs[0]["unknown_gpu_seconds"] == jobs[0]["held_gpu_seconds"]


def test_job_on_a_mig_device(stack: Stack) -> None:
    document = answer("job", "3385", "--prometheus", stack.prometheus, "--since", "1m")
    (gpu,) = document["gpus"]
    assert (gpu["gpu"], gpu["gpu_instance_id"], gpu["compute_instance_id"]) == ("0", "9", "0")
    assert document["users"] == ["carol"]
    assert gpu["held_gpu_seconds"] == pytest.approx(gpu["held_seconds"] / 7, rel=0.15)
    assert gpu["busy_ratio"] is None and gpu["mean_utilization_ratio"] is None
    assert gpu["peak_memory_bytes"] == 4000 * 2**20
    size = stack.query('hwinfo_mig_gpu_instance_memory_total_bytes{gpu_instance_id="9"}')
    assert gpu["memory_total_bytes"] == float(size[0]["value"][1])
    assert any("MIG device without an activity signal" in note for note in document["notes"])
