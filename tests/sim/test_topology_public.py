"""The simulated machines' `hwinfo report --topology`, cell by cell against public
`nvidia-smi topo -m` output of such machines.

Each machine's PCI tree and NVLink wiring are in its scenario (hwinfo/sim/scenarios/):
the GPU and NIC addresses are the real machines' (DGX A100 and DGX H100 user guides' port
names, NCCL topology dumps), the bridges between them chosen so that the tree nests as
those dumps show. The expected cells below are copied from these public outputs:

- DGX A100 (40GB; NPS4): https://github.com/NVIDIA/nccl/issues/1505 (rows GPU0 to GPU3
  whole, GPU4 up to its last NIC column: the rest of the paste is not at hand).
- DGX H100: https://github.com/kvcache-ai/Mooncake/issues/2039 (rows GPU0 to GPU4; its CPU
  Affinity column is a container's cpuset, so the CPUs are compared with those of another
  8-GPU H100 SXM box of the same Xeons, https://github.com/NVIDIA/nccl/issues/1264).
- A workstation with two GeForce boards below root ports of one root bus:
  https://github.com/noonghunna/club-3090/issues/1229 (its `topo -m` and `topo -p2p rw`; the
  same box's `lspci -t`: https://github.com/noonghunna/club-3090/issues/1107). Its 64
  threads are not the simulated workstation's 32, so CPU Affinity is not compared.

NVMe columns are hwinfo's own (nvidia-smi prints none): the public outputs say nothing of
them, and where the DGX drives sit is a guess (docs/simulator.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache

import pytest

AFFINITY = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
NV12, NV18 = "NV12", "NV18"


def _row(*cells: str) -> list[str]:
    return [cell for part in cells for cell in part.split()]


DGX_A100 = {
    "GPU0": _row("X", f"{NV12} " * 7, "PXB PXB", "SYS " * 10, "48-63,176-191 3 N/A"),
    "GPU1": _row(NV12, "X", f"{NV12} " * 6, "PXB PXB", "SYS " * 10, "48-63,176-191 3 N/A"),
    "GPU2": _row(f"{NV12} " * 2, "X", f"{NV12} " * 5, "SYS SYS PXB PXB", "SYS " * 8,
                 "16-31,144-159 1 N/A"),
    "GPU3": _row(f"{NV12} " * 3, "X", f"{NV12} " * 4, "SYS SYS PXB PXB", "SYS " * 8,
                 "16-31,144-159 1 N/A"),
    "GPU4": _row(f"{NV12} " * 4, "X", f"{NV12} " * 3, "SYS " * 6, "PXB PXB", "SYS " * 4),
}
DGX_A100_COLUMNS = [*(f"GPU{i}" for i in range(8)), *(f"NIC{i}" for i in range(12)), *AFFINITY]

DGX_H100 = {
    "GPU0": _row("X", f"{NV18} " * 7, "PIX PIX PIX NODE NODE NODE", "SYS " * 6, "0 N/A"),
    "GPU1": _row(NV18, "X", f"{NV18} " * 6, "NODE NODE NODE PIX NODE NODE", "SYS " * 6, "0 N/A"),
    "GPU2": _row(f"{NV18} " * 2, "X", f"{NV18} " * 5, "NODE NODE NODE NODE PIX NODE",
                 "SYS " * 6, "0 N/A"),
    "GPU3": _row(f"{NV18} " * 3, "X", f"{NV18} " * 4, "NODE NODE NODE NODE NODE PIX",
                 "SYS " * 6, "0 N/A"),
    "GPU4": _row(f"{NV18} " * 4, "X", f"{NV18} " * 3, "SYS " * 6, "PIX PIX PIX NODE NODE NODE",
                 "1 N/A"),
}
DGX_H100_COLUMNS = [*(f"GPU{i}" for i in range(8)), *(f"NIC{i}" for i in range(12)),
                    "NUMA Affinity", "GPU NUMA ID"]
# nvidia/nccl#1264: GPUs 0-3 on the first socket's CPUs, 4-7 on the second's.
DGX_H100_CPUS = {f"GPU{i}": "0-55,112-167" if i < 4 else "56-111,168-223" for i in range(8)}

WORKSTATION = {"GPU0": ["X", "PHB", "0", "N/A"], "GPU1": ["PHB", "X", "0", "N/A"]}
WORKSTATION_COLUMNS = ["GPU0", "GPU1", "NUMA Affinity", "GPU NUMA ID"]


@cache
def _report(scenario: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hwinfo", "report", "--topology", "--simulate", scenario,
         "--no-color"], capture_output=True, text=True, timeout=120, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("HWINFO")},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _matrix(text: str) -> dict[str, dict[str, str]]:
    """The report's matrix: row label -> column label -> cell, as printed."""
    lines = text.split("\n")
    header = lines[1].split()
    labels = header[: header.index("CPU")]
    rows = {}
    for line in lines[2:]:
        tokens = line.split()
        if not tokens or tokens[0] not in labels:
            break
        rows[tokens[0]] = dict(zip([*labels, *AFFINITY], tokens[1:]))
    return rows


def _compared(matrix: dict[str, dict[str, str]], columns: list[str],
              public: dict[str, list[str]]) -> None:
    for label, cells in public.items():
        shown = [matrix[label][column] for column in columns[: len(cells)]]
        assert shown == cells, f"{label}: {shown} != public {cells}"


def test_dgx_a100_as_nvidia_smi_shows_one() -> None:
    text = _report("dgx-a100-mig")
    matrix = _matrix(text)
    _compared(matrix, DGX_A100_COLUMNS, DGX_A100)
    # The rows not at hand follow by symmetry: every GPU pair NV12, each pair's two NICs PXB.
    for row in range(8):
        for column in range(8):
            assert matrix[f"GPU{row}"][f"GPU{column}"] == ("X" if row == column else NV12)
        nics = [n for n in range(12) if matrix[f"GPU{row}"][f"NIC{n}"] == "PXB"]
        assert nics == {0: [0, 1], 1: [2, 3], 2: [6, 7], 3: [8, 9]}[row // 2]
    # nvidia-smi names NICs in RDMA device order, as its NIC legend lists them.
    assert [f"NIC{n}: mlx5_{n} " in text for n in range(12)] == [True] * 12


def test_dgx_h100_as_nvidia_smi_shows_one() -> None:
    matrix = _matrix(_report("dgx-h100"))
    _compared(matrix, DGX_H100_COLUMNS, DGX_H100)
    assert {label: matrix[label]["CPU Affinity"] for label in DGX_H100_CPUS} == DGX_H100_CPUS


def test_a_workstation_as_nvidia_smi_shows_one() -> None:
    text = _report("workstation-geforce")
    _compared(_matrix(text), WORKSTATION_COLUMNS, WORKSTATION)
    p2p = text.split("GPU peer-to-peer reads and writes\n", 1)[1].split("\n")
    assert [line.split() for line in p2p[1:3]] == [["GPU0", "X", "GNS"], ["GPU1", "GNS", "X"]]


@pytest.mark.parametrize("word", ["X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#"])
def test_the_legend_explains_each_of_nvidia_smi_s_words(word: str) -> None:
    legend = _report("workstation-geforce").split("Legend\n", 1)[1]
    assert f"    {word:<5}= " in legend
