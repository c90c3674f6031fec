"""The network source: fixture servers' NICs, bonds and RDMA ports, hostile trees, and this
machine's interfaces as `ip -j -d link` sees them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import require_tool
from fixtures.devices import Devices
from fixtures.machines import shared_tree

from hwinfo.collect import rdma
from hwinfo.collect.errors import NothingRead
from hwinfo.collect.network import NetworkCollector
from hwinfo.collect.sysfs import Root
from hwinfo.model.network import Network, RdmaPort
from hwinfo.model.pcie import PcieLinkStatus

GEN4_X16 = PcieLinkStatus(4, 4, 16, 16)


def _network(machine: str) -> Network:
    return NetworkCollector(Root(shared_tree(machine))).collect()


def test_the_gpu_node_s_interfaces() -> None:
    found = {i.name: i for i in _network("x86-2s-smt").interfaces}
    assert list(found) == ["bond0", "enp153s0f0np0", "enp153s0f1np1", "ibp26s0", "ibp60s0"]
    assert [(i.kind, i.driver, i.operstate, i.speed_bytes_per_second, i.mtu_bytes, i.link_type)
            for i in found.values()] == [
        ("bond", "bonding", "up", 25_000_000_000, 1500, "ethernet"),
        ("physical", "mlx5_core", "up", 12_500_000_000, 1500, "ethernet"),
        ("physical", "mlx5_core", "up", 12_500_000_000, 1500, "ethernet"),
        ("physical", "mlx5_core", "down", None, 2044, "infiniband"),  # no speed while down
        ("physical", "mlx5_core", "down", None, 2044, "infiniband"),
    ]
    bond = found["bond0"]
    assert (bond.members, bond.bond_mode, bond.master, bond.pci_address, bond.pcie) == (
        ["enp153s0f0np0", "enp153s0f1np1"], "802.3ad", None, None, None)
    port = found["enp153s0f1np1"]
    assert (port.master, port.mac_address, port.pci_address, port.numa_node, port.pcie) == (
        "bond0", "0c:42:a1:1d:d1:2b", "0000:99:00.1", 1, GEN4_X16)
    assert (found["ibp26s0"].pci_address, found["ibp26s0"].numa_node) == ("0000:1a:00.0", 0)


def test_rdma_ports_and_the_netdevs_they_back() -> None:
    devices = _network("x86-2s-smt").rdma_devices
    assert [(d.name, d.hca_type, d.firmware, d.node_guid, d.pci_address, d.numa_node)
            for d in devices] == [
        ("mlx5_0", "MT4123", "20.33.1048", "1070:fd03:008e:b580", "0000:1a:00.0", 0),
        ("mlx5_1", "MT4123", "20.33.1048", "1070:fd03:008e:a7a4", "0000:3c:00.0", 0),
        ("mlx5_bond_0", "MT4125", "22.32.2004", "0c42:a103:001d:d12a", "0000:99:00.0", 1),
    ]
    assert [d.ports for d in devices] == [
        # IPoIB: the netdev of the device's PCI function on the port (dev_port 0).
        [RdmaPort(1, "ACTIVE", "LinkUp", 25_000_000_000, "200 Gb/sec (4X HDR)", "InfiniBand",
                  "ibp26s0")],
        [RdmaPort(1, "DOWN", "Disabled", 1_250_000_000, "10 Gb/sec (4X SDR)", "InfiniBand",
                  "ibp60s0")],
        # RoCE LAG: the bond, as GID 0's netdev says.
        [RdmaPort(1, "ACTIVE", "LinkUp", 12_500_000_000, "100 Gb/sec (2X HDR)", "Ethernet",
                  "bond0")],
    ]


def test_a_cloud_nic_without_speed() -> None:
    (ens5,) = _network("arm64-server").interfaces
    assert (ens5.name, ens5.kind, ens5.driver, ens5.mtu_bytes, ens5.speed_bytes_per_second,
            ens5.numa_node) == ("ens5", "physical", "ena", 9001, None, None)
    assert _network("arm64-server").rdma_devices == []


@pytest.mark.parametrize(("rate", "expected"), [
    ("2.5 Gb/sec (1X SDR)", 312_500_000),
    ("400 Gb/sec (4X NDR)", 50_000_000_000),
    ("56 Gb/sec (4X FDR)", 7_000_000_000),
    ("", None), ("fast", None), ("-10 Gb/sec", None), ("1" * 30 + " Gb/sec", None),
])
def test_rates_as_the_kernel_writes_them(rate: str, expected: int | None) -> None:
    assert rdma.rate_bytes_per_second(rate) == expected


def _tree(tmp_path: Path) -> Root:
    """A VLAN on a NIC, an SR-IOV virtual function, a bridge with a veth in it."""
    d = Devices()
    pf = d.pci("sys/devices/pci0000:00/0000:00:03.0", 0, ("8.0 GT/s PCIe", 4, "8.0 GT/s PCIe",
                                                          8), "ixgbe")
    vf = d.pci("sys/devices/pci0000:00/0000:00:03.0/0000:01:10.0", 0, None, "ixgbevf")
    d.link(f"{vf}/physfn", pf)
    d.nic("eth0", pf, "00:1b:21:00:00:01", 1500, "up", 10000)
    d.nic("eth1", vf, "00:1b:21:00:00:02", 1500, "up", 10000)
    d.netdev("eth0.100", "sys/devices/virtual/net/eth0.100", "00:1b:21:00:00:01", 1500,
             "lowerlayerdown", -1, devtype="vlan")
    d.link("sys/devices/virtual/net/eth0.100/lower_eth0",
           "sys/devices/pci0000:00/0000:00:03.0/net/eth0")
    br = d.netdev("br0", "sys/devices/virtual/net/br0", "02:42:ac:11:00:01", 1500, "up", None,
                  devtype="bridge")
    d.set(f"{br}/bridge/stp_state", "0")
    d.netdev("veth1", "sys/devices/virtual/net/veth1", "02:42:ac:11:00:02", 1500, "up", 10000)
    d.link(f"{br}/brif/veth1", "sys/devices/virtual/net/veth1/brport")
    d.enslave("br0", ("veth1",))
    return Root(d.write(tmp_path))


def test_vlans_vfs_bridges_and_virtual_interfaces(tmp_path: Path) -> None:
    found = {i.name: i for i in NetworkCollector(_tree(tmp_path)).collect().interfaces}
    assert [(n, i.kind, i.driver, i.parent, i.members, i.master, i.speed_bytes_per_second)
            for n, i in found.items()] == [
        ("br0", "bridge", "bridge", None, ["veth1"], None, None),
        ("eth0", "physical", "ixgbe", None, [], None, 1_250_000_000),
        ("eth0.100", "vlan", "8021q", "eth0", [], None, None),  # speed -1: unknown
        ("eth1", "vf", "ixgbevf", None, [], None, 1_250_000_000),
        ("veth1", "virtual", None, None, [], "br0", None),  # its nominal 10 Gb/s is no rate
    ]
    # A NIC on a narrower link than it and its slot allow.
    assert found["eth0"].pcie == PcieLinkStatus(3, 3, 4, 8)


def test_hostile_interface_files(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    eth0 = Path(root.file("sys/class/net/eth0"))
    (eth0 / "speed").unlink()
    os.mkfifo(eth0 / "speed")  # no writer: a plain read would wait for ever
    (eth0 / "mtu").write_bytes(b"\xff\xfe1500\n")
    (eth0 / "operstate").unlink()
    (eth0 / "operstate").symlink_to("operstate")  # a link loop
    (eth0 / "device").unlink()
    (eth0 / "device").symlink_to("/nonexistent/device")  # leads out of the root, nowhere
    found = {i.name: i for i in NetworkCollector(root).collect().interfaces}
    eth = found["eth0"]
    assert (eth.speed_bytes_per_second, eth.mtu_bytes, eth.operstate, eth.pci_address) == (
        None, None, None, None)
    assert eth.mac_address == "00:1b:21:00:00:01"  # the rest is read


def test_no_sys_class_net_is_nothing_read(tmp_path: Path) -> None:
    with pytest.raises(NothingRead):
        NetworkCollector(Root(tmp_path)).collect()


def _ip_link() -> dict[str, dict[str, object]]:
    done = subprocess.run([require_tool("ip"), "-j", "-d", "link"], capture_output=True,
                          text=True, check=True, timeout=60)
    return {link["ifname"]: link for link in json.loads(done.stdout)}


# ip's linkinfo kinds, as the network source names them.
_IP_KINDS = {"bond": "bond", "bridge": "bridge", "vlan": "vlan"}


def test_every_interface_ip_link_lists_with_its_mtu_and_state() -> None:
    before = _ip_link()
    network = NetworkCollector(Root("/")).collect()
    after = _ip_link()
    ours = {i.name: i for i in network.interfaces}
    # Interfaces that stayed while both looked (a container's veth may come and go).
    stable = {n: link for n, link in before.items() if n in after and n != "lo"
              and (link["mtu"], link["operstate"]) == (after[n]["mtu"], after[n]["operstate"])}
    assert set(stable) <= set(ours) <= set(before) | set(after)
    for name, link in stable.items():
        mine = ours[name]
        assert (mine.mtu_bytes, (mine.operstate or "").upper(), mine.mac_address) == (
            link["mtu"], link["operstate"], link.get("address"))
        kind = (link.get("linkinfo") or {}).get("info_kind")
        if kind in _IP_KINDS:
            assert mine.kind == _IP_KINDS[kind]
        elif kind is not None:  # veth, ifb, tun, dummy, ...: software, no device
            assert mine.kind == "virtual"
        elif link.get("parentbus"):
            assert mine.kind in ("physical", "vf") and mine.pci_address is not None
