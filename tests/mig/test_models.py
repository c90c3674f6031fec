"""MIG's catalogue by model: what the ledger reads of it is what a GPU of each model exports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hwinfo.mig.models import BY_MODEL, mig_table, profile_shapes
from hwinfo.mig.profiles import A100_40GB
from hwinfo.sim.boards import BOARDS

# The newest branch the tables describe (R590): the tables as profile_shapes reads them.
NEWEST_DRIVER = "590.48.01"


def test_every_catalogued_model_is_a_simulated_board_with_that_table() -> None:
    boards = {str(board.defaults["name"]): board for board in BOARDS.values()}
    for model, table in BY_MODEL.items():
        assert boards[model].mig is table, model
    # Boards without MIG have no table: GeForce, workstation, T4, vGPU.
    assert {key for key, board in BOARDS.items() if board.mig is None} == {
        "RTX-4090", "RTX-3090", "RTX-A5000", "T4", "GRID-P4-1Q"}


def test_a_model_is_found_with_or_without_the_vendor_drivers_put_in_front() -> None:
    assert mig_table("A100-SXM4-40GB") is mig_table(" nvidia a100-sxm4-40gb") is A100_40GB
    assert mig_table("NVIDIA GeForce RTX 4090") is None
    assert profile_shapes("Tesla T4") == {}


def test_the_shapes_are_what_a_simulated_gpu_of_each_model_exports(tmp_path: Path) -> None:
    """Every MIG board in MIG mode, through the real pynvml and the GPU collector: each
    profile's memory and share of the GPU, as `hwinfo_mig_profile_*` would carry them."""
    scenario = tmp_path / "every-mig-board.json"
    scenario.write_text(json.dumps({
        "format": 1, "description": "every MIG board, MIG on", "driver": {"version": NEWEST_DRIVER},
        "gpus": [{"board": key, "mig": {"enabled": True, "gpu_instances": []}}
                 for key, board in BOARDS.items() if board.mig is not None]}))
    done = subprocess.run([sys.executable, "-m", "hwinfo", "report", "--simulate", str(scenario),
                           "--format", "json"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    gpus = json.loads(done.stdout)["gpu"]["gpus"]
    assert {gpu["name"] for gpu in gpus} == set(BY_MODEL)
    for gpu in gpus:
        exported = {row["profile"]: (row["memory_bytes"], row["gpu_share_ratio"])
                    for row in gpu["mig"]["capacity"]}
        assert exported == profile_shapes(gpu["name"]), gpu["name"]
    # By hand, from the A100 80GB's `nvidia-smi mig -lgip` (profiles.py): a 3g.40gb is
    # 40192 MiB and 3 of the GPU's 7 compute slices.
    assert profile_shapes("NVIDIA A100-SXM4-80GB")["3g.40gb"] == (40192 * 2**20, 3 / 7)
