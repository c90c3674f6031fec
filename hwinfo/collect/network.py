"""The network source: every interface but loopback, from sys/class/net, and the RDMA devices.

Attributes as the kernel's Documentation/ABI/testing/sysfs-class-net describes them (operstate,
mtu, speed in Mb/s, address, type as an ARPHRD number), bonds as bonding.rst does
(bonding/mode, bonding/slaves), bridges' ports in brif/. What an interface is comes from its
uevent's DEVTYPE and whether a device is behind it. Its driver, PCI function, NUMA node
and MAC are read once (collect/inventory.py); state, speed, MTU and membership every sample.
"""

from __future__ import annotations

import dataclasses

from hwinfo.collect import pci, rdma
from hwinfo.collect.errors import NothingRead
from hwinfo.collect.inventory import Inventory
from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal
from hwinfo.model.network import NetInterface, Network

NET_DIR = "sys/class/net"
_LOOPBACK = "772"  # ARPHRD_LOOPBACK
_LINK_TYPES = {"1": "ethernet", "32": "infiniband"}  # ARPHRD_ETHER, ARPHRD_INFINIBAND
_DEVTYPE_KINDS = {"bond": "bond", "bridge": "bridge", "vlan": "vlan"}
# The drivers of interfaces that have no device: the kernel module that makes them.
_KIND_DRIVERS = {"bond": "bonding", "bridge": "bridge", "vlan": "8021q"}
_BITS_PER_MEGABIT = 1_000_000


def uevent(root: Root, rel: str) -> dict[str, str]:
    """A uevent file's KEY=value lines."""
    text = root.attribute(f"{rel}/uevent") or ""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def interface_kind(root: Root, base: str) -> str:
    devtype = uevent(root, base).get("DEVTYPE", "")
    if devtype in _DEVTYPE_KINDS:
        return _DEVTYPE_KINDS[devtype]
    if root.exists(f"{base}/bonding"):
        return "bond"
    if root.exists(f"{base}/bridge"):
        return "bridge"
    if root.exists(f"{base}/device/physfn"):
        return "vf"
    return "physical" if root.exists(f"{base}/device") else "virtual"


def read_interface(root: Root, name: str) -> tuple[NetInterface, pci.PciFunction | None] | None:
    """An interface's inventory and PCI function; None for loopback. Its state is left for
    read_state."""
    base = f"{NET_DIR}/{name}"
    link_type = root.attribute(f"{base}/type")
    if link_type == _LOOPBACK:
        return None
    kind = interface_kind(root, base)
    device = root.resolve(f"{base}/device") if kind in ("physical", "vf") else None
    function = pci.function_of(device)
    interface = NetInterface(
        name=name,
        kind=kind,
        driver=root.link_name(f"{base}/device/driver") or _KIND_DRIVERS.get(kind),
        operstate=None,
        speed_bytes_per_second=None,
        mtu_bytes=None,
        # Inventory too: a MAC changes when a person sets one, and the inventory is read again
        # within inventory.REFRESH_SECONDS; read each sample it would be a quarter of a veth's cost.
        mac_address=root.attribute(f"{base}/address"),
        link_type=None if link_type is None else _LINK_TYPES.get(link_type, link_type),
        pci_address=function.address if function else None,
        numa_node=pci.numa_node(root, function),
        pcie=None,
        master=None,
    )
    # Only a function with a PCIe link is asked for it every sample (not a virtio NIC's).
    return interface, function if pci.link(root, function) is not None else None


def _speed(root: Root, base: str) -> int | None:
    """speed is in Mb/s; reading it fails while the link is down, and says -1 when unknown."""
    text = root.attribute(f"{base}/speed")
    megabits = None if text is None else decimal(text)
    return None if not megabits else megabits * _BITS_PER_MEGABIT // 8


def _lower(root: Root, base: str) -> list[str]:
    """The interfaces below this one, from its lower_<name> links."""
    return [entry[len("lower_"):] for entry in root.listdir(base) if entry.startswith("lower_")]


def read_state(root: Root, inventory: NetInterface, function: pci.PciFunction | None
               ) -> NetInterface:
    """An interface as it is now: its inventory with link state, speed, MTU and membership."""
    base = f"{NET_DIR}/{inventory.name}"
    members: list[str] = []
    parent = None
    mode = None
    if inventory.kind == "bond":
        members = (root.attribute(f"{base}/bonding/slaves") or "").split()
        mode = (root.attribute(f"{base}/bonding/mode") or "").split(" ")[0] or None
    elif inventory.kind == "bridge":
        members = root.listdir(f"{base}/brif")
    elif inventory.kind == "vlan":
        lower = _lower(root, base)
        parent = lower[0] if len(lower) == 1 else None
    mtu = root.attribute(f"{base}/mtu")
    return dataclasses.replace(
        inventory,
        operstate=root.attribute(f"{base}/operstate"),
        # A veth's or tun's driver says a nominal 10 Gb/s or 10 Mb/s: no link has that rate.
        speed_bytes_per_second=None if inventory.kind == "virtual" else _speed(root, base),
        mtu_bytes=None if mtu is None else decimal(mtu),
        pcie=pci.link(root, function),
        master=root.link_name(f"{base}/master"),
        members=members,
        parent=parent,
        bond_mode=mode,
    )


class NetworkCollector:
    def __init__(self, root: Root) -> None:
        self.root = root
        self._interfaces = Inventory(lambda names: [
            found for name in names if (found := read_interface(root, name)) is not None])
        self._rdma = rdma.inventory(root)

    def collect(self) -> Network:
        if not self.root.exists(NET_DIR):
            raise NothingRead(f"nothing could be read below {self.root.path}")
        return Network(
            interfaces=[read_state(self.root, inventory, function) for inventory, function
                        in self._interfaces.of(self.root.listdir(NET_DIR))],
            rdma_devices=rdma.read_devices(self.root, self._rdma),
        )
