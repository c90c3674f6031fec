import os
import shutil
import sys
import time
import types
from pathlib import Path

import pytest
from fixtures.lscpu import lscpu_summary
from fixtures.machines import MACHINES, shared_tree, write_tree

import hwinfo.collect.cpu as cpu_module
from hwinfo.collect.cpu import CpuCollector
from hwinfo.collect.sysfs import Root
from hwinfo.cpulist import parse_cpulist
from hwinfo.model.cpu import Cache, Cpu, NumaNode

KiB, MiB = 1 << 10, 1 << 20


def _flags(root: Path, key: str) -> list[str]:
    line = next(
        line for line in (root / "proc/cpuinfo").read_text().splitlines() if line.startswith(key)
    )
    return line.partition(":")[2].split()


def test_two_socket_server() -> None:
    root = shared_tree("x86-2s-smt")
    flags = _flags(root, "flags")
    assert CpuCollector(Root(root), min_window_seconds=0).collect() == Cpu(
        vendor="GenuineIntel",
        model_name="Intel(R) Xeon(R) Gold 6434",
        family=6,
        model=143,
        stepping=8,
        microcode="0x2b000590",
        architecture="x86_64",
        sockets=2,
        cores=16,
        logical_cpus=32,
        threads_per_core=2,
        frequency_base_hertz=3.7e9,
        frequency_min_hertz=0.8e9,
        frequency_max_hertz=4.1e9,
        frequency_current_hertz=3.85e9,
        caches=[
            Cache(1, "data", 48 * KiB, 16, 2, "core"),
            Cache(1, "instruction", 32 * KiB, 16, 2, "core"),
            Cache(2, "unified", 2 * MiB, 16, 2, "core"),
            Cache(3, "unified", 23040 * KiB, 2, 16, "socket"),
        ],
        flags=flags,
        ml_flags=[
            "SSE4.2",
            "AVX",
            "AVX2",
            "FMA",
            "F16C",
            "AVX512F",
            "AVX512CD",
            "AVX512BW",
            "AVX512DQ",
            "AVX512VL",
            "AVX512IFMA",
            "AVX512VBMI",
            "AVX512VBMI2",
            "AVX512VNNI",
            "AVX512BITALG",
            "AVX512VPOPCNTDQ",
            "AVX512BF16",
            "AVX512FP16",
            "AVX-VNNI",
            "AMX-TILE",
            "AMX-BF16",
            "AMX-INT8",
        ],
        numa_nodes=[
            NumaNode(0, [*range(8), *range(16, 24)], 263705516 * KiB, 242190220 * KiB),
            NumaNode(1, [*range(8, 16), *range(24, 32)], 264217664 * KiB, 243111884 * KiB),
        ],
        # The tree's /proc/stat does not move: a window in which no tick passed.
        utilization_ratio=[0.0] * 32,
        load_average=[12.43, 11.87, 10.02],
    )


def test_arm_server() -> None:
    root = shared_tree("arm64-server")
    assert CpuCollector(Root(root), min_window_seconds=0).collect() == Cpu(
        vendor="ARM",
        model_name="Neoverse-V2",
        family=None,
        model=0xD4F,
        stepping=1,
        microcode=None,
        architecture="aarch64",
        sockets=1,
        cores=8,
        logical_cpus=8,
        threads_per_core=1,
        frequency_base_hertz=None,
        frequency_min_hertz=None,
        frequency_max_hertz=None,
        frequency_current_hertz=None,
        caches=[
            Cache(1, "data", 64 * KiB, 8, 1, "core"),
            Cache(1, "instruction", 64 * KiB, 8, 1, "core"),
            Cache(2, "unified", 2 * MiB, 8, 1, "core"),
            Cache(3, "unified", 36 * MiB, 1, 8, "socket"),
        ],
        flags=_flags(root, "Features"),
        ml_flags=["NEON", "DotProd", "FP16", "BF16", "I8MM", "SVE", "SVE2"],
        numa_nodes=[NumaNode(0, list(range(8)), 16012132 * KiB, 14203388 * KiB)],
        utilization_ratio=[0.0] * 8,
        load_average=[0.08, 0.03, 0.01],
    )


def test_empty_root_gives_unknowns(tmp_path: Path) -> None:
    cpu = CpuCollector(Root(tmp_path), min_window_seconds=0).collect()
    assert cpu == Cpu(
        vendor=None, model_name=None, family=None, model=None, stepping=None, microcode=None,
        architecture=None, sockets=None, cores=None, logical_cpus=None, threads_per_core=None,
        frequency_base_hertz=None, frequency_min_hertz=None, frequency_max_hertz=None,
        frequency_current_hertz=None,
    )  # fmt: skip


def _fake_py_cpuinfo(monkeypatch: pytest.MonkeyPatch, info: dict[str, object] | None) -> None:
    """Stand in for py-cpuinfo; with info None, calling it fails the test."""

    def get_cpu_info() -> dict[str, object]:
        assert info is not None, "py-cpuinfo was called"
        return info

    fake = types.ModuleType("cpuinfo")
    fake.get_cpu_info = get_cpu_info  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cpuinfo", fake)


