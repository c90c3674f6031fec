from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwinfo import sim
from hwinfo.collect.gpu.collector import GpuCollector
from hwinfo.collect.gpu.processes import local_owner
from hwinfo.collect.sources import machine_owners
from hwinfo.cpulist import parse_cpulist

from .conftest import MIB, collect_samples, scenario_json


def _scenario_processes(gpu: dict[str, Any]) -> list[dict[str, Any]]:
    return gpu.get("processes", [])


def test_dgx_inventory_matches_scenario(simulate: Callable[..., GpuCollector]) -> None:
    system = simulate("dgx-a100-mig").collect()
    expected = scenario_json("dgx-a100-mig")["gpus"]
    assert system.status == "ok"
    assert system.driver_version == "550.54.15" and system.cuda_driver_version == "12.4"
    assert len(system.gpus) == len(expected) == 8
    assert len({gpu.uuid for gpu in system.gpus}) == 8
    for gpu, spec in zip(system.gpus, expected):
        assert gpu.name == "NVIDIA A100-SXM4-80GB"
        assert gpu.pci_bus_id == spec["pci_bus_id"]
        assert gpu.serial == spec["serial"]
        assert gpu.numa_node is None  # x86: NVML has no NUMA node of a GPU (nvml.h)
        assert gpu.numa_affinity == [(3, 3, 1, 1, 7, 7, 5, 5)[gpu.index]]  # NPS4, from the PCI tree
        assert gpu.cpu_affinity == parse_cpulist(spec["cpu_affinity"])
        assert gpu.nvlink_links_active == spec["nvlink_links"]
        assert gpu.cuda_compute_capability == "8.0" and gpu.architecture == "ampere"
        # SXM boards have no fan: NotSupported reads as unknown, never 0, and is no error.
        assert gpu.fan_speed_ratio is None and "fan_speed_ratio" not in gpu.unavailable
        assert gpu.ecc is not None and gpu.ecc.enabled
        assert gpu.ecc.aggregate_corrected == spec["ecc"]["aggregate"]["corrected"]


def test_every_process_is_found_with_its_scenario_owner(
    simulate: Callable[..., GpuCollector],
) -> None:
    system = simulate("dgx-a100-mig", with_commands=True).collect()
    expected = scenario_json("dgx-a100-mig")["gpus"]
    total = 0
    for gpu, spec in zip(system.gpus, expected):
        seen = {proc.pid: proc for proc in gpu.all_processes()}
        assert sorted(seen) == sorted(p["pid"] for p in _scenario_processes(spec))
        for want in _scenario_processes(spec):
            got = seen[want["pid"]]
            mib = want.get("used_memory_mib")
            assert got.used_memory_bytes == (None if mib is None else mib * MIB)
            if want.get("visible", True):
                assert (got.visible, got.user, got.command) == (True, want.get("user"), want.get("command"))
            else:
                assert (got.visible, got.user, got.command) == (False, None, None)
            if spec.get("mig", {}).get("enabled"):
                assert got.gpu_instance_id == want["gpu_instance_id"]
            else:
                assert got.gpu_instance_id is None and got.compute_instance_id is None
        total += len(seen)
    assert total >= 100


def test_commands_only_on_request(simulate: Callable[..., GpuCollector]) -> None:
    system = simulate("dgx-a100-mig").collect()
    procs = [p for gpu in system.gpus for p in gpu.all_processes() if p.visible]
    assert procs and all(p.command is None and p.name for p in procs)


def test_user_rollup_adds_up_per_gpu(simulate: Callable[..., GpuCollector]) -> None:
    system = simulate("dgx-a100-mig").collect()
    expected: dict[tuple[int, str | None], list[int]] = defaultdict(lambda: [0, 0])
    for index, spec in enumerate(scenario_json("dgx-a100-mig")["gpus"]):
        for proc in _scenario_processes(spec):
            user = proc.get("user") if proc.get("visible", True) else None
            expected[(index, user)][0] += (proc.get("used_memory_mib") or 0) * MIB
            expected[(index, user)][1] += 1
    got = {(u.gpu_index, u.user): [u.used_memory_bytes, u.processes] for u in system.users}
    assert got == dict(expected)


