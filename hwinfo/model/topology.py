"""The topology matrix `nvidia-smi topo -m` prints, computed from a snapshot.

GPUs against GPUs, RDMA NICs and NVMe drives, in nvidia-smi's words:
- X: the device itself;
- NV#: GPUs joined by # NVLink links (directly, or through NVSwitches both reach);
- PIX: at most one PCIe switch between them (two functions of one device, the ports of a
  NIC, are PIX apart too);
- PXB: several PCIe switches, no host bridge;
- PHB: a PCIe host bridge (the same root bus);
- NODE: the interconnect between host bridges of one NUMA node;
- SYS: the interconnect between NUMA nodes (QPI/UPI, Infinity Fabric).

Between GPUs the PCI word is NVML's (nvmlDeviceGetTopologyCommonAncestor, GpuSystem.pairs);
anything with a NIC or a drive is worded from the PCI tree sysfs shows (model/pci.py), as
nvidia-smi words its NIC cells. Unknown: how nvidia-smi counts NV# between two GPUs that
reach NVSwitches (taken: the links of the row's GPU to switches the column's GPU reaches
too, which gives the NV12 and NV18 of DGX A100 and H100 outputs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwinfo.model.gpu import Gpu, GpuPair
from hwinfo.model.pci import PciDevice
from hwinfo.model.snapshot import Snapshot

# NVML's common-ancestor levels (GpuPair.common_ancestor) in nvidia-smi's words. Unknown:
# the word for "internal" (two GPUs of one board, a Tesla K80); their on-board switch's.
LEVEL_WORDS = {"internal": "PIX", "single": "PIX", "multiple": "PXB", "hostbridge": "PHB",
               "node": "NODE", "system": "SYS"}
SELF = "X"
_ADDRESS = re.compile(r"([0-9a-fA-F]{1,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")


@dataclass
class TopologyDevice:
    """A row and column of the matrix."""

    label: str  # "GPU0", "NIC0", "NVME0"
    kind: str  # "gpu", "nic", "nvme"
    name: str | None  # the GPU's name, the RDMA device (mlx5_0), the NVMe controller (nvme0)
    pci_bus_id: str | None  # as sysfs names it ("0000:07:00.0"); None: not placed
    # A GPU's CPUs and NUMA nodes (NVML's affinity), and its own NUMA node where its memory
    # is one (Grace boards; NVML's NumaNodeId): nvidia-smi's last three columns.
    cpu_affinity: list[int] | None = None
    numa_affinity: list[int] | None = None
    numa_node: int | None = None  # a GPU's own (above); a NIC's or drive's as sysfs says
    model: str | None = None  # an NVMe drive's model


@dataclass
class Topology:
    devices: list[TopologyDevice]
    # matrix[i][j]: the word between devices i and j ("X" on the diagonal); None: not known.
    matrix: list[list[str | None]]
    notes: list[str] = field(default_factory=list)  # why parts are missing


def bus_key(address: str | None) -> tuple[int, int, int, int] | None:
    """A PCI address as a key, whichever way it is written ("00000000:07:00.0" by NVML,
    "0000:07:00.0" by sysfs)."""
    m = None if address is None else _ADDRESS.fullmatch(address)
    return None if m is None else tuple(int(g, 16) for g in m.groups())  # type: ignore[return-value]


def pci_word(a: PciDevice, b: PciDevice) -> str:
    """The word for two functions sysfs places: at most one PCIe switch between them when
    both sit within two steps below the lowest bridge they share (a switch's upstream port,
    its downstream ports, their devices), several switches when deeper, else as far apart
    as their root buses and NUMA nodes are."""
    if a.host_bridge != b.host_bridge:
        return "NODE" if a.numa_node is not None and a.numa_node == b.numa_node else "SYS"
    path_a, path_b = [*a.bridges, a.address], [*b.bridges, b.address]
    shared = 0
    while shared < min(len(path_a), len(path_b)) and path_a[shared] == path_b[shared]:
        shared += 1
    if shared == 0:
        return "PHB"
    return "PIX" if max(len(path_a), len(path_b)) - shared <= 2 else "PXB"


def nvlink_count(row: Gpu, column: Gpu) -> int:
    """Enabled links of `row` that reach `column`, directly or by an NVSwitch it reaches."""
    target = bus_key(column.pci_bus_id)
    switches = {bus_key(link.remote_pci_bus_id) for link in column.nvlinks or ()
                if link.remote_type == "switch"}
    return sum(1 for link in row.nvlinks or ()
               if (link.remote_type == "gpu" and bus_key(link.remote_pci_bus_id) == target)
               or (link.remote_type == "switch" and bus_key(link.remote_pci_bus_id) in switches))


def _gpu_word(row: Gpu, column: Gpu, pair: GpuPair | None) -> str | None:
    links = nvlink_count(row, column)
    if links:
        return f"NV{links}"
    if pair is None or pair.common_ancestor is None:
        return None
    return LEVEL_WORDS.get(pair.common_ancestor)


def _natural(name: str | None) -> list[object]:
    """mlx5_2 before mlx5_10, as nvidia-smi numbers its NICs."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name or "")]


