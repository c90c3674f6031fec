from __future__ import annotations

import pynvml
import pytest

from hwinfo import sim
from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.sources import scenario_owners
from hwinfo.model.gpu import GpuSystem
from hwinfo.render.text.gpu import render_gpus
from hwinfo.render.text.style import Style
from hwinfo.sim.machine import SAMPLE_SECONDS


def _system(name: str, samples: int = 1) -> GpuSystem:
    collector = GpuCollector(scenario_owners(name))
    try:
        for _ in range(samples):  # one collection in each sample of scenario time
            system = collector.collect()
            pynvml.nvmlLib.machine.advance(SAMPLE_SECONDS)
        return system
    finally:
        collector.close()
        sim.uninstall()


@pytest.mark.parametrize("name", ["dgx-a100-mig", "faults-demo", "workstation-geforce", "vgpu-guest"])
def test_fits_80_columns(name: str) -> None:
    text = render_gpus(_system(name), Style(color=False))
    assert max(len(line) for line in text.splitlines()) <= 80


def test_summary_lists_every_gpu_once() -> None:
    text = render_gpus(_system("dgx-a100-mig"), Style())
    summary = text.split("\n\n")[0].splitlines()[3:]
    assert [row.split()[0] for row in summary] == [str(i) for i in range(8)]


def test_mig_tree_and_warnings() -> None:
    text = render_gpus(_system("dgx-a100-mig"), Style())
    assert "1c.3g.40gb" in text and "2c.3g.40gb" in text
    assert "MIG is enabled but no instances exist" in text
    assert "change to enabled pending reset" in text
    assert "(not in this PID namespace, or exited)" in text


def test_faults_are_visible() -> None:
    text = render_gpus(_system("faults-demo", samples=4), Style())
    assert "GPU IS LOST" in text
    assert "gen3 x8 of gen4 x16 (degraded)" in text
    assert "remapped rows 0+1 PENDING" in text
    assert "sw_power_cap" in text


def test_unprivileged_mig_says_why_capacity_is_missing() -> None:
    text = render_gpus(_system("h200-mig"), Style())
    assert "free capacity: not available (needs privileges)" in text


def test_no_driver_is_a_single_line() -> None:
    text = render_gpus(_system("no-driver"), Style())
    assert text.splitlines()[1:] == ["  no NVIDIA driver installed (libnvidia-ml.so.1 not found)"]


def test_colour_only_when_asked() -> None:
    system = _system("faults-demo", samples=4)
    assert "\x1b[" not in render_gpus(system, Style(color=False))
    assert "\x1b[31;1m" in render_gpus(system, Style(color=True))