def test_mig_tree(simulate: Callable[..., GpuCollector]) -> None:
    gpus = simulate("dgx-a100-mig").collect().gpus
    # GPU 0: seven 1g instances fill the board.
    assert [d.profile for d in gpus[0].mig.devices] == ["1g.10gb"] * 7
    capacity = {c.profile: c.instances_free for c in gpus[0].mig.capacity}
    assert capacity["1g.10gb"] == 0 and capacity["7g.80gb"] == 0
    # GPU 2: one GPU instance split into two compute instances sharing its memory.
    split = [d for d in gpus[2].mig.devices if d.profile and d.profile.endswith("c.3g.40gb")]
    assert sorted(d.profile for d in split) == ["1c.3g.40gb", "2c.3g.40gb"]
    assert split[0].gpu_instance_id == split[1].gpu_instance_id
    assert split[0].compute_instance_id != split[1].compute_instance_id
    assert split[0].memory_total_bytes == split[1].memory_total_bytes
    assert [gi.profile for gi in gpus[2].mig.gpu_instances].count("3g.40gb") == 1
    # GPU 3: MIG on, nothing created: everything still fits.
    assert gpus[3].mig.enabled and gpus[3].mig.devices == []
    assert all(c.instances_free == c.instances_max for c in gpus[3].mig.capacity)
    # GPU 6: MIG off with a change to on pending a reset.
    assert not gpus[6].mig.enabled and gpus[6].mig.change_pending
    # In MIG mode the parent has no utilization; outside it, it does.
    assert gpus[0].utilization_gpu_ratio is None and "utilization" not in gpus[0].unavailable
    assert gpus[7].utilization_gpu_ratio is not None


def test_unprivileged_mig_lists_devices_but_no_placements(
    simulate: Callable[..., GpuCollector],
) -> None:
    (gpu,) = simulate("h200-mig").collect().gpus
    spec = scenario_json("h200-mig")["gpus"][0]["mig"]["gpu_instances"]
    assert sorted(d.profile for d in gpu.mig.devices) == sorted(gi["profile"] for gi in spec)
    assert gpu.mig.gpu_instances is None
    # The profile table is open to all; what still fits needs privileges.
    assert {c.profile for c in gpu.mig.capacity} >= {"1g.18gb", "3g.71gb", "7g.141gb"}
    assert all(c.instances_free is None for c in gpu.mig.capacity)
    assert gpu.unavailable["mig_gpu_instances"] == "Insufficient Permissions"


def test_mig_devices_know_their_share_of_the_gpu(simulate: Callable[..., GpuCollector]) -> None:
    gpu = simulate("dgx-a100-mig").collect().gpus[2]
    assert [(d.profile, d.gpu_share_ratio) for d in gpu.mig.devices] == [
        ("4g.40gb", 4 / 7), ("1c.3g.40gb", 1 / 7), ("2c.3g.40gb", 2 / 7)]
    shares = {c.profile: c.gpu_share_ratio for c in gpu.mig.capacity}
    assert shares["7g.80gb"] == 1 and shares["3g.40gb"] == 3 / 7


def test_no_driver_is_one_clear_line(simulate: Callable[..., GpuCollector]) -> None:
    system = simulate("no-driver").collect()
    assert system.status == "no_library" and system.gpus == []
    assert "libnvidia-ml.so.1" in system.message


def test_lost_gpu_leaves_the_others_reporting(simulate: Callable[..., GpuCollector]) -> None:
    collector = simulate("faults-demo")
    before, *_, after = collect_samples(collector, 4)
    assert not before.gpus[2].lost
    lost = after.gpus[2]
    assert lost.lost and lost.unavailable == {"gpu": "GPU is lost"}
    # What was known of it before stays, so the admin knows which board to pull.
    assert (lost.uuid, lost.serial, lost.pci_bus_id) == (
        before.gpus[2].uuid, before.gpus[2].serial, before.gpus[2].pci_bus_id)
    assert lost.temperature_celsius is None
    others = [g for g in after.gpus if g.index != 2]
    assert all(not g.lost and g.temperature_celsius is not None for g in others)


def test_call_errors_keep_their_reason(simulate: Callable[..., GpuCollector]) -> None:
    collector = simulate("faults-demo")
    samples = collect_samples(collector, 5)
    assert samples[3].gpus[3].power_draw_watts is not None
    gpu = samples[4].gpus[3]  # sample 5: inside the fault's window
    assert gpu.power_draw_watts is None
    assert gpu.unavailable["power_draw_watts"] == "Unknown Error"


def test_degraded_pcie_link(simulate: Callable[..., GpuCollector]) -> None:
    (gpu,) = simulate("cloud-t4").collect().gpus
    assert (gpu.pcie.width, gpu.pcie.max_width) == (8, 16)


def test_old_driver_without_v3_calls(
    simulate: Callable[..., GpuCollector], scenario_file: Callable[[dict[str, Any]], Path]
) -> None:
    path = scenario_file({
        "driver": {"version": "470.82.01", "cuda_version": 11040},
        "gpus": [{"board": "T4", "processes": [{"pid": 4242, "used_memory_mib": 512}]}],
    })
    (gpu,) = simulate(path).collect().gpus
    assert gpu.memory_reserved_bytes is None  # memory v2 arrived in 510
    assert gpu.memory_total_bytes is not None
    assert [(p.pid, p.used_memory_bytes) for p in gpu.processes] == [(4242, 512 * MIB)]


