"""The PCI functions a topology is made of, where sysfs places them (collect/pci.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PciDevice:
    """A GPU, an RDMA NIC's function or an NVMe controller, and the bridges above it."""

    address: str  # "0000:07:00.0", as sysfs names it
    kind: str  # "gpu", "nic" (an RDMA device), "nvme"
    name: str | None  # the RDMA device (mlx5_0) or NVMe controller (nvme0); None for a GPU
    # sysfs's name of its root bus ("pci0000:00"): the host bridge.
    host_bridge: str
    bridges: list[str]  # the PCI bridges from the root port down to it
    numa_node: int | None  # None: the kernel knows none (-1)
    model: str | None = None  # an NVMe controller's model


@dataclass
class PciTree:
    """The functions `report --topology` places: NVIDIA GPUs, RDMA NICs, NVMe controllers."""

    devices: list[PciDevice] = field(default_factory=list)
