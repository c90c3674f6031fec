"""MIG metrics: GPM activity once per GPU instance, from the scenario's figures."""

from __future__ import annotations

import json
from pathlib import Path

from hwinfo import sim

from .activity import samples


def test_gpu_instance_activity_is_exported_once_per_instance() -> None:
    doc = json.loads((Path(sim.__file__).parent / "scenarios" / "h200-mig.json").read_text())
    expected = {str(gi["id"]): gi["gpm"]["tensor_active_percent"] / 100
                for gi in doc["gpus"][0]["mig"]["gpu_instances"]}
    got = samples("h200-mig", "hwinfo_mig_gpu_instance_tensor_active_ratio")
    assert {dict(labels)["gpu_instance_id"]: value for labels, value in got.items()} == expected


def test_no_activity_series_before_hopper() -> None:
    assert samples("dgx-a100-mig", "hwinfo_mig_gpu_instance_sm_active_ratio") == {}
    assert samples("dgx-a100-mig", "hwinfo_gpu_sm_active_ratio") == {}