def test_lost_from_the_start_and_no_handle(
    simulate: Callable[..., GpuCollector], scenario_file: Callable[[dict[str, Any]], Path]
) -> None:
    path = scenario_file({"gpus": [{"board": "T4"}, {"board": "T4", "lost": True}]})
    first, second = simulate(path).collect().gpus
    assert not first.lost and first.name
    assert second.lost and second.uuid is None and second.name is None


def test_driver_reload_recovers_without_restart(
    simulate: Callable[..., GpuCollector], scenario_file: Callable[[dict[str, Any]], Path]
) -> None:
    path = scenario_file({
        "init_error": "DriverNotLoaded", "init_error_attempts": 2, "gpus": [{"board": "T4"}],
    })
    collector = simulate(path)
    statuses = [collector.collect().status for _ in range(3)]
    assert statuses == ["no_driver", "no_driver", "ok"]


def test_driver_library_mismatch(
    simulate: Callable[..., GpuCollector], scenario_file: Callable[[dict[str, Any]], Path]
) -> None:
    system = simulate(scenario_file({"init_error": "LibRmVersionMismatch", "gpus": []})).collect()
    assert system.status == "driver_mismatch" and "reboot" in system.message


def test_no_processes_option_counts_but_does_not_list(
    simulate: Callable[..., GpuCollector],
) -> None:
    listed = simulate("dgx-a100-mig").collect()
    counted = simulate("dgx-a100-mig", with_processes=False).collect()
    assert counted.users is None  # not collected, which [] (none) would not say
    for full, bare in zip(listed.gpus, counted.gpus, strict=True):
        assert bare.processes is None and bare.all_processes() == []
        assert bare.process_count == full.process_count == len(full.all_processes())
        for device in bare.mig.devices if bare.mig else ():
            assert device.processes is None and device.process_count is not None


def test_mig_processes_and_lost_gpus_are_found_anew_every_sample() -> None:
    machine = sim.install("dgx-a100-mig")
    collector = GpuCollector(machine_owners(machine))
    try:
        _changes_between_samples(machine, collector)
    finally:
        collector.close()
        sim.uninstall()


def _changes_between_samples(machine: sim.Machine, collector: GpuCollector) -> None:
    assert collector.collect().gpus[3].mig.devices == []
    machine.reconfigure_mig(
        3,
        {"enabled": True, "gpu_instances": [{"profile": "3g.40gb"}, {"profile": "3g.40gb"}]},
        [{"pid": 777, "used_memory_mib": 300, "gpu_instance_id": 1, "compute_instance_id": 0,
          "user": 'o"brien', "command": "python -c 'x\ny'"}],
    )
    gpu = collector.collect().gpus[3]
    assert [d.profile for d in gpu.mig.devices] == ["3g.40gb", "3g.40gb"]
    assert [(p.pid, p.user) for p in gpu.all_processes()] == [(777, 'o"brien')]
    machine.set_processes(7, [])
    machine.set_lost(5, True)
    system = collector.collect()
    assert system.gpus[7].processes == [] and system.gpus[5].lost
    assert all(u.gpu_index != 7 for u in system.users)
    machine.set_lost(5, False)
    assert not collector.collect().gpus[5].lost


def test_what_each_process_is_doing(simulate: Callable[..., GpuCollector]) -> None:
    gpus = simulate("workstation-geforce").collect().gpus
    training = gpus[1].processes[0]
    assert (training.sm_utilization_ratio, training.memory_utilization_ratio) == (0.96, 0.71)
    sampled = {p.pid: p.sm_utilization_ratio for p in gpus[0].processes}
    assert sampled == {1873: None, 2264: None, 3391: 0.05, 4120: None}
    # Scenario PIDs are not on this host: what only its process table knows is unknown.
    assert (training.run_seconds, training.cpu_utilization_ratio,
            training.resident_memory_bytes) == (None, None, None)


def test_the_host_side_of_a_live_process(simulate: Callable[..., GpuCollector],
                                         scenario_file: Callable[..., Any]) -> None:
    import os

    path = scenario_file({"gpus": [{"board": "T4", "processes": [
        {"pid": os.getpid(), "used_memory_mib": 10, "sm_percent": 3}]}]})
    collector = GpuCollector(local_owner)
    sim.install(str(path))
    try:
        proc = collector.collect().gpus[0].processes[0]
    finally:
        collector.close()
        sim.uninstall()
    assert proc.run_seconds is not None and proc.run_seconds > 0
    assert proc.cpu_utilization_ratio is not None and proc.cpu_utilization_ratio >= 0
    assert proc.resident_memory_bytes and proc.resident_memory_bytes > 1 << 20
