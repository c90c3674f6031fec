"""NUMA nodes from sys/devices/system/node: their CPUs and memory."""

from __future__ import annotations

from hwinfo.collect.cpu_topology import read_cpulist
from hwinfo.collect.memory import parse_meminfo
from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal

NODE_DIR = "sys/devices/system/node"


def node_ids(root: Root) -> list[int]:
    """Every node the kernel shows, memory-only ones (such as GPU memory on Grace Hopper) too."""
    names = root.listdir(NODE_DIR)
    return sorted(n for name in names if name.startswith("node")
                  and (n := decimal(name[4:])) is not None)


def node_cpus(root: Root, node: int) -> list[int]:
    return read_cpulist(root, f"{NODE_DIR}/node{node}/cpulist") or []


def node_memory_bytes(root: Root, node: int) -> tuple[int | None, int | None]:
    """The node's total and free memory."""
    info = parse_meminfo(root.read_text(f"{NODE_DIR}/node{node}/meminfo") or "")
    return info.get("MemTotal"), info.get("MemFree")
