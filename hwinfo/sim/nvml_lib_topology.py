"""Topology calls of the fake libnvidia-ml: common ancestors, nearest GPUs, GPUs near a CPU,
peer-to-peer status, NVLink remote ends, and CPU and memory affinity within a scope.

They answer from the scenario's topology (scenario_topology.py): where it places the GPUs
in its PCI tree, and which GPU or NVSwitch each NVLink link reaches. A scenario without a
topology describes no tree: these calls answer NotSupported, as for any fact it leaves out.

The level of two GPUs is nvml.h's nvmlGpuTopologyLevel_t: SINGLE when the path between them
crosses at most one PCIe switch (both within two steps below the lowest bridge they share),
MULTIPLE when it crosses more without reaching the host bridge, HOSTBRIDGE when they share
only the root bus, NODE for root buses of one NUMA node, SYSTEM otherwise.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from hwinfo.sim import nvml_lib_base as base
from hwinfo.sim.devices import Device, GpuDevice, MigDevice
from hwinfo.sim.machine import Machine
from hwinfo.sim.nvml_lib_base import (
    GPU_IS_LOST,
    INSUFFICIENT_SIZE,
    INVALID_ARGUMENT,
    NOT_SUPPORTED,
    SUCCESS,
    Symbol,
)
from hwinfo.sim.nvml_lib_device import NVLINK_MAX_LINKS
from hwinfo.sim.scenario_gpu import parse_pci_bus_id
from hwinfo.sim.scenario_topology import BusId, NvLinkWire, Placement, walk, wiring

# nvmlGpuTopologyLevel_t (nvml.h).
SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM = 10, 20, 30, 40, 50
# nvmlGpuP2PStatus_t and nvmlGpuP2PCapsIndex_t (nvml.h).
P2P_OK, P2P_CHIPSET_NOT_SUPPORTED, P2P_GPU_NOT_SUPPORTED, P2P_NOT_SUPPORTED = 0, 1, 2, 5
P2P_READ, P2P_WRITE, P2P_NVLINK, P2P_ATOMICS, P2P_PCI = 0, 1, 2, 3, 4
# nvmlNvLinkDeviceType_t (nvml.h).
REMOTE_GPU, REMOTE_SWITCH = 0x00, 0x02
AFFINITY_SCOPE_NODE, AFFINITY_SCOPE_SOCKET = 0, 1


@dataclass(frozen=True)
class _Layout:
    """Where each GPU sits, and what each of its links reaches (by GPU index)."""

    placements: dict[int, Placement]
    links: dict[int, tuple[BusId, ...]]  # link number -> remote bus id, for wired links
    bus_ids: dict[BusId, int]  # a GPU's bus id -> its index


_LAYOUTS: weakref.WeakKeyDictionary[Machine, _Layout] = weakref.WeakKeyDictionary()


def _layout(machine: Machine) -> _Layout:
    layout = _LAYOUTS.get(machine)
    if layout is None:
        scenario = machine.scenario
        bus_ids = {parse_pci_bus_id(g.pci_bus_id): g.index for g in scenario.gpus}
        placements = {}
        if scenario.topology is not None:
            for place in walk(scenario.topology):
                if place.node.kind == "gpu":
                    placements[bus_ids[place.node.address[:3]]] = place  # type: ignore[index]
        links = {g.index: _expand(wiring(g.nvlink_remote, g.nvlink_links, scenario.topology))
                 for g in scenario.gpus}
        layout = _LAYOUTS.setdefault(machine, _Layout(placements, links, bus_ids))  # type: ignore[arg-type]
    return layout


def _expand(wires: tuple[NvLinkWire, ...]) -> tuple[BusId, ...]:
    return tuple(wire.to for wire in wires for _ in range(wire.links))


def level(a: Placement, b: Placement) -> int:
    """nvmlGpuTopologyLevel_t of two functions of the tree (see the module docstring)."""
    if a.host_bridge is not b.host_bridge:
        same = a.host_bridge.numa_node is not None and \
            a.host_bridge.numa_node == b.host_bridge.numa_node
        return NODE if same else SYSTEM
    path_a, path_b = (*a.bridges, a.node.address), (*b.bridges, b.node.address)
    shared = 0
    while shared < min(len(path_a), len(path_b)) and path_a[shared] == path_b[shared]:
        shared += 1
    if shared == 0:
        return HOSTBRIDGE
    return SINGLE if max(len(path_a), len(path_b)) - shared <= 2 else MULTIPLE


def _other(machine: Machine, handle: object) -> GpuDevice | MigDevice | int:
    """The device a second handle argument names, or the return code for it."""
    dev = machine.devices.get(base.handle_value(handle))
    if dev is None:
        return INVALID_ARGUMENT
    if dev.gpu.lost:
        return GPU_IS_LOST
    return dev  # type: ignore[return-value]


def _pair(machine: Machine, dev: Device, handle: object) -> tuple[int, int] | int:
    """The GPU indices of two physical GPU handles, or the return code for them."""
    other = _other(machine, handle)
    if isinstance(other, int):
        return other
    # Unknown: what these calls answer on MIG device handles (NotSupported here).
    if isinstance(dev, MigDevice) or isinstance(other, MigDevice):
        return NOT_SUPPORTED
    return dev.gpu.index, other.index


def _common_ancestor(machine: Machine, dev: Device, handle: object, ref: object) -> int:
    pair = _pair(machine, dev, handle)
    if isinstance(pair, int):
        return pair
    a, b = pair
    # Unknown: the answer for a GPU and itself (nvidia-smi never asks).
    if a == b:
        return INVALID_ARGUMENT
    places = _layout(machine).placements
    if a not in places or b not in places:
        return NOT_SUPPORTED
    ref._obj.value = level(places[a], places[b])  # type: ignore[attr-defined]
    return SUCCESS


def _fill(found: list[GpuDevice], count_ref: object, array: object) -> int:
    """The two-call protocol of nvml.h's GPU sets: the count, then the handles."""
    count = count_ref._obj  # type: ignore[attr-defined]
    if array is None or count.value == 0:
        count.value = len(found)
        return SUCCESS
    if count.value < len(found):
        count.value = len(found)
        return INSUFFICIENT_SIZE
    base.write_handles(array, [gpu.handle for gpu in found])
    count.value = len(found)
    return SUCCESS


