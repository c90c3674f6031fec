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


def test_device_shares_and_per_device_user_memory() -> None:
    shares = samples("dgx-a100-mig", "hwinfo_mig_device_gpu_share_ratio")
    by_device = {(dict(k)["gpu"], dict(k)["gpu_instance_id"], dict(k)["compute_instance_id"]): v
                 for k, v in shares.items()}
    assert by_device[("2", "2", "0")] == 1 / 7 and by_device[("2", "2", "1")] == 2 / 7
    held = samples("dgx-a100-mig", "hwinfo_mig_device_user_memory_used_bytes")
    doc = json.loads((Path(sim.__file__).parent / "scenarios" / "dgx-a100-mig.json").read_text())
    expected: dict[tuple[str, str, str], float] = {}
    for gpu_index, gpu in enumerate(doc["gpus"]):
        for proc in gpu.get("processes", []):
            if "gpu_instance_id" in proc and proc.get("used_memory_mib") is not None:
                key = (str(gpu_index), str(proc["gpu_instance_id"]), proc.get("user") or "(unknown)")
                if proc.get("visible", True) is False:
                    key = (key[0], key[1], "(unknown)")
                expected[key] = expected.get(key, 0) + proc["used_memory_mib"] * (1 << 20)
    got: dict[tuple[str, str, str], float] = {}
    for labels, value in held.items():
        d = dict(labels)
        key = (d["gpu"], d["gpu_instance_id"], d["user"])
        got[key] = got.get(key, 0) + value
    assert got == expected


def test_per_device_user_process_counts_include_processes_without_memory(tmp_path: Path) -> None:
    # dan's two processes on the 3g.40gb report no memory: they still count, and he has no
    # memory series there; carol's one process counts beside them.
    scenario = tmp_path / "mig.json"
    scenario.write_text(json.dumps({"format": 1, "description": "MIG, memory not reported", "gpus": [
        {"board": "A100-SXM4-80GB",
         "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.40gb", "start": 4, "id": 2}]},
         "processes": [
             {"pid": p, "used_memory_mib": mib, "user": user, "command": "x",
              "gpu_instance_id": 2, "compute_instance_id": 0}
             for p, user, mib in ((10, "dan", None), (11, "dan", None), (12, "carol", 1000))]}]}))
    counts = samples(str(scenario), "hwinfo_mig_device_user_processes")
    assert {dict(k)["user"]: v for k, v in counts.items()} == {"dan": 2, "carol": 1}
    memory = samples(str(scenario), "hwinfo_mig_device_user_memory_used_bytes")
    assert {dict(k)["user"] for k in memory} == {"carol"}
