"""The topology matrix from a snapshot: words worked out by hand from small PCI trees and
NVLink wirings, and what it says when parts were not read."""

from __future__ import annotations

from fixtures.simulated import simulated_snapshot

from hwinfo.model.gpu import GpuPair, NvLink
from hwinfo.model.pci import PciDevice, PciTree
from hwinfo.model.topology import build_topology, bus_key, nvlink_count, pci_word


def _at(address: str, host_bridge: str = "pci0000:00", *bridges: str,
        numa: int | None = 0) -> PciDevice:
    return PciDevice(address, "nic", "x", host_bridge, list(bridges), numa)


def test_pci_words() -> None:
    root_port, switch_up = "0000:00:01.0", "0000:01:00.0"
    a = _at("0000:03:00.0", "pci0000:00", root_port, switch_up, "0000:02:00.0")
    b = _at("0000:04:00.0", "pci0000:00", root_port, switch_up, "0000:02:01.0")
    deeper = _at("0000:07:00.0", "pci0000:00", root_port, switch_up, "0000:02:02.0",
                 "0000:05:00.0", "0000:06:00.0")
    port_a = _at("0000:08:00.0", "pci0000:00", "0000:00:02.0")
    port_b = _at("0000:08:00.1", "pci0000:00", "0000:00:02.0")
    other_bus = _at("0000:41:00.0", "pci0000:40", "0000:40:01.0")
    other_node = _at("0000:81:00.0", "pci0000:80", "0000:80:01.0", numa=1)
    unknown_node = _at("0000:c1:00.0", "pci0000:c0", "0000:c0:01.0", numa=None)
    assert pci_word(a, b) == "PIX"  # one switch between them
    assert pci_word(port_a, port_b) == "PIX"  # two functions of one device
    assert pci_word(a, deeper) == pci_word(deeper, a) == "PXB"
    assert pci_word(a, port_a) == "PHB"
    assert pci_word(a, other_bus) == "NODE"
    assert pci_word(a, other_node) == "SYS"
    assert pci_word(unknown_node, _at("0000:d1:00.0", "pci0000:d0", numa=None)) == "SYS"


def test_bus_ids_are_one_key_however_written() -> None:
    assert bus_key("00000000:C4:00.0") == bus_key("0000:c4:00.0") == (0, 0xC4, 0, 0)
    assert bus_key("C4:00.0") is None and bus_key(None) is None


def test_nvlink_counts_direct_and_through_switches() -> None:
    snapshot = simulated_snapshot("dgx-h100")
    gpus = snapshot.gpu.gpus  # type: ignore[union-attr]
    assert nvlink_count(gpus[0], gpus[5]) == 18  # every link reaches a switch GPU5 reaches
    direct = gpus[1]
    direct.nvlinks = [NvLink(0, "00000000:1B:00.0", "gpu"), NvLink(1, "00000000:1B:00.0", "gpu"),
                      NvLink(2, None, None)]
    assert nvlink_count(direct, gpus[0]) == 2 and nvlink_count(direct, gpus[2]) == 0


def test_the_matrix_of_a_snapshot_without_topology_says_what_is_missing() -> None:
    snapshot = simulated_snapshot("dgx-h100")  # a plain report reads neither
    topology = build_topology(snapshot)
    assert [d.label for d in topology.devices] == [f"GPU{i}" for i in range(8)]
    assert topology.matrix[0][:3] == ["X", "NV18", "NV18"]  # NVLink is read always
    assert topology.notes == [
        "GPU pairs not read: the PCI distance between GPUs is not known",
        "PCI tree not read: no NIC or NVMe columns, and no GPU distances to them"]
    gpu = snapshot.gpu.gpus[0]  # type: ignore[union-attr]
    gpu.nvlinks = None
    snapshot.gpu.pairs = [GpuPair([0, 1], "node", *["ok"] * 5)]  # type: ignore[union-attr]
    snapshot.pci = PciTree([])
    matrix = build_topology(snapshot).matrix
    assert matrix[0][1] == "NODE" and matrix[0][2] is None  # a pair not read: not known
