"""Block devices from sys/block: disks, md RAID arrays and device-mapper devices.

What each attribute means is in the kernel's Documentation/ABI/testing/sysfs-block (size in
512-byte sectors whatever the disk's own sector size, queue/rotational, removable, hidden),
Documentation/admin-guide/md.rst (md/level, md/array_state, md/dev-*/state, md/sync_*) and
sysfs-class-nvme (a controller's model, serial and transport). Which transport a SCSI disk is
reached over is told by which SCSI transport class its host belongs to, as lsblk tells it.
"""

from __future__ import annotations

import re

from hwinfo.collect import pci
from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal
from hwinfo.model.storage import Disk, MappedDevice, RaidArray, RaidMember

BLOCK_DIR = "sys/block"
SECTOR_BYTES = 512  # the unit of every size file below sys/block (sysfs-block)

# Majors that are not disks: RAM disks (1, lsblk leaves them out too) and loop devices (7).
_NOT_DISKS = {1, 7}
# SCSI peripheral types that are disks: direct access (0) and simplified direct access (14);
# a CD-ROM (5) or a BMC's virtual media is not.
_DISK_TYPES = {"0", "14"}
_HCTL = re.compile(r"(\d{1,9}):\d{1,9}:\d{1,9}:\d{1,12}")
_NVME_CONTROLLER = re.compile(r"nvme\d{1,6}")
# A SCSI host's transport class (sys/class/<class>/hostN exists), in lsblk's order of asking.
_SCSI_CLASSES = (("spi_host", "spi"), ("fc_host", "fc"), ("sas_host", "sas"),
                 ("iscsi_host", "iscsi"))
# Buses of hypervisors: the guest's rotational flag tells nothing of the disks below them.
_VIRTUAL_TRANSPORTS = {"virtio", "xen", "vmbus"}
# The prefix of a device-mapper uuid names who made it (dm/uuid, as lsblk reads it).
# kpartx names its partitions' part1-, part2-, ...
_DM_KINDS = {"LVM": "lvm", "CRYPT": "crypt", "mpath": "multipath"}


def major(root: Root, name: str) -> int | None:
    dev = root.attribute(f"{BLOCK_DIR}/{name}/dev")
    return decimal(dev.partition(":")[0]) if dev else None


def size_bytes(root: Root, rel: str) -> int | None:
    """A block device's size; rel is its directory (sys/block/sda, sys/class/block/sda1)."""
    sectors = root.attribute(f"{rel}/size")
    value = None if sectors is None else decimal(sectors)
    return None if value is None else value * SECTOR_BYTES


def _flag(root: Root, rel: str) -> bool | None:
    value = root.attribute(rel)
    return {"0": False, "1": True}.get(value or "")


def is_disk(root: Root, name: str) -> bool:
    """A whole disk: not md, dm, a loop or RAM disk, a CD-ROM, or a hidden NVMe path device."""
    base = f"{BLOCK_DIR}/{name}"
    if name.startswith(("md", "dm-")) and (root.exists(f"{base}/md") or root.exists(f"{base}/dm")):
        return False
    if name.startswith(("loop", "ram")) or major(root, name) in _NOT_DISKS:
        return False
    if root.attribute(f"{base}/hidden") == "1":
        return False
    scsi_type = root.attribute(f"{base}/device/type")
    return scsi_type is None or scsi_type in _DISK_TYPES


def _nvme_controllers(root: Root, name: str) -> list[str]:
    """An NVMe namespace's controllers: its device, or with native multipath the controllers
    its subsystem links to (the namespace then lives under devices/virtual/nvme-subsystem)."""
    device = root.resolve(f"{BLOCK_DIR}/{name}/device")
    if device is None:
        return []
    if root.exists(f"{device}/transport"):
        return [device]
    return [path for entry in root.listdir(device) if _NVME_CONTROLLER.fullmatch(entry)
            and (path := root.resolve(f"{device}/{entry}")) is not None]


def _scsi_transport(root: Root, name: str, path: str) -> str | None:
    hctl = _HCTL.fullmatch(root.link_name(f"{BLOCK_DIR}/{name}/device") or "")
    if hctl is None:
        return None
    host = f"host{hctl.group(1)}"
    for scsi_class, transport in _SCSI_CLASSES:
        if root.exists(f"sys/class/{scsi_class}/{host}"):
            return transport
    if root.exists(f"{BLOCK_DIR}/{name}/device/sas_device"):
        return "sas"
    if "/usb" in path:
        return "usb"
    driver = root.attribute(f"sys/class/scsi_host/{host}/proc_name") or ""
    if driver.startswith(("ahci", "sata")):
        return "sata"
    if driver == "storvsc":
        return "vmbus"
    return "ata" if "ata" in driver else None


def transport(root: Root, name: str, path: str | None, controllers: list[str]) -> str | None:
    """How the disk is reached; `path` is its resolved directory, `controllers` its NVMe ones."""
    if controllers:
        kind = root.attribute(f"{controllers[0]}/transport") or "pcie"
        return "nvme" if kind == "pcie" else f"nvme-{kind}"
    parts = (path or "").split("/")
    if any(p.startswith("virtio") for p in parts):  # virtio-blk, and disks of virtio-scsi
        return "virtio"
    if any(p.startswith("vbd-") for p in parts):
        return "xen"
    if name.startswith("mmcblk"):
        return "mmc"
    return _scsi_transport(root, name, path or "")


