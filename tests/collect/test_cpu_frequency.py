import shutil
from pathlib import Path

import psutil
import pytest
from fixtures.machines import MACHINES, shared_tree, write_tree

from hwinfo.collect.cpu_frequency import (
    base_frequency,
    current_frequency,
    max_frequency,
    min_frequency,
)
from hwinfo.collect.cpu_topology import online_cpus
from hwinfo.collect.sysfs import Root

X86_CPUS = list(range(32))


def _all(root: Root, cpus: list[int]) -> tuple[float | None, ...]:
    return (
        base_frequency(root, cpus),
        min_frequency(root, cpus),
        max_frequency(root, cpus),
        current_frequency(root, cpus),
    )


def test_cpufreq_in_hertz() -> None:
    # scaling_cur_freq cycles 3.7, 3.8, 3.9, 4.0 GHz over the CPUs: the mean is 3.85 GHz.
    assert _all(Root(shared_tree("x86-2s-smt")), X86_CPUS) == (3.7e9, 0.8e9, 4.1e9, 3.85e9)


def test_only_the_given_cpus_count() -> None:
    assert current_frequency(Root(shared_tree("x86-2s-smt")), [0, 4]) == 3.7e9


def test_without_cpufreq_the_clock_comes_from_cpuinfo(tmp_path: Path) -> None:
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path)
    for cpufreq in root.glob("sys/devices/system/cpu/cpu*/cpufreq"):
        shutil.rmtree(cpufreq)
    assert _all(Root(root), X86_CPUS) == (None, None, None, 3.85e9)


def test_arm_guest_has_no_clock_at_all() -> None:
    assert _all(Root(shared_tree("arm64-server")), list(range(8))) == (None, None, None, None)


def test_empty_root(tmp_path: Path) -> None:
    assert _all(Root(tmp_path), [0, 1]) == (None, None, None, None)


def test_live_matches_psutil() -> None:
    root = Root("/")
    cpus = online_cpus(root, [])
    reference = psutil.cpu_freq()
    current, maximum = current_frequency(root, cpus), max_frequency(root, cpus)
    if reference is None:  # psutil found no clock either
        assert current is None
        return
    assert current == pytest.approx(reference.current * 1e6, rel=0.25)  # clocks move between reads
    assert (maximum or 0.0) == pytest.approx(reference.max * 1e6)  # psutil gives 0 for unknown
