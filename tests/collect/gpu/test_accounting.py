"""NVML accounting in the GPU collector: the mode in every report, and short jobs counted
once per user by a daemon."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pynvml
import pytest

from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.model.gpu import Accounting

ScenarioFile = Callable[[dict[str, Any]], Path]
Simulate = Callable[..., GpuCollector]

GPUS = [
    {"board": "RTX-A5000", "utilization_gpu_percent": 90, "processes": [
        {"pid": 10, "used_memory_mib": 100, "user": "alice"}],
     "accounting": {"enabled": True, "processes": [
         {"pid": 500, "run_ms": 4000, "gpu_util_percent": 10},  # ended before hwinfo began
         {"pid": 501, "ended_after_s": 2, "run_ms": 1500, "gpu_util_percent": 40},
         # Peak memory not available (WDDM): nvidia-ml-py's own wrapper raises on it.
         {"pid": 502, "ended_after_s": 2, "run_ms": 500, "max_memory_mib": None},
     ]}},
    {"board": "RTX-A5000"},
]


def _machine() -> Any:
    return pynvml.nvmlLib.machine


def test_a_report_says_whether_accounting_is_on(simulate: Simulate, scenario_file: ScenarioFile) -> None:
    system = simulate(scenario_file({"gpus": GPUS})).collect()
    assert [g.accounting for g in system.gpus] == [Accounting(True, 4000), Accounting(False, 4000)]
    assert system.accounted == []  # a one-shot report has no "between two samples"


def test_old_drivers_without_accounting_read_as_not_available(
    simulate: Simulate, scenario_file: ScenarioFile
) -> None:
    doc = {"driver": {"symbols": ["nvmlInit_v2", "nvmlInitWithFlags", "nvmlShutdown",
                                  "nvmlErrorString", "nvmlDeviceGetCount_v2",
                                  "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetUUID"]},
           "gpus": GPUS}
    system = simulate(scenario_file(doc)).collect()
    assert [g.accounting for g in system.gpus] == [None, None]
    assert "accounting" not in system.gpus[0].unavailable


def test_a_daemon_counts_each_short_job_once(simulate: Simulate, scenario_file: ScenarioFile) -> None:
    collector = simulate(scenario_file({"gpus": GPUS}), between_samples=True)
    # What the buffer held at start is not counted; the rows short jobs may land in are
    # there at 0 from the first sample (the owner-less one, and each running user's).
    assert [(u.gpu_index, u.user, u.processes, u.run_seconds) for u in collector.collect().accounted
            ] == [(0, None, 0, 0.0), (0, "alice", 0, 0.0)]
    _machine().advance(3)
    for _ in range(2):  # counted once, however many samples see it in the buffer
        usage, alice = collector.collect().accounted
        assert alice.processes == 0
        assert (usage.gpu_index, usage.user, usage.processes) == (0, None, 2)
        assert usage.run_seconds == 2.0
        assert usage.busy_seconds == pytest.approx(1.5 * 0.4)  # pid 502 has no utilization: adds nothing busy


def test_jobs_a_sample_saw_running_are_left_to_the_process_lists(
    simulate: Simulate, scenario_file: ScenarioFile
) -> None:
    collector = simulate(scenario_file({"gpus": GPUS[1:]}), between_samples=True)
    machine = _machine()
    collector.collect()  # starts NVML
    pynvml.nvmlDeviceSetAccountingMode(pynvml.nvmlDeviceGetHandleByIndex(0), 1)
    machine.set_processes(0, [{"pid": 20, "used_memory_mib": 5, "user": "bob"}])
    collector.collect()  # pid 20 listed running
    machine.set_processes(0, [{"pid": 21, "used_memory_mib": 5, "user": "carol"}])
    machine.set_processes(0, [])  # pid 21 began and ended between two samples
    usage, bob = collector.collect().accounted
    assert (usage.user, usage.processes, bob.user, bob.processes) == (None, 1, "bob", 0)


def test_without_process_collection_nothing_is_counted(
    simulate: Simulate, scenario_file: ScenarioFile
) -> None:
    collector = simulate(scenario_file({"gpus": GPUS}), between_samples=True, with_processes=False)
    collector.collect()
    _machine().advance(3)
    system = collector.collect()
    assert system.accounted == [] and system.gpus[0].accounting == Accounting(True, 4000)


def _jobs(collector: GpuCollector) -> int:
    return sum(u.processes for u in collector.collect().accounted)


def test_a_pid_used_again_is_a_new_job(simulate: Simulate, scenario_file: ScenarioFile) -> None:
    collector = simulate(scenario_file({"gpus": [{"board": "RTX-A5000",
                                                  "accounting": {"enabled": True}}]}),
                         between_samples=True)
    machine = _machine()
    _jobs(collector)
    machine.set_processes(0, [{"pid": 21, "used_memory_mib": 5}])
    machine.set_processes(0, [])
    assert _jobs(collector) == 1
    machine.set_processes(0, [{"pid": 21, "used_memory_mib": 5}])
    machine.set_processes(0, [])
    assert _jobs(collector) == 2
    # Listed running, so not counted; the pid's next short job is.
    machine.set_processes(0, [{"pid": 30, "used_memory_mib": 5, "user": "bob"}])
    _jobs(collector)
    machine.set_processes(0, [])
    assert _jobs(collector) == 2
    machine.set_processes(0, [{"pid": 30, "used_memory_mib": 5}])
    machine.set_processes(0, [])
    assert _jobs(collector) == 3


def test_accounting_turned_off_and_on_starts_afresh(
    simulate: Simulate, scenario_file: ScenarioFile
) -> None:
    collector = simulate(scenario_file({"gpus": [{"board": "RTX-A5000",
                                                  "accounting": {"enabled": True}}]}),
                         between_samples=True)
    machine, handle = _machine(), None
    _jobs(collector)
    machine.set_processes(0, [{"pid": 40, "used_memory_mib": 5}])
    machine.set_processes(0, [])
    assert _jobs(collector) == 1
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    pynvml.nvmlDeviceSetAccountingMode(handle, 0)
    assert _jobs(collector) == 1
    pynvml.nvmlDeviceSetAccountingMode(handle, 1)
    _jobs(collector)  # the first sample with it on again: the (empty) buffer as it stands
    machine.set_processes(0, [{"pid": 40, "used_memory_mib": 5}])
    machine.set_processes(0, [])
    assert _jobs(collector) == 2


def _restarted(collector: GpuCollector, tmp_path: Path, resume: bool = True) -> GpuCollector:
    """The daemon stopped, its state kept on disk, and a new one started from that state."""
    from hwinfo.collect.gpu import accounting_state

    judged = collector.accounting_judged
    assert judged is not None
    (tmp_path / accounting_state.FILE_NAME).write_bytes(accounting_state.dumps(judged))
    collector.close()
    resumed = accounting_state.load(str(tmp_path)) if resume else None
    return GpuCollector(collector.owner_of, between_samples=True, accounting_resumed=resumed)


def _short_job_while_down(machine: Any) -> None:
    """pid 21 (seen running before the stop) ends; pid 22 starts and ends: both while down."""
    machine.set_processes(0, [{"pid": 10, "used_memory_mib": 100, "user": "alice"}])
    machine.set_processes(0, [{"pid": 10, "used_memory_mib": 100, "user": "alice"},
                              {"pid": 22, "used_memory_mib": 5}])
    machine.advance(2)  # pid 22 runs 2 s
    machine.set_processes(0, [{"pid": 10, "used_memory_mib": 100, "user": "alice"}])


def _before_the_stop(simulate: Simulate, scenario_file: ScenarioFile) -> GpuCollector:
    collector = simulate(scenario_file({"gpus": [{"board": "RTX-A5000", "processes": [
        {"pid": 10, "used_memory_mib": 100, "user": "alice"}], "accounting": {"enabled": True}}]}),
        between_samples=True)
    collector.collect()
    _machine().set_processes(0, [{"pid": 10, "used_memory_mib": 100, "user": "alice"},
                                 {"pid": 21, "used_memory_mib": 5, "user": "bob"}])
    collector.collect()  # pid 21 listed running: the process lists count it
    return collector


def test_a_restarted_daemon_counts_what_ended_while_it_was_down(
    simulate: Simulate, scenario_file: ScenarioFile, tmp_path: Path
) -> None:
    collector = _restarted(_before_the_stop(simulate, scenario_file), tmp_path)
    _short_job_while_down(_machine())
    # Served at 0 first, so that Prometheus's increase() sees the job as growth.
    assert [(u.user, u.processes) for u in collector.collect().accounted] == [
        (None, 0), ("alice", 0)]
    for _ in range(2):  # then pid 22, once; pid 21 was seen running, so it is not a short job
        unknown, alice = collector.collect().accounted
        assert (unknown.user, unknown.processes, alice.processes) == (None, 1, 0)
        assert unknown.run_seconds == pytest.approx(2, abs=0.1)
    collector.close()


def test_without_its_state_a_restarted_daemon_loses_them(
    simulate: Simulate, scenario_file: ScenarioFile, tmp_path: Path
) -> None:
    collector = _restarted(_before_the_stop(simulate, scenario_file), tmp_path, resume=False)
    _short_job_while_down(_machine())
    for _ in range(3):
        assert sum(u.processes for u in collector.collect().accounted) == 0
    collector.close()


def test_what_ended_before_the_last_judgement_is_not_counted_again(
    simulate: Simulate, scenario_file: ScenarioFile, tmp_path: Path
) -> None:
    """An entry the last daemon never judged (its statistics could not be read) that ended
    before that daemon's last word: either daemon could have seen it, so neither counts it."""
    from hwinfo.collect.gpu import accounting_state

    collector = _before_the_stop(simulate, scenario_file)
    _short_job_while_down(_machine())
    judged = collector.accounting_judged
    assert judged is not None
    (uuid, kept), = judged.items()
    later = accounting_state.Judged(kept.at + 3600, kept.entries)
    (tmp_path / accounting_state.FILE_NAME).write_bytes(accounting_state.dumps({uuid: later}))
    collector.close()
    resumed = GpuCollector(collector.owner_of, between_samples=True,
                           accounting_resumed=accounting_state.load(str(tmp_path)))
    for _ in range(2):
        assert sum(u.processes for u in resumed.collect().accounted) == 0
    resumed.close()