def build_topology(snapshot: Snapshot) -> Topology:
    """The matrix of a snapshot's GPUs, NICs and drives; what it cannot place it says."""
    notes = []
    gpus = [] if snapshot.gpu is None else snapshot.gpu.gpus
    pairs = {} if snapshot.gpu is None else {
        tuple(p.gpus): p for p in snapshot.gpu.pairs or ()}
    if snapshot.gpu is not None and snapshot.gpu.pairs is None and len(gpus) > 1:
        notes.append("GPU pairs not read: the PCI distance between GPUs is not known")
    placed: dict[tuple[int, int, int, int] | None, PciDevice] = {}
    others: list[PciDevice] = []
    if snapshot.pci is None:
        notes.append("PCI tree not read: no NIC or NVMe columns, and no GPU distances to them")
    else:
        for device in snapshot.pci.devices:
            if device.kind == "gpu":
                placed[bus_key(device.address)] = device
            else:
                others.append(device)
    nics = sorted((d for d in others if d.kind == "nic"), key=lambda d: _natural(d.name))
    drives = sorted((d for d in others if d.kind == "nvme"), key=lambda d: _natural(d.name))
    devices = [TopologyDevice(f"GPU{g.index}", "gpu", g.name, _sysfs_name(placed, g),
                              g.cpu_affinity, g.numa_affinity, g.numa_node) for g in gpus]
    if snapshot.pci is not None:
        unplaced = [f"GPU{g.index}" for g in gpus if bus_key(g.pci_bus_id) not in placed]
        if unplaced and others:
            notes.append(f"not in sysfs's PCI tree: {', '.join(unplaced)} (their NIC and "
                         "NVMe cells are not known)")
    pci_of: list[PciDevice | None] = [placed.get(bus_key(g.pci_bus_id)) for g in gpus]
    for prefix, group in (("NIC", nics), ("NVME", drives)):
        for number, device in enumerate(group):
            devices.append(TopologyDevice(f"{prefix}{number}", device.kind, device.name,
                                          device.address, numa_node=device.numa_node,
                                          model=device.model))
            pci_of.append(device)
    matrix: list[list[str | None]] = []
    for i, row in enumerate(devices):
        cells: list[str | None] = []
        for j in range(len(devices)):
            if i == j:
                cells.append(SELF)
            elif i < len(gpus) and j < len(gpus):
                key = (min(gpus[i].index, gpus[j].index), max(gpus[i].index, gpus[j].index))
                cells.append(_gpu_word(gpus[i], gpus[j], pairs.get(key)))
            else:
                a, b = pci_of[i], pci_of[j]
                cells.append(None if a is None or b is None else pci_word(a, b))
        matrix.append(cells)
    return Topology(devices, matrix, notes)


def _sysfs_name(placed: dict[tuple[int, int, int, int] | None, PciDevice], gpu: Gpu) -> str | None:
    device = placed.get(bus_key(gpu.pci_bus_id))
    return None if device is None else device.address
