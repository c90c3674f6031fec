"""`hwinfo report --topology`: the view, its JSON, and the options it does not go with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwinfo.model.serialize import snapshot_from_document


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWINFO")}
    return subprocess.run([sys.executable, "-m", "hwinfo", "report", *args], capture_output=True,
                          text=True, timeout=120, check=False, env=env)


def test_json_is_the_snapshot_with_its_matrix() -> None:
    result = run("--topology", "--simulate", "dgx-h100", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    topology = document.pop("topology")
    labels = [d["label"] for d in topology["devices"]]
    assert labels == [*(f"GPU{i}" for i in range(8)), *(f"NIC{i}" for i in range(12)),
                      *(f"NVME{i}" for i in range(10))]
    matrix = topology["matrix"]
    assert len(matrix) == len(labels) and all(len(row) == len(labels) for row in matrix)
    assert all(matrix[i][j] == matrix[j][i] for i in range(30) for j in range(30))
    assert topology["notes"] == []
    assert len(document["gpu"]["pairs"]) == 28 and len(document["pci"]["devices"]) == 30
    # Without the matrix it is a snapshot any hwinfo reads back (`report --from`).
    snapshot = snapshot_from_document(document, "topology.json")
    assert snapshot.pci is not None and snapshot.source("pci").state == "ok"


def test_selected_gpus_only() -> None:
    result = run("--topology", "--simulate", "dgx-a100-mig", "--gpu", "2,3", "--no-color")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[2:4]]
    assert [row[:3] for row in rows] == [["GPU2", "X", "NV12"], ["GPU3", "NV12", "X"]]


def test_this_machine_without_a_driver_says_so() -> None:
    result = run("--topology", "--no-color")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("GPU topology\n  no GPUs read: ")


@pytest.mark.parametrize(("args", "message"), [
    (["--brief"], "--brief cannot be used with --topology"),
    (["--from", "http://127.0.0.1:1"], "--from cannot be used with --topology"),
])
def test_options_it_does_not_go_with_are_one_line(args: list[str], message: str) -> None:
    result = run("--topology", *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"Error: {message}"


def test_a_sysfs_tree_alone_gives_the_nics_and_drives(tmp_path: Path) -> None:
    """The simulator's DGX H100 sysfs read as a --root: NICs and drives without NVML; the
    tree holds no /proc, so the sections it cost are said and the exit status is 1."""
    from hwinfo.sim import load_scenario
    from hwinfo.sim.sysfs_tree import write_sysfs

    write_sysfs(load_scenario("dgx-h100"), str(tmp_path))
    result = run("--topology", "--no-gpu", "--root", str(tmp_path), "--no-color")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[3].split()[:4] == ["NIC0", "X", "PIX", "PIX"]  # GPU0's NIC and storage ports
    assert "  memory: collection failed: nothing could be read below " + str(tmp_path) in lines

