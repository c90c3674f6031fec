"""`hwinfo job`'s advice and job ids on jobs whose figures are known (the queries run against
a real Prometheus and Slurm in tests/deploy/test_slurm.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from fixtures.loopback import serving

from hwinfo.ledger.job import Job, JobGpu, _advise, job_id
from hwinfo.ledger.queries import ATTRIBUTED_HELD_RECORD

GIB = 2**30
HOUR = 3600.0
A100 = "NVIDIA A100-SXM4-80GB"
PROFILES = {A100: {"1g.10gb": {"profile_memory": 9.75 * GIB, "profile_share": 1 / 7},
                   "3g.40gb": {"profile_memory": 39.5 * GIB, "profile_share": 3 / 7}}}


def _gpu(index: int, busy: float, utilization: float, peak_gib: float, idle: float = 0.0,
         model: str = A100) -> JobGpu:
    return JobGpu("node1:9110", str(index), f"GPU-{index}", "", "", model, ["alice"], HOUR, HOUR,
                  busy_gpu_seconds=busy * HOUR, idle_held_gpu_seconds=idle * HOUR,
                  utilization_gpu_seconds=utilization * HOUR, peak_memory_bytes=peak_gib * GIB,
                  memory_total_bytes=80 * GIB)


def _job(*gpus: JobGpu) -> Job:
    return Job("4242", 0.0, HOUR, 60.0, list(gpus))


def test_fewer_gpus_when_some_sat_unused() -> None:
    advice = _advise(_job(_gpu(0, 1.0, 0.9, 60), _gpu(1, 0.02, 0.01, 2, idle=0.98),
                          _gpu(2, 0.0, 0.0, 2, idle=1.0), _gpu(3, 0.95, 0.8, 60)), PROFILES)
    assert advice[0].startswith("2 of its 4 GPUs were busy less than 10%")
    assert "--gres=gpu:2" in advice[0]


def test_a_mig_slice_when_memory_and_work_fit_one() -> None:
    advice = _advise(_job(_gpu(0, 0.3, 0.12, 8.0)), PROFILES)
    assert advice == [("peak memory 8.00 GiB and mean utilization 12% fit a 1g.10gb MIG slice of "
                      f"the {A100}: ask for one instead of a whole GPU")]


def test_a_smaller_gpu_where_no_mig_profile_is_known() -> None:
    advice = _advise(_job(_gpu(0, 0.3, 0.12, 8.0, model="NVIDIA L40S")), {})
    assert advice == [("peak memory 8.00 GiB of the GPU's 80.0 GiB and mean utilization 12%: "
                      "a smaller GPU would do")]


def test_a_mig_slice_from_the_catalogue_where_no_gpu_exports_profiles() -> None:
    # MIG off on every A100 80GB: the catalogue's 1g.10gb (9856 MiB, 1/7) holds 8 GiB at 12 %.
    advice = _advise(_job(_gpu(0, 0.3, 0.12, 8.0)), {})
    assert advice == [("peak memory 8.00 GiB and mean utilization 12% fit a 1g.10gb MIG slice of "
                      f"the {A100} (from hwinfo's MIG catalogue): ask for one instead of a whole GPU")]


def test_idle_time_is_said_and_a_busy_big_job_gets_no_advice() -> None:
    assert _advise(_job(_gpu(0, 0.9, 0.85, 70)), PROFILES) == []
    idle = _advise(_job(_gpu(0, 0.2, 0.2, 70, idle=0.8)), PROFILES)
    assert idle == [("its GPUs sat idle 80% of the time held: look at what the job waits on "
                    "(input, CPU, the network), or end it sooner")]


def test_an_array_task_is_asked_for_its_own_id() -> None:
    with pytest.raises(ValueError, match=r"is an array task: give its own job id \(squeue -h -o %A -j 1234_5\)"):
        job_id("1234_5")


@pytest.mark.parametrize("text", ["", "12a", "-1", "9" * 13, "1 2", "1_2_3"])
def test_job_ids_are_digits(text: str) -> None:
    with pytest.raises(ValueError, match="is not a Slurm job id"):
        job_id(text)


def test_job_id_is_read_as_slurm_numbers_it() -> None:
    assert job_id(" 0042 ") == "42"


DEVICE = {"job": "j", "instance": "h", "gpu": "0", "uuid": "u"}


def _job_against(figures: dict[str, float]) -> subprocess.CompletedProcess[str]:
    """`hwinfo job 42 --format json` (its default 30-day range) against an engine on loopback
    whose rules run every 60 s and whose every query answers these figures for one GPU."""
    rules = {"groups": [{"name": "hwinfo-ledger", "interval": 60,
                         "rules": [{"name": ATTRIBUTED_HELD_RECORD}]}]}
    vector = {"resultType": "vector", "result": [
        {"metric": {**DEVICE, "measure": measure, "model": "M", "user": "alice"},
         "value": [0, repr(value)]} for measure, value in figures.items()]}

    def answer(path: str) -> tuple[int, str, bytes]:
        data = rules if "rules" in path else vector
        return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()

    with serving(answer) as url:
        return subprocess.run([sys.executable, "-m", "hwinfo", "job", "42", "--prometheus", url,
                               "--format", "json"], capture_output=True, text=True, timeout=60,
                              check=False)


def _refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr, done
    (line,) = done.stderr.splitlines()
    return line


def test_an_absurd_figure_from_prometheus_is_one_line() -> None:
    assert "absurd" in _refused(_job_against({"held": 1e308, "samples": 1}))


def test_figures_a_gpu_can_hold_are_told() -> None:
    """60 evaluations of 60 s, the job alone on the GPU: held 60 x 60 = 3,600 GPU-s, busy at
    30 of them (1,800), idle at 30 (1,800): busy 50 %; a 40 GiB peak on an 80 GB GPU."""
    done = _job_against({"held": 60, "busy": 30, "idle": 30, "samples": 60,
                         "peak_memory": 40 * GIB, "gpu_memory": 80e9})
    assert done.returncode == 0, done.stderr
    (gpu,) = json.loads(done.stdout)["gpus"]
    assert (gpu["held_seconds"], gpu["held_gpu_seconds"], gpu["idle_held_gpu_seconds"]) == (
        3600, 3600, 1800)
    assert gpu["busy_ratio"] == 0.5


@pytest.mark.parametrize(("figures", "says"), [
    # Held at 1 evaluation (60 GPU-s), idle at 40 (2,400 GPU-s): idle 4,000 % of held.
    ({"held": 1, "idle": 40, "samples": 1},
     "busy, idle and unknown (0.7 GPU-hours) are more than held (<0.1)"),
    # 999,360 evaluations of 60 s are 694 days, in a 30-day range (2,592,000 s, one more
    # evaluation at each edge at most: 2,592,090 s).
    ({"held": 999_360, "samples": 999_360},
     "the job held GPU 0 of h for 694d of a 30d range"),
    # Held at 60 evaluations, at a share of the GPU of 2 (7,200 GPU-s in 3,600 s).
    ({"held": 120, "samples": 60}, "2.0 GPU-hours held in 1h of 1 GPUs cannot be"),
    # An 8 TiB peak on an 80 GB GPU.
    ({"held": 1, "samples": 1, "peak_memory": 8 * 2**40, "gpu_memory": 80e9},
     "a peak of 8.00 TiB on GPU 0 of h, whose memory is 74.5 GiB"),
], ids=["idle 4000 % of held", "694 days in 30", "twice the GPU", "8 TiB on 80 GB"])
def test_figures_no_gpu_can_hold_are_refused_as_usage_refuses_them(
        figures: dict[str, float], says: str) -> None:
    assert says in _refused(_job_against(figures))


def test_the_timeout_bounds_the_whole_job_command() -> None:
    """The rules come within --timeout 3 (in 1.5 s); the queries are answered only once the
    command has ended (a minute at most): only a deadline ends it, and the whole command's
    comes first by the 1.5 s the rules took (a query's own starts when it is sent, and says
    its URL), with one line."""
    rules = {"groups": [{"name": "hwinfo-ledger", "interval": 60,
                         "rules": [{"name": ATTRIBUTED_HELD_RECORD}]}]}
    vector = {"resultType": "vector", "result": [{"metric": {
        "measure": "held", "job": "j", "instance": "h", "gpu": "0", "uuid": "u", "model": "M"},
        "value": [0, "1"]}]}
    ended = threading.Event()

    def answer(path: str) -> tuple[int, str, bytes]:
        if "rules" in path:
            time.sleep(1.5)  # a slow engine, not an ordering of events
            data = rules
        else:
            ended.wait(60)
            data = vector
        return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()

    with serving(answer) as url:
        try:
            done = subprocess.run([sys.executable, "-m", "hwinfo", "job", "42", "--prometheus",
                                   url, "--timeout", "3"], capture_output=True, text=True,
                                  timeout=60, check=False)
        finally:
            ended.set()
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip() == "Error: no complete answer within 3 s (--timeout)"
