"""The built-in scenarios load, are self-consistent, and show what their descriptions promise."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pynvml
import pytest

import hwinfo.sim
from hwinfo.sim import Scenario
from hwinfo.sim.scenario_model import GpuSpec

SCENARIO_DIR = Path(hwinfo.sim.__path__[0]) / "scenarios"
NAMES = sorted(p.stem for p in SCENARIO_DIR.glob("*.json"))
EXPECTED = {
    "blackwell-mig",
    "cloud-t4",
    "dgx-a100-mig",
    "dgx-h100",
    "faults-demo",
    "h200-mig",
    "lab-server",
    "no-driver",
    "vgpu-guest",
    "workstation-geforce",
}


def load(name: str) -> Scenario:
    """A built-in through the public loader, by name as `--simulate NAME` passes it."""
    return hwinfo.sim.load_scenario(name)


@contextmanager
def simulated(name: str) -> Iterator[None]:
    """pynvml running on the simulator with this built-in."""
    hwinfo.sim.install(name)
    pynvml.nvmlInit()
    try:
        yield
    finally:
        pynvml.nvmlShutdown()
        hwinfo.sim.uninstall()


def _mig_devices(gpu: Any) -> list[Any]:
    """A GPU's MIG device handles, by index until NVML says NotFound."""
    handles = []
    while True:
        try:
            handles.append(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, len(handles)))
        except pynvml.NVMLError_NotFound:
            return handles


def test_the_expected_scenarios_are_built_in() -> None:
    assert EXPECTED <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_builtin_is_consistent(name: str) -> None:
    scenario = load(name)
    assert scenario.description
    for gpu in scenario.gpus:
        where = f"{name} gpu {gpu.index}"
        known = [p.used_memory_mib for p in gpu.processes if p.used_memory_mib is not None]
        if gpu.memory_total_mib is None:  # shares the CPU's memory: no framebuffer to fill
            assert gpu.addressing_mode == "ats" and not known, where
            continue
        assert sum(known) <= gpu.memory_total_mib - (gpu.memory_reserved_mib or 0), where
        if gpu.memory_used_mib is not None:
            assert gpu.memory_used_mib >= sum(known), where
        for gi in gpu.mig.gpu_instances if gpu.mig else ():
            inside = [p for p in gpu.processes if p.gpu_instance_id == gi.id]
            used = sum(p.used_memory_mib or 0 for p in inside)
            assert used <= gi.profile.memory_mib, f"{where} GI {gi.id}"
        if gpu.mig and gpu.mig.enabled and gpu.mig.gpu_instances:
            assert all(p.gpu_instance_id is not None for p in gpu.processes), where


def _profiles(gpu: GpuSpec) -> list[str]:
    return sorted(gi.profile.name for gi in gpu.mig.gpu_instances)


def test_dgx_a100_mig() -> None:
    s = load("dgx-a100-mig")
    gpus = s.gpus
    assert len(gpus) == 8
    assert {g.board.key for g in gpus} == {"A100-SXM4-80GB"}
    processes = [p for g in gpus for p in g.processes]
    assert len(processes) >= 100
    users = {p.user for p in processes}
    assert {"alice", "bob", "carol", "dave", "erin", "root"} <= users
    assert sum(p.used_memory_mib is None for p in processes) == 1
    assert sum(not p.visible for p in processes) == 1
    assert any(p.command and p.command.startswith("tritonserver") for p in processes)
    assert any(p.command and p.command.startswith("jupyter-lab") for p in processes)
    assert any(p.command and p.command.startswith("python train.py --config") for p in processes)

    assert _profiles(gpus[0]) == ["1g.10gb"] * 7
    assert _profiles(gpus[1]) == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    # With 2g + 1g + 1g beside it, the 3g must take the upper half of the memory slices.
    assert next(gi.start for gi in gpus[1].mig.gpu_instances if gi.profile.name == "3g.40gb") == 4
    split = next(gi for gi in gpus[2].mig.gpu_instances if gi.profile.name == "3g.40gb")
    assert sorted(ci.profile.slice_count for ci in split.compute_instances) == [1, 2]
    assert _profiles(gpus[2]) == ["3g.40gb", "4g.40gb"]
    assert gpus[3].mig.enabled and not gpus[3].mig.gpu_instances and not gpus[3].processes
    assert _profiles(gpus[4]) == ["3g.40gb", "3g.40gb"]
    assert set(_profiles(gpus[5])) == {"1g.20gb"} and len(_profiles(gpus[5])) > 1
    assert (gpus[6].mig.enabled, gpus[6].mig.pending) == (False, True)
    assert not gpus[7].mig.enabled
    assert max(p.used_memory_mib or 0 for p in gpus[7].processes) > 70_000

    # NPS4, as a real DGX A100's nvidia-smi topo -m shows it (tests/sim/test_topology_public.py):
    # a GPU pair per NUMA node of 16 cores, then their SMT siblings 128 CPUs on.
    nodes = (3, 3, 1, 1, 7, 7, 5, 5)
    for g in gpus:
        assert g.nvlink_links == 12
        assert g.numa_node is None  # nvmlDeviceGetNumaNodeId: x86 GPUs are no NUMA node
        first = 16 * nodes[g.index]
        assert g.cpu_affinity == (*range(first, first + 16), *range(first + 128, first + 144))
        assert g.ecc.enabled
        assert g.remapped_rows.correctable == g.remapped_rows.uncorrectable == 0
    assert any(g.ecc.aggregate.corrected > 0 for g in gpus)


