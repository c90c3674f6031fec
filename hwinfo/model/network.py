"""Network interfaces and RDMA (InfiniBand, RoCE) devices."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwinfo.model.pcie import PcieLinkStatus

# NetInterface.kind values. "physical": a NIC function with a device behind it; "vf": an SR-IOV
# virtual function; "virtual": anything else with no device (veth, tun, ifb, dummy, ...).
INTERFACE_KINDS = ("physical", "vf", "bond", "bridge", "vlan", "virtual")


@dataclass
class NetInterface:
    name: str
    kind: str | None  # one of INTERFACE_KINDS
    driver: str | None  # the device's driver (mlx5_core, ice, virtio_net), bonding, bridge
    # operstate as the kernel says it (RFC 2863): up, down, lowerlayerdown, dormant,
    # notpresent, testing, unknown.
    operstate: str | None
    speed_bytes_per_second: int | None  # the negotiated rate; None when down or unreported
    mtu_bytes: int | None
    mac_address: str | None
    link_type: str | None  # ethernet, infiniband, or the kernel's ARPHRD number
    pci_address: str | None
    numa_node: int | None
    pcie: PcieLinkStatus | None
    master: str | None  # the bond or bridge it belongs to
    members: list[str] = field(default_factory=list)  # a bond's or bridge's interfaces
    parent: str | None = None  # a VLAN's lower interface
    bond_mode: str | None = None  # 802.3ad, active-backup, balance-rr, ...


@dataclass
class RdmaPort:
    port: int
    state: str | None  # DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER
    physical_state: str | None  # Sleep, Polling, Disabled, LinkUp, LinkErrorRecovery, ...
    rate_bytes_per_second: int | None
    rate: str | None  # the kernel's words: "200 Gb/sec (4X HDR)"
    link_layer: str | None  # InfiniBand, or Ethernet for RoCE
    netdev: str | None  # the interface this port backs (IPoIB, or the RoCE NIC)


@dataclass
class RdmaDevice:
    name: str  # mlx5_0
    hca_type: str | None  # MT4123
    firmware: str | None
    node_guid: str | None
    board_id: str | None
    pci_address: str | None
    numa_node: int | None
    ports: list[RdmaPort] = field(default_factory=list)


@dataclass
class Network:
    interfaces: list[NetInterface] = field(default_factory=list)
    rdma_devices: list[RdmaDevice] = field(default_factory=list)
