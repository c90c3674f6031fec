"""The sysfs a simulated machine's PCI tree shows: written out for the collectors to read.

A scenario's GPUs live below pynvml; its RDMA NICs, NVMe drives and the bridges between them
live in sysfs, which the collectors read through `--root`-style trees (collect/pci.py). So
the simulator writes the part of /sys the tree makes, laid out as the kernel lays it out,
and the collectors read it as they read a real machine's:

    sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/...   a function per directory, nested
        vendor, device, class, numa_node                  below the bridges above it
        infiniband/mlx5_0/, nvme/nvme0/model              a NIC's and a drive's class dirs
    sys/bus/pci/devices/0000:07:00.0 -> ../../../devices/pci0000:00/.../0000:07:00.0
    sys/class/infiniband/mlx5_0 -> ../../devices/pci0000:00/.../infiniband/mlx5_0
    sys/class/nvme/nvme0 -> ../../devices/pci0000:00/.../nvme/nvme0
"""

from __future__ import annotations

import os

from hwinfo.sim.scenario_gpu import parse_pci_bus_id
from hwinfo.sim.scenario_model import Scenario
from hwinfo.sim.scenario_topology import Placement, address_text, walk

# PCI class codes (the PCI SIG's code and ID assignment specification).
_CLASS = {"bridge": 0x060400, "nic": 0x020700, "nvme": 0x010802}
_CLASS_3D, _CLASS_VGA = 0x030200, 0x030000
_VENDOR = {"gpu": 0x10DE, "nic": 0x15B3}  # NVIDIA, Mellanox
# Unknown: the vendor and device ids of the machines' PCIe switches and NVMe drives
# (a scenario names none); those files are left out, as no collector reads them.


def write_sysfs(scenario: Scenario, directory: str) -> None:
    """Write the scenario's PCI tree below `directory` (made by the caller, empty)."""
    if scenario.topology is None:
        return
    gpus = {parse_pci_bus_id(g.pci_bus_id): g for g in scenario.gpus}
    for place in walk(scenario.topology):
        rel = _device_dir(place)
        path = os.path.join(directory, rel)
        os.makedirs(path)
        node = place.node
        numa = place.host_bridge.numa_node
        files = {"numa_node": str(-1 if numa is None else numa)}
        if node.kind == "gpu":
            gpu = gpus[node.address[:3]]
            # Unknown: which boards show as a VGA controller; GeForce boards drive displays.
            files["class"] = f"0x{_CLASS_VGA if 'GeForce' in gpu.name else _CLASS_3D:06x}"
            if gpu.pci_device_id:
                files["device"] = f"0x{gpu.pci_device_id >> 16:04x}"
        else:
            files["class"] = f"0x{_CLASS[node.kind]:06x}"
        if node.kind in _VENDOR:
            files["vendor"] = f"0x{_VENDOR[node.kind]:04x}"
        for name, text in files.items():
            _write(os.path.join(path, name), text)
        devices = os.path.join(directory, "sys", "bus", "pci", "devices")
        _link(devices, address_text(node.address), os.path.join("..", "..", "..", rel[4:]))
        if node.kind in ("nic", "nvme") and node.name is not None:
            kind = "infiniband" if node.kind == "nic" else "nvme"
            own = os.path.join(path, kind, node.name)
            os.makedirs(own)
            if node.model is not None:
                _write(os.path.join(own, "model"), node.model)
            _link(os.path.join(directory, "sys", "class", kind), node.name,
                  os.path.join("..", "..", rel[4:], kind, node.name))


def _device_dir(place: Placement) -> str:
    """sys/devices/pciDDDD:BB/<bridge>/.../<function>, relative to the tree's root."""
    return os.path.join("sys", "devices", place.host_bridge.name,
                        *(address_text(a) for a in place.bridges),
                        address_text(place.node.address))


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


def _link(directory: str, name: str, target: str) -> None:
    os.makedirs(directory, exist_ok=True)
    os.symlink(target, os.path.join(directory, name))