def kind(name: str, how: str | None, rotational: bool | None) -> str | None:
    """What the disk is (model/storage.py DISK_KINDS), from its transport `how`."""
    if name.startswith("zram"):
        return "ram"
    if how in _VIRTUAL_TRANSPORTS:
        return "virtual"
    if how is not None and how.startswith("nvme"):
        return "nvme"
    return None if rotational is None else "hdd" if rotational else "ssd"


def _vpd_serial(data: bytes | None) -> str | None:
    """The unit serial number VPD page (0x80) a SCSI disk returns, as sysfs keeps it (SPC-4)."""
    if data is None or len(data) < 4 or data[1] != 0x80:
        return None
    length = int.from_bytes(data[2:4], "big")
    return data[4:4 + length].decode("ascii", errors="replace").strip(" \x00") or None


def _ata_string(data: bytes) -> str | None:
    """An ATA IDENTIFY string: its bytes are swapped in each 16-bit word (ACS-4)."""
    swapped = b"".join(data[i + 1:i + 2] + data[i:i + 1] for i in range(0, len(data) - 1, 2))
    return swapped.decode("ascii", errors="replace").strip(" \x00") or None


def ata_identity(data: bytes | None) -> tuple[str | None, str | None]:
    """(model, serial) from the ATA Information VPD page (0x89, SAT-4), which holds the disk's
    IDENTIFY DEVICE data from byte 60: whole, where the SCSI model libata makes of it keeps
    only 16 characters ("ST4000NM000A-2HZ" for a ST4000NM000A-2HZ100)."""
    if data is None or len(data) < 572 or data[1] != 0x89:
        return None, None
    identify = data[60:572]
    return _ata_string(identify[54:94]), _ata_string(identify[20:40])


def serial(root: Root, name: str, controllers: list[str]) -> str | None:
    base = f"{BLOCK_DIR}/{name}"
    for rel in (f"{base}/device/serial", f"{base}/serial",
                *(f"{c}/serial" for c in controllers)):
        if (found := root.attribute(rel)) is not None:
            return found
    return _vpd_serial(root.attribute_bytes(f"{base}/device/vpd_pg80"))


def read_disk(root: Root, name: str) -> tuple[Disk, pci.PciFunction | None]:
    """A disk's inventory (what does not change while it is plugged in), and the PCI function
    whose link is the disk's own (an NVMe disk's); its size and that link change, and are read
    every sample by the caller."""
    base = f"{BLOCK_DIR}/{name}"
    path = root.resolve(base)
    controllers = _nvme_controllers(root, name) if name.startswith("nvme") else []
    function = pci.function_of(path) or pci.function_of(controllers[0] if controllers else None)
    how = transport(root, name, path, controllers)
    rotational = _flag(root, f"{base}/queue/rotational")
    ata_model, ata_serial = ata_identity(root.attribute_bytes(f"{base}/device/vpd_pg89")) \
        if how in ("sata", "ata", "usb", "sas") else (None, None)
    disk = Disk(
        name=name,
        kind=kind(name, how, rotational),
        model=ata_model or root.attribute(f"{base}/device/model")
        or root.attribute(f"{base}/device/name"),
        serial=ata_serial or serial(root, name, controllers),
        size_bytes=None,
        rotational=rotational,
        transport=how,
        removable=_flag(root, f"{base}/removable"),
        pci_address=function.address if function else None,
        numa_node=pci.numa_node(root, function),
        pcie=None,
    )
    return disk, function if disk.kind == "nvme" else None


def members(root: Root, rel: str) -> list[str]:
    """The block devices below a stacked one (its slaves/ directory)."""
    return root.listdir(f"{rel}/slaves")


def read_raid(root: Root, name: str) -> RaidArray:
    base = f"{BLOCK_DIR}/{name}"
    md = f"{base}/md"
    action = root.attribute(f"{md}/sync_action")
    return RaidArray(
        name=name,
        level=root.attribute(f"{md}/level"),
        size_bytes=size_bytes(root, base),
        state=root.attribute(f"{md}/array_state"),
        raid_disks=_count(root.attribute(f"{md}/raid_disks")),
        degraded_disks=_count(root.attribute(f"{md}/degraded")),
        sync_action=action,
        sync_completed_ratio=None if action in (None, "idle") else
        _completed(root.attribute(f"{md}/sync_completed")),
        members=[RaidMember(member, root.attribute(f"{md}/dev-{member}/state"))
                 for member in members(root, base)],
    )


def _count(text: str | None) -> int | None:
    return None if text is None else decimal(text)


def _completed(text: str | None) -> float | None:
    """md's sync_completed, "done / total" sectors; None for "none" or anything else."""
    done, _, total = (text or "").partition(" / ")
    done_sectors, total_sectors = decimal(done), decimal(total)
    if done_sectors is None or not total_sectors or done_sectors > total_sectors:
        return None
    return done_sectors / total_sectors


def read_mapped(root: Root, name: str) -> MappedDevice:
    base = f"{BLOCK_DIR}/{name}"
    prefix = (root.attribute(f"{base}/dm/uuid") or "").partition("-")[0]
    if prefix.startswith("part") and decimal(prefix[4:]) is not None:
        prefix = "partition"
    return MappedDevice(
        name=name,
        mapped_name=root.attribute(f"{base}/dm/name"),
        kind=_DM_KINDS.get(prefix, prefix.lower()) or None,
        size_bytes=size_bytes(root, base),
        members=members(root, base),
    )