def test_py_cpuinfo_stands_in_on_a_live_machine_without_procfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_py_cpuinfo(monkeypatch, {"brand_raw": "Apple M2", "flags": ["asimd", "bf16"]})
    monkeypatch.setattr(cpu_module, "is_live", lambda root: True)  # macOS: "/" has no /proc
    cpu = CpuCollector(Root(tmp_path), min_window_seconds=0).collect()
    assert (cpu.model_name, cpu.ml_flags) == ("Apple M2", ["NEON", "BF16"])
    assert cpu.logical_cpus == os.cpu_count()
    assert cpu.architecture == os.uname().machine


def test_py_cpuinfo_is_not_used_where_proc_cpuinfo_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_py_cpuinfo(monkeypatch, None)
    monkeypatch.setattr(cpu_module, "is_live", lambda root: True)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("cpu number\t: 0\nversion\t: FF\n")  # unparsed
    assert CpuCollector(Root(tmp_path), min_window_seconds=0).collect().model_name is None


def test_py_cpuinfo_is_not_used_for_a_fixture_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_py_cpuinfo(monkeypatch, None)
    assert CpuCollector(Root(tmp_path), min_window_seconds=0).collect().logical_cpus is None


def _stat(cpu0: tuple[int, int], cpu1: tuple[int, int]) -> str:
    """/proc/stat with these (busy, idle) jiffies per CPU, busy as user time."""
    lines = [f"cpu{n} {busy} 0 0 {idle} 0 0 0 0 0 0" for n, (busy, idle) in enumerate((cpu0, cpu1))]
    return "\n".join(lines) + "\n"


def test_utilization_windows_follow_each_other(tmp_path: Path) -> None:
    stat = tmp_path / "proc/stat"
    stat.parent.mkdir()
    stat.write_text(_stat((100, 900), (100, 900)))
    collector = CpuCollector(Root(tmp_path), min_window_seconds=0)
    stat.write_text(_stat((175, 925), (110, 990)))  # 75 of 100 busy, 10 of 100
    assert collector.collect().utilization_ratio == [0.75, 0.10]
    stat.write_text(_stat((175, 1025), (210, 990)))  # idle, then fully busy: since the last read
    assert collector.collect().utilization_ratio == [0.0, 1.0]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_short_window_is_waited_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(cpu_module, "monotonic", clock.monotonic)
    monkeypatch.setattr(cpu_module, "sleep", clock.sleep)
    collector = CpuCollector(Root(tmp_path), min_window_seconds=0.05)
    clock.now += 0.02  # other collectors' work overlaps the window
    collector.collect()
    assert clock.slept == [pytest.approx(0.03)]
    clock.now += 0.5  # a daemon's scrape interval: long enough already
    collector.collect()
    assert clock.slept == [pytest.approx(0.03)]


def test_first_collect_spans_the_minimum_window() -> None:
    started = time.monotonic()
    CpuCollector(Root("/"), min_window_seconds=0.05).collect()
    assert time.monotonic() - started >= 0.05


def test_inventory_is_read_once(tmp_path: Path) -> None:
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path)
    collector = CpuCollector(Root(root), min_window_seconds=0)
    shutil.rmtree(root / "sys/devices/system/cpu/cpu0/cache")
    (root / "proc/cpuinfo").write_text("")
    (root / "proc/loadavg").write_text("1.00 2.00 3.00 1/100 42\n")
    cpu = collector.collect()
    assert cpu.model_name == "Intel(R) Xeon(R) Gold 6434" and len(cpu.caches) == 4
    assert cpu.load_average == [1.0, 2.0, 3.0]  # the dynamic part is read again


def test_each_snapshot_is_independent() -> None:
    collector = CpuCollector(Root(shared_tree("arm64-server")), min_window_seconds=0)
    first = collector.collect()
    first.caches[0].size_bytes = 1
    first.flags.clear()
    first.numa_nodes[0].cpus.clear()
    second = collector.collect()
    assert second.caches[0].size_bytes == 64 * KiB and second.flags and second.numa_nodes[0].cpus


def test_live_machine_matches_lscpu() -> None:
    lscpu = lscpu_summary()
    cpu = CpuCollector(Root("/"), min_window_seconds=0).collect()
    assert cpu.logical_cpus == len(parse_cpulist(lscpu["On-line CPU(s) list"]))
    assert cpu.model_name == lscpu["Model name"]
    assert cpu.architecture == lscpu["Architecture"] == os.uname().machine
    assert len(cpu.numa_nodes) == int(lscpu["NUMA node(s)"])
    assert len(cpu.utilization_ratio) == cpu.logical_cpus
    assert all(0.0 <= r <= 1.0 for r in cpu.utilization_ratio)