def test_dgx_a100_mig_through_pynvml() -> None:
    with simulated("dgx-a100-mig"):
        gpus = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        names = [
            [pynvml.nvmlDeviceGetName(m).split(" MIG ")[1] for m in _mig_devices(g)] for g in gpus
        ]
        assert [len(n) for n in names] == [7, 4, 3, 0, 2, 4, 0, 0]
        assert names[2] == ["4g.40gb", "1c.3g.40gb", "2c.3g.40gb"]  # ascending GI id, then CI id
        assert [pynvml.nvmlDeviceGetMigMode(g) for g in gpus[5:]] == [[1, 1], [0, 1], [0, 0]]
        for gpu in gpus:
            # Every process of a MIG GPU runs in exactly one of its MIG devices.
            inside = sorted(
                p.pid
                for m in _mig_devices(gpu)
                for p in pynvml.nvmlDeviceGetComputeRunningProcesses(m)
            )
            whole = sorted(p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(gpu))
            assert inside == (whole if pynvml.nvmlDeviceGetMigMode(gpu)[0] else [])
            for mig in _mig_devices(gpu):
                memory = pynvml.nvmlDeviceGetMemoryInfo(mig)
                assert memory.used <= memory.total


def test_h200_mig_through_pynvml_as_non_root() -> None:
    with simulated("h200-mig"):
        gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_NoPermission):
            pynvml.nvmlDeviceGetMemoryInfo(gpu)
        profile = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(
            gpu, pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE
        )
        with pytest.raises(pynvml.NVMLError_NoPermission):
            pynvml.nvmlDeviceGetGpuInstanceById(gpu, 2)
        migs = _mig_devices(gpu)  # what a non-root user can still enumerate
        assert len(migs) >= 2
        assert pynvml.nvmlDeviceGetName(migs[0]) == f"NVIDIA H200 MIG {profile.name.split()[-1]}"
        assert all(pynvml.nvmlDeviceGetComputeRunningProcesses(m) for m in migs)


def test_dgx_h100() -> None:
    gpus = load("dgx-h100").gpus
    assert len(gpus) == 8
    assert {g.board.key for g in gpus} == {"H100-SXM5-80GB"}
    assert all(not g.mig.enabled and g.nvlink_links == 18 for g in gpus)
    assert [len(g.processes) for g in gpus] == [1] * 8
    assert len({g.processes[0].user for g in gpus}) == 1
    assert all(g.utilization_gpu_percent >= 90 for g in gpus)


def test_h200_mig_is_unprivileged() -> None:
    s = load("h200-mig")
    (gpu,) = s.gpus
    assert s.privileged is False
    assert gpu.board.key == "H200-SXM-141GB"
    assert gpu.mig.enabled and len(gpu.mig.gpu_instances) >= 2
    assert {p.gpu_instance_id for p in gpu.processes} <= {gi.id for gi in gpu.mig.gpu_instances}


def test_workstation_geforce() -> None:
    gpus = load("workstation-geforce").gpus
    assert [g.board.key for g in gpus] == ["RTX-4090", "RTX-3090"]
    assert all(g.ecc is None and g.mig is None and g.fan_percent is not None for g in gpus)
    processes = [p for g in gpus for p in g.processes]
    graphics = {p.command.split()[0].rsplit("/", 1)[-1] for p in processes if p.type == "graphics"}
    assert {"Xorg", "gnome-shell"} <= graphics
    assert any(p.type == "compute" for p in processes)
    assert any(p.used_memory_mib is None for p in processes)


def test_cloud_t4_has_a_degraded_link() -> None:
    (gpu,) = load("cloud-t4").gpus
    assert gpu.board.key == "T4"
    assert (gpu.pcie.width, gpu.pcie.max_width) == (8, 16)
    assert len(gpu.processes) == 1


def test_vgpu_guest_shows_little() -> None:
    (gpu,) = load("vgpu-guest").gpus
    assert gpu.board is None and gpu.name == "GRID P4-1Q"
    missing = ("temperature_c", "power_draw_w", "fan_percent", "ecc", "mig", "pcie", "serial")
    assert all(getattr(gpu, field) is None for field in missing)


def test_no_driver() -> None:
    s = load("no-driver")
    assert s.library_missing and not s.gpus


def test_faults_demo() -> None:
    s = load("faults-demo")
    gpus = s.gpus
    assert [g.board.key for g in gpus] == ["A100-SXM4-40GB"] * 4
    lost = [g for g in gpus if g.lost is not None]
    assert [(g.index, g.lost.after, g.lost.count) for g in lost] == [(2, 3, None)]
    xids = Counter((g.index, e.xid, e.after_samples) for g in gpus for e in g.xid_events)
    assert xids == Counter({(2, 79, 3): 1, (0, 13, 2): 1})
    link = gpus[1].pcie
    assert link.gen < link.max_gen and link.width < link.max_width
    hot = gpus[3]
    assert {"sw_power_cap", "hw_thermal_slowdown"} <= set(hot.clock_event_reasons)
    assert hot.temperature_slowdown_c - 5 <= hot.temperature_c < hot.temperature_slowdown_c
    assert hot.power_draw_w >= 0.95 * hot.power_limit_w
    broken = [g for g in gpus if g.ecc.volatile.uncorrected and g.remapped_rows.pending]
    assert len(broken) == 1
