"""Where sysfs places NVIDIA GPUs, RDMA NICs and NVMe controllers in the PCI tree.

A PCI function's directory sits below the bridges above it (kernel
Documentation/ABI/testing/sysfs-bus-pci; /sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/
...), and /sys/bus/pci/devices/<address>, /sys/class/infiniband/<name> and
/sys/class/nvme/<name> link into that tree. Following a link gives the function's root bus
(its host bridge) and bridges: what `report --topology` words the distance between two
devices from, as nvidia-smi does for NICs (model/topology.py). Every read goes through
Root, so a fixture tree or a simulated machine's (`hwinfo/sim/sysfs_tree.py`) reads alike.
"""

from __future__ import annotations

import os
import re

from hwinfo.collect.sysfs import Root, RootError
from hwinfo.model.pci import PciDevice, PciTree

_FUNCTION = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_ROOT_BUS = re.compile(r"pci[0-9a-f]{4,8}:[0-9a-f]{2}")
_NVIDIA = 0x10DE
_DISPLAY_CLASSES = (0x0300, 0x0302)  # VGA and 3D controllers (a GPU shows as one of them)
# Bounds on a hostile tree: no machine nests PCI bridges this deep, lists this many
# functions of a kind, or writes a one-value attribute this long.
_MAX_DEPTH = 32
_MAX_DEVICES = 1024
_MAX_FUNCTIONS = 16384
_ATTRIBUTE_BYTES = 4096
_MAX_NUMA_NODE = 1023


class PciCollector:
    """Reads the PCI places of the GPUs, NICs and NVMe controllers below a Root."""

    def __init__(self, root: Root) -> None:
        self.root = root

    def collect(self) -> PciTree:
        devices = [*self._gpus(), *self._class("infiniband", "nic"), *self._class("nvme", "nvme")]
        return PciTree(devices)

    def _gpus(self) -> list[PciDevice]:
        found = []
        # A machine has a few hundred functions; a tree with more is cut, not read whole.
        for name in self.root.listdir("sys/bus/pci/devices")[:_MAX_FUNCTIONS]:
            if len(found) >= _MAX_DEVICES:
                break
            link = f"sys/bus/pci/devices/{name}"
            if _hex(self.root, f"{link}/vendor") != _NVIDIA:
                continue
            kind = _hex(self.root, f"{link}/class")
            if kind is None or kind >> 8 not in _DISPLAY_CLASSES:
                continue  # an NVSwitch, an audio function
            device = self._device(link, "gpu", None)
            if device is not None:
                found.append(device)
        return found

    def _class(self, directory: str, kind: str) -> list[PciDevice]:
        found = []
        for name in self.root.listdir(f"sys/class/{directory}")[:_MAX_DEVICES]:
            device = self._device(f"sys/class/{directory}/{name}", kind, name)
            if device is not None:
                if kind == "nvme":
                    device.model = _attribute(self.root, f"sys/class/nvme/{name}/model")
                found.append(device)
        return found

    def _device(self, link: str, kind: str, name: str | None) -> PciDevice | None:
        """The function a link leads to, placed; None where it leads to no PCI function
        (an NVMe-over-fabrics controller, a software RDMA device, a link out of the tree)."""
        place = pci_path(self.root, link)
        if place is None:
            return None
        host_bridge, bridges, address = place
        directory = "/".join(("sys/devices", host_bridge, *bridges, address))
        return PciDevice(address, kind, name, host_bridge, bridges,
                         _numa_node(self.root, f"{directory}/numa_node"))


def pci_path(root: Root, link: str) -> tuple[str, list[str], str] | None:
    """(root bus, bridges from the root port down, function) of the PCI function a sysfs
    path leads to, its class directories (infiniband/mlx5_0) left out; None otherwise."""
    devices = os.path.realpath(root.file("sys/devices"))
    target = os.path.realpath(root.file(link))
    if not target.startswith(devices + os.sep):
        return None  # out of the tree, or a link loop realpath gave up on
    parts = target[len(devices) + 1:].split(os.sep)
    if not _ROOT_BUS.fullmatch(parts[0]):
        return None  # a virtual device (nvme-fabrics, rxe)
    chain = []
    for part in parts[1:]:
        if not _FUNCTION.fullmatch(part):
            break
        chain.append(part)
        if len(chain) > _MAX_DEPTH:
            return None
    if not chain:
        return None
    return parts[0], chain[:-1], chain[-1]


def _attribute(root: Root, rel: str) -> str | None:
    """A one-value sysfs attribute; None where it is missing, oversized or not a file."""
    try:
        text = root.read_text(rel, _ATTRIBUTE_BYTES)
    except RootError:
        return None
    if text is None:
        return None
    value = " ".join(text.split())
    return value or None


def _hex(root: Root, rel: str) -> int | None:
    value = _attribute(root, rel)
    try:
        return None if value is None else int(value, 16)
    except ValueError:
        return None


def _numa_node(root: Root, rel: str) -> int | None:
    """The node the kernel gives the function; -1 (no NUMA information) and junk are None."""
    value = _attribute(root, rel)
    try:
        node = None if value is None else int(value)
    except ValueError:
        return None
    return node if node is not None and 0 <= node <= _MAX_NUMA_NODE else None