def _nearest(machine: Machine, dev: Device, wanted: object, count_ref: object,
             array: object) -> int:
    """GPUs whose common ancestor with this one is at `wanted` or nearer.

    Unknown: whether NVML lists only the GPUs at exactly that level (taken: at it or nearer).
    """
    if isinstance(dev, MigDevice):
        return NOT_SUPPORTED
    places = _layout(machine).placements
    top = base.as_int(wanted)
    if top not in (0, SINGLE, MULTIPLE, HOSTBRIDGE, NODE, SYSTEM):
        return INVALID_ARGUMENT
    if dev.index not in places:
        return NOT_SUPPORTED
    found = [gpu for gpu in machine.gpus if gpu.index != dev.index and gpu.index in places
             and level(places[dev.index], places[gpu.index]) <= top]
    return _fill(found, count_ref, array)


def _gpu_set(machine: Machine, cpu: object, count_ref: object, array: object) -> int:
    """GPUs whose CPU affinity holds this CPU (nvmlSystemGetTopologyGpuSet)."""
    number = base.as_int(cpu)
    found = [gpu for gpu in machine.gpus if not gpu.lost and gpu.spec.cpu_affinity is not None
             and number in gpu.spec.cpu_affinity]
    return _fill(found, count_ref, array)


def nvlink_peers(machine: Machine, a: int, b: int) -> int:
    """Enabled NVLink links of GPU a that reach GPU b, directly or by an NVSwitch both reach."""
    layout = _layout(machine)
    own, theirs = layout.links[a], layout.links[b]
    switches = set(theirs) - set(layout.bus_ids)
    target = next((bus for bus, index in layout.bus_ids.items() if index == b), None)
    return sum(1 for remote in own if remote == target or remote in switches)


def _p2p(machine: Machine, dev: Device, handle: object, index: object, ref: object) -> int:
    """nvmlDeviceGetP2PStatus.

    Unknown, taken from what nvidia-smi's -p2p legend names and public `topo -p2p` outputs
    show (OK throughout on NVLink machines, GNS between GeForce boards): GeForce boards do
    no PCIe peer-to-peer (GPU not supported); elsewhere PCIe peer-to-peer works below one
    NUMA node and not across the socket interconnect (chipset not supported); NVLink peers
    read, write and do atomics over NVLink; PCIe does no peer atomics.
    """
    pair = _pair(machine, dev, handle)
    if isinstance(pair, int):
        return pair
    a, b = pair
    capability = base.as_int(index)
    if capability not in (P2P_READ, P2P_WRITE, P2P_NVLINK, P2P_ATOMICS, P2P_PCI) or a == b:
        return INVALID_ARGUMENT
    places = _layout(machine).placements
    linked = nvlink_peers(machine, a, b) > 0
    if capability == P2P_NVLINK or (linked and capability != P2P_PCI):
        status = P2P_OK if linked else P2P_NOT_SUPPORTED
    elif any("GeForce" in machine.gpus[i].spec.name for i in (a, b)):
        status = P2P_GPU_NOT_SUPPORTED
    elif capability == P2P_ATOMICS:
        status = P2P_NOT_SUPPORTED
    elif a not in places or b not in places:
        return NOT_SUPPORTED
    else:
        apart = level(places[a], places[b]) == SYSTEM
        status = P2P_CHIPSET_NOT_SUPPORTED if apart else P2P_OK
    ref._obj.value = status  # type: ignore[attr-defined]
    return SUCCESS


