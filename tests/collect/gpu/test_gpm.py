"""GPM activity of GPUs and MIG GPU instances, read by the collector through the real pynvml."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from hwinfo import sim
from hwinfo.collect.gpu import gpm
from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.sources import machine_owners

from .conftest import scenario_json


def _gpm_of_instances(scenario: str) -> dict[int, float]:
    gpu = scenario_json(scenario)["gpus"][0]
    return {gi["id"]: gi["gpm"]["sm_active_percent"] / 100 for gi in gpu["mig"]["gpu_instances"]}


def test_one_shot_reads_every_gpu_instance_over_a_short_window(
    simulate: Callable[..., GpuCollector],
) -> None:
    started = time.monotonic()
    devices = simulate("h200-mig").collect().gpus[0].mig.devices
    assert {d.gpu_instance_id: d.activity.sm_active_ratio for d in devices} == \
        _gpm_of_instances("h200-mig")
    windows = {d.activity.window_seconds for d in devices}
    assert min(windows) >= gpm.MIN_WINDOW_SECONDS
    assert time.monotonic() - started >= gpm.MIN_WINDOW_SECONDS


def test_whole_gpus_outside_mig(simulate: Callable[..., GpuCollector]) -> None:
    system = simulate("dgx-h100").collect()
    expected = [g["gpm"] for g in scenario_json("dgx-h100")["gpus"]]
    got = [g.activity for g in system.gpus]
    assert [a.sm_active_ratio for a in got] == [e["sm_active_percent"] / 100 for e in expected]
    assert [a.tensor_active_ratio for a in got] == \
        [e["tensor_active_percent"] / 100 for e in expected]


def test_no_activity_before_hopper(simulate: Callable[..., GpuCollector]) -> None:
    system = simulate("dgx-a100-mig").collect()
    assert all(g.activity is None for g in system.gpus)
    assert all(d.activity is None for g in system.gpus if g.mig for d in g.mig.devices)


def test_daemon_window_is_the_interval_and_follows_reconfiguration() -> None:
    machine = sim.install("h200-mig")
    collector = GpuCollector(machine_owners(machine))
    try:
        collector.collect()
        time.sleep(0.3)
        second = collector.collect().gpus[0].mig.devices
        assert all(d.activity.window_seconds >= 0.3 for d in second)
        machine.reconfigure_mig(0, {"enabled": True, "gpu_instances": [
            {"profile": "7g.141gb", "id": 0, "gpm": {"sm_active_percent": 91}}]})
        devices = collector.collect().gpus[0].mig.devices
        assert [(d.gpu_instance_id, d.activity.sm_active_ratio) for d in devices] == [(0, 0.91)]
        # The old instances' samples were freed: only the new instance's buffers remain.
        assert len(machine.gpm_samples) == 2
    finally:
        collector.close()
        sim.uninstall()
    assert machine.gpm_samples == {}


@pytest.mark.parametrize("scenario", ["h200-mig", "dgx-h100"])
def test_no_processes_still_reads_activity(
    simulate: Callable[..., GpuCollector], scenario: str,
) -> None:
    system = simulate(scenario, with_processes=False).collect()
    gpu = system.gpus[0]
    activity = gpu.mig.devices[0].activity if gpu.mig and gpu.mig.enabled else gpu.activity
    assert activity is not None
