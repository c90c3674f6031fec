"""NVML's topology calls through the real pynvml on the simulator: common ancestors, nearest
GPUs, the GPUs near a CPU, P2P status, NVLink far ends and affinity, with NVML's return
codes where a GPU, link, handle or driver lacks them. Truths are worked out by hand from
the scenarios' trees (hwinfo/sim/scenarios/*.json) and nvml.h's level definitions."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import pynvml as N
import pytest

import hwinfo.sim
from hwinfo.sim.scenario import parse_scenario

LEVEL = {"PIX": N.NVML_TOPOLOGY_SINGLE, "PXB": N.NVML_TOPOLOGY_MULTIPLE,
         "PHB": N.NVML_TOPOLOGY_HOSTBRIDGE, "NODE": N.NVML_TOPOLOGY_NODE,
         "SYS": N.NVML_TOPOLOGY_SYSTEM}
# Two A100 PCIe cards joined by an NVLink bridge of 4 links, a third card on the other
# socket: PCIe only. Each card sits below its own root port; the first two share a root bus.
BRIDGED = {
    "driver": {"version": "535.161.08"},
    "gpus": [
        {"board": "A100-PCIE-80GB", "pci_bus_id": "00000000:17:00.0", "nvlink_links": 4,
         "nvlink_remote": [{"to": "0000:65:00.0", "links": 4}]},
        {"board": "A100-PCIE-80GB", "pci_bus_id": "00000000:65:00.0", "nvlink_links": 4,
         "nvlink_remote": [{"to": "0000:17:00.0", "links": 4}]},
        {"board": "A100-PCIE-80GB", "pci_bus_id": "00000000:CA:00.0", "nvlink_links": 0,
         "cpu_affinity": "32-63", "numa_affinity": "1"},
    ],
    "topology": {"pci": [
        {"bus": "0000:00", "numa_node": 0, "devices": [
            {"address": "0000:00:02.0", "kind": "bridge", "devices": [
                {"address": "0000:17:00.0", "kind": "gpu"}]},
            {"address": "0000:00:03.0", "kind": "bridge", "devices": [
                {"address": "0000:65:00.0", "kind": "gpu"}]}]},
        {"bus": "0000:c9", "numa_node": 1, "devices": [
            {"address": "0000:c9:02.0", "kind": "bridge", "devices": [
                {"address": "0000:ca:00.0", "kind": "gpu"}]}]},
    ]},
}


@pytest.fixture
def simulate() -> Iterator[Any]:
    installed = 0

    def make(source: str | dict[str, Any]) -> list[Any]:
        nonlocal installed
        scenario = source if isinstance(source, str) else parse_scenario(
            {"format": 1, **source}, "t.json", "t")
        hwinfo.sim.install(scenario)
        installed += 1
        N.nvmlInit()
        return [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]

    yield make
    for _ in range(installed):
        hwinfo.sim.uninstall()


def _levels(handles: list[Any]) -> dict[tuple[int, int], int]:
    return {(a, b): N.nvmlDeviceGetTopologyCommonAncestor(handles[a], handles[b])
            for a in range(len(handles)) for b in range(len(handles)) if a != b}


def test_dgx_a100_gpus_pair_up_below_their_switches(simulate: Any) -> None:
    """GPUs 0/1, 2/3, 4/5, 6/7 share a PCIe switch complex; every quad is its own NUMA node
    (NPS4), so all else is SYS: the PCI level under the NV12 nvidia-smi shows."""
    levels = _levels(simulate("dgx-a100-mig"))
    assert levels == {(a, b): LEVEL["PXB"] if a // 2 == b // 2 else LEVEL["SYS"]
                      for a, b in levels}


def test_dgx_h100_gpus_have_a_root_bus_each(simulate: Any) -> None:
    levels = _levels(simulate("dgx-h100"))
    assert levels == {(a, b): LEVEL["NODE"] if a // 4 == b // 4 else LEVEL["SYS"]
                      for a, b in levels}


def test_hand_made_levels(simulate: Any) -> None:
    """Each level of nvml.h from a tree built for it: one switch, two switches, one root
    bus, two root buses of one node, two nodes, and a root bus with no node known."""
    data = {"gpus": [{"board": "T4", "pci_bus_id": f"00000000:{b:02X}:00.0"}
                     for b in (0x03, 0x04, 0x07, 0x08, 0x41, 0x81, 0xC1)]}

    def leaf(address: str) -> dict[str, Any]:
        return {"address": address, "kind": "gpu"}

    def bridge(address: str, *below: dict[str, Any]) -> dict[str, Any]:
        return {"address": address, "kind": "bridge", "devices": list(below)}

    data["topology"] = {"pci": [
        {"bus": "0000:00", "numa_node": 0, "devices": [
            bridge("0000:00:01.0", bridge("0000:01:00.0",  # a switch: upstream port
                bridge("0000:02:00.0", leaf("0000:03:00.0")),  # its downstream ports
                bridge("0000:02:01.0", leaf("0000:04:00.0")),
                bridge("0000:02:02.0", bridge("0000:05:00.0",  # a second switch below it
                    bridge("0000:06:00.0", leaf("0000:07:00.0")))))),
            bridge("0000:00:02.0", leaf("0000:08:00.0"))]},
        {"bus": "0000:40", "numa_node": 0, "devices": [bridge("0000:40:01.0", leaf("0000:41:00.0"))]},
        {"bus": "0000:80", "numa_node": 1, "devices": [bridge("0000:80:01.0", leaf("0000:81:00.0"))]},
        {"bus": "0000:c0", "devices": [bridge("0000:c0:01.0", leaf("0000:c1:00.0"))]},
    ]}
    levels = _levels(simulate(data))
    assert levels[0, 1] == LEVEL["PIX"]  # two downstream ports of one switch
    assert levels[0, 2] == levels[1, 2] == LEVEL["PXB"]  # through the second switch too
    assert levels[0, 3] == levels[2, 3] == LEVEL["PHB"]  # only the root bus in common
    assert levels[0, 4] == LEVEL["NODE"]  # another root bus of node 0
    assert levels[0, 5] == LEVEL["SYS"]  # node 1
    assert levels[0, 6] == levels[6, 0] == LEVEL["SYS"]  # no node known: not "the same"
    with pytest.raises(N.NVMLError_InvalidArgument):  # a GPU and itself: no path to name
        handles = [N.nvmlDeviceGetHandleByIndex(0)] * 2
        N.nvmlDeviceGetTopologyCommonAncestor(*handles)


def test_nearest_gpus_and_the_gpus_near_a_cpu(simulate: Any) -> None:
    handles = simulate("dgx-a100-mig")
    uuids = [N.nvmlDeviceGetUUID(h) for h in handles]

    def nearest(level: int) -> list[str]:
        return sorted(N.nvmlDeviceGetUUID(h)
                      for h in N.nvmlDeviceGetTopologyNearestGpus(handles[0], level))

    assert nearest(N.NVML_TOPOLOGY_SINGLE) == []
    assert nearest(N.NVML_TOPOLOGY_MULTIPLE) == [uuids[1]]
    assert nearest(N.NVML_TOPOLOGY_SYSTEM) == sorted(uuids[1:])
    # CPU 48 is NUMA node 3's, near GPUs 0 and 1; CPU 0 is node 0's, near no GPU.
    assert sorted(N.nvmlDeviceGetUUID(h) for h in N.nvmlSystemGetTopologyGpuSet(48)) == \
        sorted(uuids[:2])
    assert N.nvmlSystemGetTopologyGpuSet(0) == []


def test_p2p_status(simulate: Any) -> None:
    read, write, nvlink, atomics, pci = 0, 1, 2, 3, 4  # nvmlGpuP2PCapsIndex_t
    ok, cns, gns, ns = (N.NVML_P2P_STATUS_OK, N.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED,
                        N.NVML_P2P_STATUS_GPU_NOT_SUPPORTED, N.NVML_P2P_STATUS_NOT_SUPPORTED)

    def status(handles: list[Any], a: int, b: int) -> tuple[int, ...]:
        return tuple(N.nvmlDeviceGetP2PStatus(handles[a], handles[b], cap)
                     for cap in (read, write, nvlink, atomics, pci))

    dgx = simulate("dgx-a100-mig")
    assert status(dgx, 0, 7)[:4] == (ok, ok, ok, ok)  # over NVLink, whatever the PCIe path
    # GeForce boards do no PCIe peer-to-peer (public `topo -p2p` of two 5090s: GNS).
    workstation = simulate("workstation-geforce")
    assert status(workstation, 0, 1) == (gns, gns, ns, gns, gns)
    bridged = simulate(BRIDGED)
    assert status(bridged, 0, 1) == (ok, ok, ok, ok, ok)  # the bridge; PCIe on one root bus
    assert status(bridged, 0, 2) == (cns, cns, ns, ns, cns)  # across the sockets, no NVLink


def test_pynvml_s_read_constant_fails_as_on_a_real_library(simulate: Any) -> None:
    """nvidia-ml-py spells NVML_P2P_CAPS_INDEX_READ `0,`: a tuple ctypes cannot pass."""
    handles = simulate("dgx-a100-mig")
    assert isinstance(N.NVML_P2P_CAPS_INDEX_READ, tuple)
    with pytest.raises(ctypes.ArgumentError):
        N.nvmlDeviceGetP2PStatus(handles[0], handles[1], N.NVML_P2P_CAPS_INDEX_READ)


def _far_ends(handle: Any, links: range) -> list[tuple[str, int]]:
    return [(N.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId,
             N.nvmlDeviceGetNvLinkRemoteDeviceType(handle, link)) for link in links]


def test_nvlink_far_ends(simulate: Any) -> None:
    switch, gpu = N.NVML_NVLINK_DEVICE_TYPE_SWITCH, N.NVML_NVLINK_DEVICE_TYPE_GPU
    # DGX A100: two links to each of six NVSwitches (NCCL's dump of one, nvidia/nccl#1505).
    dgx = simulate("dgx-a100-mig")
    assert _far_ends(dgx[3], range(12)) == [
        (f"00000000:{bus:02X}:00.0", switch) for bus in range(0xC4, 0xCA) for _ in range(2)]
    with pytest.raises(N.NVMLError_InvalidArgument):  # past NVML_NVLINK_MAX_LINKS (18)
        N.nvmlDeviceGetNvLinkRemotePciInfo(dgx[0], 18)
    # DGX H100: 4, 5, 5 and 4 links to its four NVSwitches (an HGX H100's NCCL dump).
    h100 = simulate("dgx-h100")
    assert [bus for bus, _ in _far_ends(h100[0], range(18))] == [
        f"00000000:0{n}:00.0" for n, count in ((5, 4), (6, 5), (7, 5), (8, 4))
        for _ in range(count)]
    bridged = simulate(BRIDGED)
    assert _far_ends(bridged[0], range(4)) == [("00000000:65:00.0", gpu)] * 4
    assert N.nvmlDeviceGetNvLinkRemotePciInfo(bridged[0], 0).pciDeviceId == 0x20B510DE
    with pytest.raises(N.NVMLError_NotSupported):  # a link the bridge does not enable
        N.nvmlDeviceGetNvLinkRemotePciInfo(bridged[0], 4)
    workstation = simulate("workstation-geforce")
    with pytest.raises(N.NVMLError_NotSupported):  # no NVLink at all
        N.nvmlDeviceGetNvLinkRemotePciInfo(workstation[0], 0)


def test_remote_device_type_came_with_r470(simulate: Any) -> None:
    handles = simulate({**BRIDGED, "driver": {"version": "460.91.03"}})
    assert N.nvmlDeviceGetNvLinkRemotePciInfo(handles[0], 0).busId == "00000000:65:00.0"
    with pytest.raises(N.NVMLError_FunctionNotFound):
        N.nvmlDeviceGetNvLinkRemoteDeviceType(handles[0], 0)


def test_affinity_within_a_scope(simulate: Any) -> None:
    node, socket = N.NVML_AFFINITY_SCOPE_NODE, N.NVML_AFFINITY_SCOPE_SOCKET
    dgx = simulate("dgx-a100-mig")
    assert list(N.nvmlDeviceGetMemoryAffinity(dgx[4], 1, node)) == [1 << 7]  # node 7
    words = N.nvmlDeviceGetCpuAffinityWithinScope(dgx[4], 4, socket)
    assert [w * 64 + b for w, word in enumerate(words) for b in range(64) if word >> b & 1] \
        == [*range(112, 128), *range(240, 256)]
    bridged = simulate(BRIDGED)
    assert list(N.nvmlDeviceGetMemoryAffinity(bridged[2], 1, node)) == [1 << 1]  # its own
    assert list(N.nvmlDeviceGetMemoryAffinity(bridged[0], 1, node)) == [1]  # its root bus's
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlDeviceGetMemoryAffinity(bridged[0], 1, 2)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceGetCpuAffinityWithinScope(bridged[0], 1, node)  # none given


def test_mig_device_handles_and_scenarios_without_a_tree(simulate: Any) -> None:
    dgx = simulate("dgx-a100-mig")
    mig = N.nvmlDeviceGetMigDeviceHandleByIndex(dgx[0], 0)
    for query in (lambda: N.nvmlDeviceGetTopologyCommonAncestor(mig, dgx[1]),
                  lambda: N.nvmlDeviceGetP2PStatus(dgx[1], mig, 1),
                  lambda: N.nvmlDeviceGetMemoryAffinity(mig, 1, 0)):
        with pytest.raises(N.NVMLError_NotSupported):
            query()
    h200 = simulate("h200-mig")  # no topology given: no tree to answer from
    for query in (lambda: N.nvmlDeviceGetTopologyNearestGpus(h200[0], 50),
                  lambda: N.nvmlDeviceGetMemoryAffinity(h200[0], 1, 0),
                  lambda: N.nvmlDeviceGetNvLinkRemotePciInfo(h200[0], 0)):
        with pytest.raises(N.NVMLError_NotSupported):
            query()
