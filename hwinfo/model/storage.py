"""Disks, software RAID, device-mapper devices and the filesystems on them."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwinfo.model.pcie import PcieLinkStatus

# Disk.kind values: what the medium is, from the kernel's rotational flag and the transport.
# "virtual": a hypervisor's disk (virtio, Xen, Hyper-V), whose rotational flag says nothing of
# what is below it; "ram": a compressed RAM disk (zram).
DISK_KINDS = ("nvme", "ssd", "hdd", "virtual", "ram")


@dataclass
class Disk:
    name: str  # the kernel's name: sda, nvme0n1, vda
    kind: str | None  # one of DISK_KINDS; None when the kernel does not say
    model: str | None
    serial: str | None
    size_bytes: int | None
    rotational: bool | None  # as the kernel says it (queue/rotational)
    # sata, sas, ata, nvme (PCIe), nvme-tcp, nvme-rdma, nvme-fc, usb, virtio, xen, vmbus, mmc,
    # fc, iscsi, spi; None when sysfs does not tell.
    transport: str | None
    removable: bool | None
    # The PCI function the disk is reached through (the NVMe controller, the SATA or SAS HBA).
    pci_address: str | None
    numa_node: int | None
    pcie: PcieLinkStatus | None  # NVMe only: the disk's own link


@dataclass
class RaidMember:
    name: str  # the member block device: sda1, nvme0n1
    state: str | None  # md's words: in_sync, faulty, spare, write_mostly, ... (comma-separated)


@dataclass
class RaidArray:
    """An md (Linux software RAID) array."""

    name: str  # md0, md127
    level: str | None  # raid0, raid1, raid5, raid6, raid10, linear
    size_bytes: int | None
    state: str | None  # md's array_state: clean, active, readonly, inactive, ...
    raid_disks: int | None  # members the array is made for
    degraded_disks: int | None  # of those, missing
    sync_action: str | None  # idle, resync, recover, check, repair, reshape, frozen
    sync_completed_ratio: float | None  # 0..1 while sync_action is not idle; else None
    members: list[RaidMember] = field(default_factory=list)


@dataclass
class MappedDevice:
    """A device-mapper device: an LVM volume, a dm-crypt mapping, a multipath disk."""

    name: str  # dm-0
    mapped_name: str | None  # the name under /dev/mapper: vg0-data, luks-..., mpatha
    kind: str | None  # lvm, crypt, multipath, partition, or the target's uuid prefix
    size_bytes: int | None
    members: list[str] = field(default_factory=list)  # the block devices below it


@dataclass
class FileSystem:
    mount_point: str
    source: str  # the mount's source as the kernel shows it: /dev/nvme0n1p2, nas:/export
    type: str  # ext4, xfs, btrfs, zfs, nfs4, lustre, ...
    # The kernel's name of the block device below it (nvme0n1p2, md127, dm-0); None for
    # network and pooled filesystems.
    device: str | None
    disks: list[str]  # the whole disks it lives on, through partitions, md and dm
    network: bool  # a network or cluster filesystem (NFS, Lustre, BeeGFS, ...)
    read_only: bool | None
    # statfs(2) of the mount point, read only on the machine itself (not below --root), and
    # not available while a network filesystem does not answer.
    size_bytes: int | None
    free_bytes: int | None  # free blocks, root's reserve included
    available_bytes: int | None  # what an unprivileged user can still write, as df shows


@dataclass
class Storage:
    disks: list[Disk] = field(default_factory=list)
    raid_arrays: list[RaidArray] = field(default_factory=list)
    mapped_devices: list[MappedDevice] = field(default_factory=list)
    filesystems: list[FileSystem] = field(default_factory=list)
