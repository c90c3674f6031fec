import re
from pathlib import Path

from fixtures.lscpu import lscpu_summary
from fixtures.machines import MACHINES, shared_tree, write_tree

from hwinfo.collect.numa import node_cpus, node_ids, node_memory_bytes
from hwinfo.collect.sysfs import Root
from hwinfo.cpulist import parse_cpulist


def test_two_nodes_one_per_socket() -> None:
    root = Root(shared_tree("x86-2s-smt"))
    assert node_ids(root) == [0, 1]
    assert node_cpus(root, 0) == [*range(8), *range(16, 24)]
    assert node_cpus(root, 1) == [*range(8, 16), *range(24, 32)]
    assert node_memory_bytes(root, 0) == (263705516 * 1024, 242190220 * 1024)
    assert node_memory_bytes(root, 1) == (264217664 * 1024, 243111884 * 1024)


def test_one_node() -> None:
    root = Root(shared_tree("arm64-server"))
    assert node_ids(root) == [0]
    assert node_cpus(root, 0) == list(range(8))
    assert node_memory_bytes(root, 0) == (16012132 * 1024, 14203388 * 1024)


def test_memory_only_node(tmp_path: Path) -> None:
    # Grace Hopper shows the GPU's memory as NUMA nodes without CPUs.
    root = write_tree(MACHINES["arm64-server"], tmp_path)
    node = root / "sys/devices/system/node/node4"
    node.mkdir()
    (node / "cpulist").write_text("\n")
    (node / "meminfo").write_text("Node 4 MemTotal:  99614720 kB\nNode 4 MemFree:  99000000 kB\n")
    assert node_ids(Root(root)) == [0, 4]
    assert node_cpus(Root(root), 4) == []
    assert node_memory_bytes(Root(root), 4) == (99614720 * 1024, 99000000 * 1024)


def test_kernel_without_numa(tmp_path: Path) -> None:
    root = Root(tmp_path)
    assert node_ids(root) == []
    assert node_cpus(root, 0) == []
    assert node_memory_bytes(root, 0) == (None, None)


def test_live_nodes_match_lscpu() -> None:
    lscpu = lscpu_summary()
    root = Root("/")
    ids = node_ids(root)
    assert len(ids) == int(lscpu["NUMA node(s)"])
    for node in ids:
        listed = lscpu.get(f"NUMA node{node} CPU(s)", "")
        # lscpu leaves the value empty for a node without CPUs.
        expected = parse_cpulist(listed) if re.fullmatch(r"[\d,-]+", listed) else []
        assert node_cpus(root, node) == expected
        total, free = node_memory_bytes(root, node)
        assert total is not None and free is not None and 0 < free <= total
