"""The storage source: disks, md arrays, device-mapper devices and the filesystems on them.

What a disk is (model, serial, transport, where it sits) is read once (collect/inventory.py);
sizes, links, array states, mounts and free space are read every sample.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from hwinfo.collect import block, mounts, pci
from hwinfo.collect.errors import NothingRead
from hwinfo.collect.inventory import Inventory
from hwinfo.collect.sysfs import Root, is_live
from hwinfo.model.storage import Disk, FileSystem, Storage


class _Devices(NamedTuple):
    """The block devices of one listing of sys/block, by what they are."""

    disks: list[tuple[Disk, pci.PciFunction | None]]
    raid: list[str]
    mapped: list[str]


def read_devices(root: Root, names: list[str]) -> _Devices:
    exists = root.exists
    return _Devices(
        disks=[block.read_disk(root, n) for n in names if block.is_disk(root, n)],
        raid=[n for n in names if exists(f"{block.BLOCK_DIR}/{n}/md")],
        mapped=[n for n in names if exists(f"{block.BLOCK_DIR}/{n}/dm")],
    )


class _Placed(NamedTuple):
    """A data mount and what is below it, worked out once per mount table."""

    mount: mounts.Mount
    device: str | None
    disks: list[str]


class StorageCollector:
    def __init__(self, root: Root, usage: mounts.MountUsage | None = None) -> None:
        self.root = root
        # A fixture tree's mount points are not mounted here: its sizes are not available.
        self.usage = usage if usage is not None else mounts.MountUsage() if is_live(root) else None
        self._devices = Inventory(lambda names: read_devices(root, names))
        # The data mounts and their disks, for one mount table and one device inventory.
        self._placed_for: tuple[str, _Devices] | None = None
        self._placed: list[_Placed] = []

    def collect(self) -> Storage:
        root = self.root
        if not root.exists(block.BLOCK_DIR):
            raise NothingRead(f"nothing could be read below {root.path}")
        devices = self._devices.of(root.listdir(block.BLOCK_DIR))
        return Storage(
            disks=[dataclasses.replace(disk, size_bytes=block.size_bytes(
                       root, f"{block.BLOCK_DIR}/{disk.name}"), pcie=pci.link(root, function))
                   for disk, function in devices.disks],
            raid_arrays=[block.read_raid(root, name) for name in devices.raid],
            mapped_devices=[block.read_mapped(root, name) for name in devices.mapped],
            filesystems=self._filesystems(devices),
        )

    def _filesystems(self, devices: _Devices) -> list[FileSystem]:
        text = self.root.read_text(mounts.MOUNTINFO)
        if text is None:
            return []
        if self._placed_for is None or self._placed_for[0] != text or \
                self._placed_for[1] is not devices:
            self._placed_for, self._placed = (text, devices), self._place(
                mounts.parse_mountinfo(text))
        usage = self.usage.read(
            [p.mount.mount_point for p in self._placed if p.mount.type not in mounts.NETWORK_TYPES],
            [p.mount.mount_point for p in self._placed if p.mount.type in mounts.NETWORK_TYPES],
        ) if self.usage else {}
        found = []
        for placed in self._placed:
            mount, used = placed.mount, usage.get(placed.mount.mount_point)
            found.append(FileSystem(
                mount_point=mount.mount_point,
                source=mount.source,
                type=mount.type,
                device=placed.device,
                disks=list(placed.disks),
                network=mount.type in mounts.NETWORK_TYPES,
                read_only=mount.read_only,
                size_bytes=used.size_bytes if used else None,
                free_bytes=used.free_bytes if used else None,
                available_bytes=used.available_bytes if used else None,
            ))
        return found

    def _place(self, table: list[mounts.Mount]) -> list[_Placed]:
        placed = []
        for mount in table:
            network = mount.type in mounts.NETWORK_TYPES
            device = None if network else mounts.block_device(self.root, mount)
            if mounts.is_data(mount, device):
                disks = mounts.whole_disks(self.root, device) if device else []
                placed.append(_Placed(mount, device, disks))
        return placed
