"""The per-user and attributed series: the attributed ones bounded per host, the rest summed
into a row that says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hwinfo.exporter.metric import OTHER
from hwinfo.exporter.metrics_users import ATTRIBUTED_SERIES_LIMIT
from tests.exporter.activity import parsed
from tests.exporter.test_catalogue import METRICS_PAGE
from tests.fixtures.cgroups import write_process
from tests.fixtures.machines import MACHINES, write_tree

CONTAINERS = 300


def test_300_containers_are_64_series_and_one_that_sums_the_rest(tmp_path: Path) -> None:
    """Root's processes in 300 Docker containers on one GPU, container i holding i + 1 MiB."""
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path / "root")
    for i in range(CONTAINERS):
        write_process(root, 10_000 + i, 0, "python serve.py", f"4:memory:/docker/{_id(i)}\n".encode())
    scenario = tmp_path / "containers.json"
    scenario.write_text(json.dumps({"format": 1, "description": "300 containers", "gpus": [
        {"board": "H100-SXM5-80GB", "processes": [
            {"pid": 10_000 + i, "used_memory_mib": i + 1} for i in range(CONTAINERS)]}]}))
    done = subprocess.run([sys.executable, "-m", "hwinfo", "export", "--simulate", str(scenario),
                           "--root", str(root), "--textfile", "-"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    series = _by_container(done.stdout, "hwinfo_gpu_attributed_memory_used_bytes")
    assert len(series) == ATTRIBUTED_SERIES_LIMIT + 1
    # The 64 largest keep their own series; the 236 others are one row, their sum.
    kept = range(CONTAINERS - ATTRIBUTED_SERIES_LIMIT, CONTAINERS)
    assert {_id(i) for i in kept} | {OTHER} == set(series)
    assert series[OTHER] == sum(i + 1 for i in range(CONTAINERS - ATTRIBUTED_SERIES_LIMIT)) * 2**20
    # The process counts keep the same containers, which the ledger joins with their memory.
    counts = _by_container(done.stdout, "hwinfo_gpu_attributed_processes")
    assert set(counts) == set(series) and counts[OTHER] == CONTAINERS - ATTRIBUTED_SERIES_LIMIT
    (other,) = [dict(labels) for labels in parsed(done.stdout, "hwinfo_gpu_attributed_memory_used_bytes")
                if dict(labels)["container_id"] == OTHER]
    assert [name for name, value in other.items() if value == OTHER] == [
        "container_id", "pod_uid", "slurm_job", "user"]
    # The per-user rollup still charges each container (root's processes) its own memory.
    users = {dict(labels)["user"]: value
             for labels, value in parsed(done.stdout, "hwinfo_gpu_user_memory_used_bytes").items()}
    assert users == {f"docker:{_id(i)[:12]}": (i + 1) * 2**20 for i in range(CONTAINERS)}


def _by_container(text: str, metric: str) -> dict[str, float]:
    return {dict(labels)["container_id"]: value for labels, value in parsed(text, metric).items()}


def _id(i: int) -> str:
    """Container i's 64-hex id, its short form (the first 12) its own."""
    return f"{i:012x}" * 5 + "abcd"


def test_the_cardinality_section_states_the_bound() -> None:
    section = METRICS_PAGE.read_text().split("## Cardinality", 1)[1]
    assert f"at most {ATTRIBUTED_SERIES_LIMIT} of them" in section
