"""GPUs that share the CPU's memory (GB10, Grace boards): no framebuffer figure, never 0."""

from __future__ import annotations

from collections.abc import Callable

import pynvml
import pytest
from fixtures.simulated import simulated_snapshot

from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.render.text.report import render_text
from hwinfo.render.text.style import Style


def test_nvml_has_no_memory_figure_but_says_ats(simulate: Callable[..., GpuCollector]) -> None:
    gpu = simulate("dgx-spark").collect().gpus[0]
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetMemoryInfo(handle)
    assert pynvml.nvmlDeviceGetAddressingMode(handle) == pynvml.NVML_DEVICE_ADDRESSING_MODE_ATS
    assert gpu.addressing_mode == "ats"
    assert (gpu.memory_total_bytes, gpu.memory_used_bytes, gpu.memory_free_bytes) == (None,) * 3
    assert "memory" not in gpu.unavailable  # not supported: no reason to show


def test_the_report_shows_the_system_memory_it_shares() -> None:
    text = render_text(simulated_snapshot("dgx-spark"), Style(color=False))
    summary = next(line for line in text.splitlines() if line.startswith("  0  GB10"))
    assert summary.split()[3] == "shared"
    detail = text[text.index("GPU 0  NVIDIA GB10"):]
    memory = " ".join(" ".join(line.split()) for line in detail.splitlines()[5:7])
    assert memory.startswith("Memory shared with the CPU (no framebuffer figure): system ")
    assert "0 B" not in detail.split("Utilization")[0]


def test_older_drivers_do_not_offer_the_call(simulate: Callable[..., GpuCollector],
                                             scenario_file: Callable[..., object]) -> None:
    path = scenario_file({"driver": {"version": "570.86.10"},
                          "gpus": [{"name": "NVIDIA GB10", "memory_total_mib": None,
                                    "addressing_mode": "ats"}]})
    gpu = simulate(path).collect().gpus[0]
    assert gpu.addressing_mode is None and gpu.memory_total_bytes is None
