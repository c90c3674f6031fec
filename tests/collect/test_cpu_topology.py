import os
import shutil
import subprocess
from pathlib import Path

from conftest import require_tool
from fixtures.lscpu import lscpu_summary
from fixtures.machines import MACHINES, shared_tree, write_tree

from hwinfo.collect.cpu_info import parse_cpuinfo
from hwinfo.collect.cpu_topology import Topology, online_cpus, read_topology
from hwinfo.collect.sysfs import Root

CPU_DIR = "sys/devices/system/cpu"


def _topology(root: Root) -> tuple[list[int], Topology]:
    blocks = parse_cpuinfo(root.read_text("proc/cpuinfo") or "")
    cpus = online_cpus(root, blocks)
    return cpus, read_topology(root, cpus, blocks)


def _counts(topology: Topology) -> tuple[int | None, int | None, int | None]:
    return topology.sockets, topology.core_count, topology.threads_per_core


def test_two_sockets_with_smt() -> None:
    cpus, topology = _topology(Root(shared_tree("x86-2s-smt")))
    assert cpus == list(range(32))
    assert _counts(topology) == (2, 16, 2)
    # Linux numbers the first thread of every core first: cpu0's sibling is cpu16.
    assert frozenset({0, 16}) in topology.cores
    assert frozenset([*range(8), *range(16, 24)]) in topology.packages


def test_one_socket_without_smt() -> None:
    cpus, topology = _topology(Root(shared_tree("arm64-server")))
    assert cpus == list(range(8))
    assert _counts(topology) == (1, 8, 1)


def test_offline_cpus_are_not_counted(tmp_path: Path) -> None:
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path)
    # SMT switched off at run time: the second threads go offline and leave the sibling lists.
    (root / CPU_DIR / "online").write_text("0-15\n")
    cpus, topology = _topology(Root(root))
    assert cpus == list(range(16))
    assert _counts(topology) == (2, 16, 1)


def test_older_kernels_topology_file_names(tmp_path: Path) -> None:
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path)
    for topo in (root / CPU_DIR).glob("cpu*/topology"):
        (topo / "core_cpus_list").rename(topo / "thread_siblings_list")
        (topo / "package_cpus_list").rename(topo / "core_siblings_list")
    assert _counts(_topology(Root(root))[1]) == (2, 16, 2)


def test_cpuinfo_fallback_without_sysfs_topology(tmp_path: Path) -> None:
    root = write_tree(MACHINES["x86-2s-smt"], tmp_path)
    for topo in (root / CPU_DIR).glob("cpu*/topology"):
        shutil.rmtree(topo)
    (root / CPU_DIR / "online").unlink()
    cpus, topology = _topology(Root(root))
    assert cpus == list(range(32))
    assert _counts(topology) == (2, 16, 2)


def test_arm_cpuinfo_has_no_topology_so_it_stays_unknown(tmp_path: Path) -> None:
    root = write_tree(MACHINES["arm64-server"], tmp_path)
    for topo in (root / CPU_DIR).glob("cpu*/topology"):
        shutil.rmtree(topo)
    cpus, topology = _topology(Root(root))
    assert len(cpus) == 8
    assert _counts(topology) == (None, None, None)


def test_one_cpu_without_topology_makes_sysfs_unusable(tmp_path: Path) -> None:
    root = write_tree(MACHINES["arm64-server"], tmp_path)
    shutil.rmtree(root / CPU_DIR / "cpu5" / "topology")
    assert _counts(_topology(Root(root))[1]) == (None, None, None)


def test_empty_root(tmp_path: Path) -> None:
    assert _topology(Root(tmp_path)) == ([], Topology())


def test_live_logical_cpus_match_nproc() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}  # nproc obeys these
    nproc = subprocess.run(
        [require_tool("nproc")], capture_output=True, text=True, env=env, check=True
    )
    online = subprocess.run(
        [require_tool("getconf"), "_NPROCESSORS_ONLN"], capture_output=True, text=True, check=True
    )
    cpus, _ = _topology(Root("/"))
    assert len(cpus) == int(online.stdout)
    # nproc counts the online CPUs this process may use: all of them unless a cpuset says less.
    assert int(nproc.stdout) == len(os.sched_getaffinity(0) & set(cpus))


def test_live_topology_matches_lscpu() -> None:
    lscpu = lscpu_summary()
    _, topology = _topology(Root("/"))
    sockets = int(lscpu["Socket(s)"])
    assert topology.sockets == sockets
    assert topology.core_count == sockets * int(lscpu["Core(s) per socket"])
    assert topology.threads_per_core == int(lscpu["Thread(s) per core"])