def _remote(machine: Machine, dev: Device, link: object) -> BusId | int:
    """The bus id an enabled, wired link reaches, or the return code for the link."""
    if isinstance(dev, MigDevice) or dev.spec.nvlink_links is None:
        return NOT_SUPPORTED
    number = base.as_int(link)
    if number >= NVLINK_MAX_LINKS:
        return INVALID_ARGUMENT
    links = _layout(machine).links[dev.index]
    # Unknown: what a disabled or unwired link answers (NotSupported here).
    if number >= min(dev.spec.nvlink_links, len(links)):
        return NOT_SUPPORTED
    return links[number]


def _remote_pci(machine: Machine, dev: Device, link: object, ref: object) -> int:
    remote = _remote(machine, dev, link)
    if isinstance(remote, int):
        return remote
    domain, bus, device = remote
    peer = _layout(machine).bus_ids.get(remote)
    info = ref._obj  # type: ignore[attr-defined]
    info.busIdLegacy = f"{domain:04X}:{bus:02X}:{device:02X}.0".encode()
    info.busId = f"{domain:08X}:{bus:02X}:{device:02X}.0".encode()
    info.domain, info.bus, info.device = domain, bus, device
    # Unknown: an NVSwitch's PCI device id (0 here); a GPU's is its own.
    info.pciDeviceId = 0 if peer is None else machine.gpus[peer].spec.pci_device_id or 0
    return SUCCESS


def _remote_type(machine: Machine, dev: Device, link: object, ref: object) -> int:
    remote = _remote(machine, dev, link)
    if isinstance(remote, int):
        return remote
    gpu = remote in _layout(machine).bus_ids
    ref._obj.value = REMOTE_GPU if gpu else REMOTE_SWITCH  # type: ignore[attr-defined]
    return SUCCESS


def _memory_affinity(machine: Machine, dev: Device, size: object, node_set: object,
                     scope: object) -> int:
    """The GPU's `numa_affinity`, else the NUMA node of its root bus in the PCI tree.
    Unknown: the socket scope (the node's here)."""
    if base.as_int(scope) not in (AFFINITY_SCOPE_NODE, AFFINITY_SCOPE_SOCKET):
        return INVALID_ARGUMENT
    if isinstance(dev, MigDevice):
        return NOT_SUPPORTED
    nodes = dev.spec.numa_affinity
    place = _layout(machine).placements.get(dev.index)
    if nodes is None and place is not None and place.host_bridge.numa_node is not None:
        nodes = (place.host_bridge.numa_node,)
    return NOT_SUPPORTED if nodes is None else base.fill_bits(size, node_set, nodes)


def _cpu_affinity_within(machine: Machine, dev: Device, size: object, cpu_set: object,
                         scope: object) -> int:
    """The GPU's CPU affinity. Unknown: the socket scope (the node's here)."""
    if base.as_int(scope) not in (AFFINITY_SCOPE_NODE, AFFINITY_SCOPE_SOCKET):
        return INVALID_ARGUMENT
    if isinstance(dev, MigDevice) or dev.spec.cpu_affinity is None:
        return NOT_SUPPORTED
    return base.fill_bits(size, cpu_set, dev.spec.cpu_affinity)


SYMBOLS: tuple[Symbol, ...] = (
    Symbol("nvmlDeviceGetTopologyCommonAncestor", "device", _common_ancestor),
    Symbol("nvmlDeviceGetTopologyNearestGpus", "device", _nearest),
    Symbol("nvmlSystemGetTopologyGpuSet", "system", _gpu_set),
    Symbol("nvmlDeviceGetP2PStatus", "device", _p2p),
    Symbol("nvmlDeviceGetNvLinkRemotePciInfo_v2", "device", _remote_pci),
    Symbol("nvmlDeviceGetNvLinkRemoteDeviceType", "device", _remote_type),
    Symbol("nvmlDeviceGetMemoryAffinity", "device", _memory_affinity),
    Symbol("nvmlDeviceGetCpuAffinityWithinScope", "device", _cpu_affinity_within),
)
