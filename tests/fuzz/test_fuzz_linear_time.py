"""Hostile inputs shaped to make quadratic work: each finishes within a deadline.

Each case runs in a process of its own, killed at its deadline: a regex backtracking in C
cannot be interrupted from a thread. The deadline is generous for a loaded 2-core machine
(a linear run takes about a second) and below what the quadratic versions took on the same
inputs on an idle one (48 s to minutes). Deadlines, not benchmarks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from fixtures.loopback import serving

from hwinfo.ledger.queries import ATTRIBUTED_HELD_RECORD

DEADLINE_SECONDS = 30.0


def finishes_in_time(code: str) -> str:
    """The output of `code` run by a fresh interpreter, which must end within the deadline."""
    try:
        result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                                text=True, timeout=DEADLINE_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"not done within {DEADLINE_SECONDS:g} s")
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(("value", "kept"), [
    ("'x' + ' [' * 500_000", 1_000_001),  # no note: it does not end with "]"
    ("'x' + ' ' * 1_000_000 + 'y]'", 1_000_003),  # no note: no "[" after a space
    ("'x [' + ' [' * 500_000 + ']'", 1),  # one long note
])
def test_a_long_value_in_a_text_dump(value: str, kept: int) -> None:
    # 256 KB took 21 s in the note-stripping regex; 1 MB would take minutes.
    out = finishes_in_time(f"""
        from hwinfo.sim.importer_text import parse_text_dump
        value = {value}
        dump = "==============NVSMI LOG==============\\n\\nGPU 00000000:01:00.0\\n"
        root = parse_text_dump(dump + "    Product Name : " + value + "\\n")
        print(len(root.find("gpu/product_name").text))
    """)
    assert int(out) == kept


def test_a_fleet_of_20000_mig_devices_and_profiles() -> None:
    # A scan of every device per series took 97 s for 20,000 devices.
    out = finishes_in_time("""
        from hwinfo.ledger.fleet import _fill, hosts_seen
        from hwinfo.ledger.prometheus import Sample
        host = {"job": "j", "instance": "i"}
        hosts = hosts_seen([Sample({**host, "measure": "seen"}, 1)], "http://p")
        gpu = {**host, "gpu": "0", "uuid": "GPU-1"}
        samples = [Sample({**gpu, "__name__": "hwinfo_gpu_mig_enabled"}, 1)]
        for i in range(20_000):
            gi = {**gpu, "gpu_instance_id": str(i)}
            samples += [
                Sample({**gi, "__name__": "hwinfo_mig_device_info", "compute_instance_id": "0",
                        "profile": "1g.10gb", "mig_uuid": f"MIG-{i}"}, 1),
                Sample({**gi, "__name__": "hwinfo_mig_gpu_instance_memory_total_bytes"}, 2**30),
                Sample({**gpu, "__name__": "hwinfo_mig_profile_free_instances",
                        "profile": f"p{i}"}, 1),
            ]
        _fill(hosts, samples)
        (gpu,) = hosts[("j", "i")].gpus
        print(len(gpu.mig_devices), len(gpu.profiles),
              sum(d.memory_total_bytes == 2**30 for d in gpu.mig_devices))
    """)
    assert out.split() == ["20000", "20000", "20000"]


@pytest.mark.parametrize("shape", ["a model each, none with profiles",
                                   "one model of 12,000 profiles"])
def test_advice_for_12000_users(shape: str) -> None:
    # 12,000 busy users took 48 s: a note looked up in a list per user, every profile per user.
    out = finishes_in_time(f"""
        from hwinfo.ledger.advice import advice_for
        from hwinfo.ledger.prometheus import Sample
        many_models = {shape.startswith("a model each")}
        samples = []
        for i in range(12_000):
            who = {{"user": f"u{{i}}", "model": f"M{{i}}" if many_models else "M"}}
            samples += [Sample({{"measure": "whole_held", **who}}, 1),
                        Sample({{"measure": "whole_evaluations", **who}}, 1),
                        Sample({{"measure": "whole_utilization", **who}}, 1),
                        Sample({{"measure": "whole_peak_memory", **who}}, 2**30),
                        Sample({{"measure": "mig_capable", "model": who["model"]}}, 0)]
            if not many_models:
                profile = {{"model": "M", "profile": f"p{{i}}"}}
                samples += [Sample({{"measure": "profile_memory", **profile}}, 2**40),
                            Sample({{"measure": "profile_share", **profile}}, 0.5)]
        notes = []
        advice = advice_for(samples, 60.0, 0.05, notes)
        print(len(advice), len(notes), sum(a.profile is None for a in advice))
    """)
    assert out.split() == ["12000", "12000" if shape.startswith("a model each") else "1", "12000"]


def test_a_job_whose_gpu_has_20000_users() -> None:
    """`hwinfo job` against an engine that names 20,000 users of the job's one GPU: each
    user was added to a sorted list, 128 s in all; the command lists them, each once."""
    device = {"job": "j", "instance": "h", "gpu": "0", "uuid": "GPU-1"}
    result = [{"metric": {**device, "measure": "held", "model": "M"}, "value": [0, "1"]}]
    result += [{"metric": {**device, "measure": "users", "user": f"u{i:05d}"}, "value": [0, "1"]}
               for i in reversed(range(20_000))]
    rules = {"groups": [{"name": "hwinfo-ledger", "interval": 60,
                         "rules": [{"name": ATTRIBUTED_HELD_RECORD}]}]}

    def answer(path: str) -> tuple[int, str, bytes]:
        data = rules if "rules" in path else {"resultType": "vector", "result": result}
        return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()

    with serving(answer) as url:
        try:
            done = subprocess.run([sys.executable, "-m", "hwinfo", "job", "42", "--prometheus", url,
                                   "--format", "json", "--timeout", str(DEADLINE_SECONDS)],
                                  capture_output=True, text=True, timeout=DEADLINE_SECONDS + 10,
                                  check=False)
        except subprocess.TimeoutExpired:
            pytest.fail(f"not done within {DEADLINE_SECONDS + 10:g} s")
    assert done.returncode == 0, done.stderr
    (gpu,) = json.loads(done.stdout)["gpus"]
    assert gpu["users"] == [f"u{i:05d}" for i in range(20_000)]


def test_the_user_rollup_of_80000_jobs_of_one_user_on_one_gpu() -> None:
    # Each job was added to a sorted list: 5.3 s for 8,000, past the NVML deadline of a
    # sample, so the GPU section was lost.
    out = finishes_in_time("""
        from types import SimpleNamespace
        from hwinfo.collect.gpu.processes import user_rollup
        from hwinfo.model.attribution import Attribution
        from hwinfo.model.gpu import GpuProcess
        procs = [GpuProcess(pid=i, used_memory_bytes=1, type="compute", gpu_instance_id=None,
                            compute_instance_id=None, visible=True, user="mallory", name="x",
                            attribution=Attribution("slurm", slurm_job=str(80_000 - i),
                                                    slurm_step="0"))
                 for i in range(80_000)]
        (row,) = user_rollup([SimpleNamespace(index=0, all_processes=lambda: procs)])
        print(row.processes, len(row.attributions), row.attributions[0], row.attributions[-1])
    """)
    assert out.split() == ["80000", "80000", "slurm:1.0", "slurm:9999.0"]
