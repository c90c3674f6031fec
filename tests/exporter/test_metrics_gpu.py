"""Per-GPU metrics: GPM activity of whole GPUs outside MIG mode, each user's SM activity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .activity import samples


def test_whole_gpu_activity() -> None:
    got = samples("dgx-h100", "hwinfo_gpu_sm_occupancy_ratio")
    assert len(got) == 8
    assert {dict(labels)["gpu"]: value for labels, value in got.items()}["0"] == 0.39


def test_user_sm_utilization_sums_each_user_s_process_samples(tmp_path: Path) -> None:
    # ana idles at 0 % SM beside ben's two processes (40 + 20 %); cy's process has no sample,
    # so cy has no series (the ledger then judges cy by the device's activity).
    scenario = tmp_path / "shared.json"
    scenario.write_text(json.dumps({"format": 1, "description": "a shared GPU", "gpus": [
        {"board": "A100-SXM4-80GB", "utilization_gpu_percent": 60, "processes": [
            {"pid": 10, "used_memory_mib": 1000, "user": "ana", "command": "a", "sm_percent": 0},
            {"pid": 11, "used_memory_mib": 2000, "user": "ben", "command": "b", "sm_percent": 40},
            {"pid": 12, "used_memory_mib": 1000, "user": "ben", "command": "b", "sm_percent": 20},
            {"pid": 13, "used_memory_mib": 1000, "user": "cy", "command": "c"}]}]}))
    got = samples(str(scenario), "hwinfo_gpu_user_sm_utilization_ratio")
    assert {dict(k)["user"]: v for k, v in got.items()} == {"ana": 0.0, "ben": pytest.approx(0.6)}
    assert samples("dgx-a100-mig", "hwinfo_gpu_user_sm_utilization_ratio") == {}
