"""`hwinfo job`'s advice and job ids on jobs whose figures are known (the queries run against
a real Prometheus and Slurm in tests/deploy/test_slurm.py)."""

from __future__ import annotations

import pytest

from hwinfo.ledger.job import Job, JobGpu, _advise, job_id

GIB = 2**30
HOUR = 3600.0
A100 = "NVIDIA A100-SXM4-80GB"
PROFILES = {A100: {"1g.10gb": {"profile_memory": 9.75 * GIB, "profile_share": 1 / 7},
                   "3g.40gb": {"profile_memory": 39.5 * GIB, "profile_share": 3 / 7}}}


def _gpu(index: int, busy: float, utilization: float, peak_gib: float, idle: float = 0.0) -> JobGpu:
    return JobGpu("node1:9110", str(index), f"GPU-{index}", "", "", A100, ["alice"], HOUR, HOUR,
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
    advice = _advise(_job(_gpu(0, 0.3, 0.12, 8.0)), {})
    assert advice == [("peak memory 8.00 GiB of the GPU's 80.0 GiB and mean utilization 12%: "
                      "a smaller GPU would do")]


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


def test_an_absurd_figure_from_prometheus_is_one_line() -> None:
    import json
    import subprocess
    import sys

    from fixtures.loopback import serving

    from hwinfo.ledger.queries import ATTRIBUTED_HELD_RECORD

    rules = {"groups": [{"name": "hwinfo-ledger", "interval": 60,
                         "rules": [{"name": ATTRIBUTED_HELD_RECORD}]}]}
    vector = {"resultType": "vector", "result": [{"metric": {
        "measure": "held", "slurm_job": "42", "job": "j", "instance": "h", "gpu": "0",
        "uuid": "u", "model": "M"}, "value": [0, "1e308"]}]}

    def answer(path: str) -> tuple[int, str, bytes]:
        data = rules if "rules" in path else vector
        return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()

    with serving(answer) as url:
        done = subprocess.run([sys.executable, "-m", "hwinfo", "job", "42", "--prometheus", url],
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "absurd" in done.stderr


def test_the_timeout_bounds_the_whole_job_command() -> None:
    """Each answer comes within --timeout 1 (0.6 s), but the rules and then the queries take
    1.2 s together: only a deadline for the whole command ends it, with one line."""
    import json
    import subprocess
    import sys
    import time

    from fixtures.loopback import serving

    from hwinfo.ledger.queries import ATTRIBUTED_HELD_RECORD

    rules = {"groups": [{"name": "hwinfo-ledger", "interval": 60,
                         "rules": [{"name": ATTRIBUTED_HELD_RECORD}]}]}
    vector = {"resultType": "vector", "result": [{"metric": {
        "measure": "held", "job": "j", "instance": "h", "gpu": "0", "uuid": "u", "model": "M"},
        "value": [0, "1"]}]}

    def answer(path: str) -> tuple[int, str, bytes]:
        time.sleep(0.6)  # a slow engine, not an ordering of events
        data = rules if "rules" in path else vector
        return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()

    with serving(answer) as url:
        done = subprocess.run([sys.executable, "-m", "hwinfo", "job", "42", "--prometheus", url,
                               "--timeout", "1"], capture_output=True, text=True, timeout=60,
                              check=False)
    assert done.returncode == 1, done.stdout
    assert done.stderr.strip() == "Error: no complete answer within 1 s (--timeout)"
