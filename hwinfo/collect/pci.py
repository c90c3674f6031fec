"""Where sysfs places a PCI function: its address, its bridges up to the host bridge, its NUMA
node and PCIe link; and the places of the GPUs, RDMA NICs and NVMe controllers.

A device's directory under sys/devices sits below its PCI function's, which sits below the
bridges above it (kernel Documentation/ABI/testing/sysfs-bus-pci;
/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/...). /sys/bus/pci/devices/<address>,
/sys/class/infiniband/<name>, /sys/class/nvme/<name>, a disk's and an interface's `device`
link into that tree. Following a link gives the function and its root bus (its host bridge)
and bridges: what a disk's or NIC's NUMA node and link are read from, and what `report
--topology` words the distance between two devices from, as nvidia-smi does for NICs
(model/topology.py). Every read goes through Root, so a fixture tree or a simulated
machine's (`hwinfo/sim/sysfs_tree.py`) reads alike.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal
from hwinfo.model.pci import PciDevice, PciTree
from hwinfo.model.pcie import PcieLinkStatus

_ADDRESS = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_ROOT_BUS = re.compile(r"pci[0-9a-f]{4,8}:[0-9a-f]{2}")
# The transfer rate of each PCIe generation, as current_link_speed writes it ("16.0 GT/s PCIe";
# kernels before 4.19 wrote "8 GT/s", before 5.x "8.0 GT/s").
_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}
_SPEED = re.compile(r"(\d{1,3}(?:\.\d{1,2})?) GT/s")
_NVIDIA = 0x10DE
_DISPLAY_CLASSES = (0x0300, 0x0302)  # VGA and 3D controllers (a GPU shows as one of them)
# Bounds on a hostile tree: no machine nests PCI bridges this deep or lists this many
# functions of a kind; a NUMA node id past this is junk.
_MAX_DEPTH = 32
_MAX_DEVICES = 1024
_MAX_FUNCTIONS = 16384
_MAX_NUMA_NODE = 1023


class PciFunction(NamedTuple):
    """Where a device sits: its PCI function's address and directory below the root."""

    address: str  # 0000:5e:00.0
    path: str  # sys/devices/pci0000:5d/0000:5d:02.0/0000:5e:00.0


def function_of(path: str | None) -> PciFunction | None:
    """The PCI function nearest below a device's resolved sysfs path (Root.resolve)."""
    if path is None:
        return None
    parts = path.split("/")
    for end in range(len(parts), 0, -1):
        if _ADDRESS.fullmatch(parts[end - 1]):
            return PciFunction(parts[end - 1], "/".join(parts[:end]))
    return None


def numa_node(root: Root, function: PciFunction | None) -> int | None:
    """The function's NUMA node; None where the kernel says -1 (one node, or not known)."""
    if function is None:
        return None
    value = root.attribute(f"{function.path}/numa_node")
    node = None if value is None else decimal(value)
    return node if node is not None and node <= _MAX_NUMA_NODE else None


def generation(speed: str | None) -> int | None:
    """The PCIe generation of a link speed as sysfs writes it; None for "Unknown" and the like."""
    match = _SPEED.match(speed or "")
    return _GENERATIONS.get(float(match.group(1))) if match else None


def link(root: Root, function: PciFunction | None) -> PcieLinkStatus | None:
    """The function's PCIe link; None where sysfs has none (a virtual function, a non-PCIe bus)."""
    if function is None:
        return None

    def read(name: str) -> str | None:
        return root.attribute(f"{function.path}/{name}")

    status = PcieLinkStatus(
        generation=generation(read("current_link_speed")),
        max_generation=generation(read("max_link_speed")),
        width=_width(read("current_link_width")),
        max_width=_width(read("max_link_width")),
    )
    return None if status == PcieLinkStatus(None, None, None, None) else status


def _width(text: str | None) -> int | None:
    """Lanes; 0 (a link that is down) is not a width."""
    value = None if text is None else decimal(text)
    return value or None


def _hex(root: Root, rel: str) -> int | None:
    value = root.attribute(rel)
    try:
        return None if value is None else int(value, 16)
    except ValueError:
        return None


def pci_path(root: Root, rel: str) -> tuple[str, list[str], str] | None:
    """(root bus, bridges from the root port down, function) of the PCI function a sysfs
    path leads to, its class directories (infiniband/mlx5_0) left out; None otherwise."""
    resolved = root.resolve(rel)
    if resolved is None or not resolved.startswith("sys/devices/"):
        return None  # out of the tree, or a link loop
    parts = resolved.split("/")[2:]
    if not _ROOT_BUS.fullmatch(parts[0]):
        return None  # a virtual device (nvme-fabrics, rxe)
    chain = []
    for part in parts[1:]:
        if not _ADDRESS.fullmatch(part):
            break
        chain.append(part)
        if len(chain) > _MAX_DEPTH:
            return None
    if not chain:
        return None
    return parts[0], chain[:-1], chain[-1]


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
            rel = f"sys/bus/pci/devices/{name}"
            if _hex(self.root, f"{rel}/vendor") != _NVIDIA:
                continue
            kind = _hex(self.root, f"{rel}/class")
            if kind is None or kind >> 8 not in _DISPLAY_CLASSES:
                continue  # an NVSwitch, an audio function
            device = self._device(rel, "gpu", None)
            if device is not None:
                found.append(device)
        return found

    def _class(self, directory: str, kind: str) -> list[PciDevice]:
        found = []
        for name in self.root.listdir(f"sys/class/{directory}")[:_MAX_DEVICES]:
            device = self._device(f"sys/class/{directory}/{name}", kind, name)
            if device is not None:
                if kind == "nvme":
                    device.model = self.root.attribute(f"sys/class/nvme/{name}/model")
                found.append(device)
        return found

    def _device(self, rel: str, kind: str, name: str | None) -> PciDevice | None:
        """The function a link leads to, placed; None where it leads to no PCI function
        (an NVMe-over-fabrics controller, a software RDMA device, a link out of the tree)."""
        place = pci_path(self.root, rel)
        if place is None:
            return None
        host_bridge, bridges, address = place
        directory = "/".join(("sys/devices", host_bridge, *bridges, address))
        return PciDevice(address, kind, name, host_bridge, bridges,
                         numa_node(self.root, PciFunction(address, directory)))
