"""Per-GPU metrics: GPM activity of whole GPUs outside MIG mode."""

from __future__ import annotations

from .activity import samples


def test_whole_gpu_activity() -> None:
    got = samples("dgx-h100", "hwinfo_gpu_sm_occupancy_ratio")
    assert len(got) == 8
    assert {dict(labels)["gpu"]: value for labels, value in got.items()}["0"] == 0.39
