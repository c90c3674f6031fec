"""RDMA devices (InfiniBand and RoCE HCAs) from sys/class/infiniband.

Attributes as the kernel's Documentation/ABI/stable/sysfs-class-infiniband describes them: a
port's state ("4: ACTIVE"), phys_state ("5: LinkUp"), rate ("200 Gb/sec (4X HDR)") and
link_layer (InfiniBand, or Ethernet for RoCE). The interface a port backs is the netdev of
its first GID (gid_attrs/ndevs/0, RoCE), or else the netdev of the device's PCI function whose
dev_port is the port's (IPoIB), as rdma-core's ibdev2netdev finds it.
"""

from __future__ import annotations

import dataclasses
import re

from hwinfo.collect import pci
from hwinfo.collect.inventory import Inventory
from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal
from hwinfo.model.network import RdmaDevice, RdmaPort

RDMA_DIR = "sys/class/infiniband"
_RATE = re.compile(r"(\d{1,6})(\.5)? Gb/sec")
_BITS_PER_GIGABIT = 1_000_000_000


def _after_colon(text: str | None) -> str | None:
    """"4: ACTIVE" -> "ACTIVE"."""
    if text is None:
        return None
    return text.partition(": ")[2].strip() or None


def rate_bytes_per_second(rate: str | None) -> int | None:
    """The kernel's rate ("200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)") in bytes per second."""
    match = _RATE.match(rate or "")
    if match is None:
        return None
    tenths = int(match.group(1)) * 10 + (5 if match.group(2) else 0)
    return tenths * _BITS_PER_GIGABIT // 80


def netdev(root: Root, base: str, port: int) -> str | None:
    """The interface a port backs (see the module's docstring)."""
    found = root.attribute(f"{base}/ports/{port}/gid_attrs/ndevs/0")
    if found is not None:
        return found
    candidates = root.listdir(f"{base}/device/net")
    for name in candidates:
        if decimal(root.attribute(f"{base}/device/net/{name}/dev_port") or "") == port - 1:
            return name
    return candidates[0] if len(candidates) == 1 else None


def read_device(root: Root, name: str) -> tuple[RdmaDevice, list[int]]:
    """A device's inventory and its port numbers; the ports' state is read by read_ports."""
    base = f"{RDMA_DIR}/{name}"
    function = pci.function_of(root.resolve(f"{base}/device"))
    ports = sorted(n for entry in root.listdir(f"{base}/ports")
                   if (n := decimal(entry)) is not None)
    device = RdmaDevice(
        name=name,
        hca_type=root.attribute(f"{base}/hca_type"),
        firmware=root.attribute(f"{base}/fw_ver"),
        node_guid=root.attribute(f"{base}/node_guid"),
        board_id=root.attribute(f"{base}/board_id"),
        pci_address=function.address if function else None,
        numa_node=pci.numa_node(root, function),
    )
    return device, ports


def read_ports(root: Root, name: str, numbers: list[int]) -> list[RdmaPort]:
    base = f"{RDMA_DIR}/{name}"
    ports = []
    for number in numbers:
        port = f"{base}/ports/{number}"
        rate = root.attribute(f"{port}/rate")
        ports.append(RdmaPort(
            port=number,
            state=_after_colon(root.attribute(f"{port}/state")),
            physical_state=_after_colon(root.attribute(f"{port}/phys_state")),
            rate_bytes_per_second=rate_bytes_per_second(rate),
            rate=rate,
            link_layer=root.attribute(f"{port}/link_layer"),
            netdev=netdev(root, base, number),
        ))
    return ports


def read_devices(root: Root, inventory: Inventory[list[tuple[RdmaDevice, list[int]]]]
                 ) -> list[RdmaDevice]:
    """Every RDMA device with its ports' state now; `inventory` keeps what does not change."""
    return [dataclasses.replace(device, ports=read_ports(root, device.name, ports))
            for device, ports in inventory.of(root.listdir(RDMA_DIR))]


def inventory(root: Root) -> Inventory[list[tuple[RdmaDevice, list[int]]]]:
    return Inventory(lambda names: [read_device(root, name) for name in names])
