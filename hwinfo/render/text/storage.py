"""The storage section: disks, RAID arrays, device-mapper devices and filesystems."""

from __future__ import annotations

from hwinfo.escape import printable_copy
from hwinfo.model.storage import Disk, FileSystem, MappedDevice, RaidArray, Storage
from hwinfo.render.text.layout import Section
from hwinfo.render.text.pcie import link_text
from hwinfo.render.text.style import Style
from hwinfo.units import NA, or_na, percent, size

# How the report names each Disk.kind.
KIND_NAMES = {"nvme": "NVMe", "ssd": "SSD", "hdd": "HDD", "virtual": "virtual disk",
              "ram": "RAM disk"}
_SEP = " · "


def kind_name(kind: str | None) -> str:
    return KIND_NAMES.get(kind or "", kind or "disk")


def _disk(disk: Disk, style: Style) -> str:
    parts = [kind_name(disk.kind)]
    # NVMe over PCIe says its transport in its kind already.
    if disk.transport and disk.transport != "nvme":
        parts.append(disk.transport)
    parts.append("empty" if disk.size_bytes == 0 else or_na(disk.size_bytes, size))
    if disk.kind == "virtual" and disk.rotational is not None:
        parts.append("the kernel says " + ("rotational" if disk.rotational else "non-rotational"))
    if disk.model:
        parts.append(disk.model)
    if disk.serial:
        parts.append(f"serial {disk.serial}")
    if disk.pcie is not None:
        parts.append(link_text(disk.pcie, style))
    if disk.numa_node is not None:
        parts.append(f"NUMA {disk.numa_node}")
    if disk.removable:
        parts.append("removable")
    return _SEP.join(parts)


def _raid(array: RaidArray, style: Style) -> str:
    parts = [f"RAID {array.level or NA}", or_na(array.size_bytes, size), array.state or NA]
    if array.degraded_disks:
        parts.append(style.bad(f"degraded: {array.degraded_disks} of "
                               f"{or_na(array.raid_disks, str)} disks missing"))
    if array.sync_action and array.sync_action != "idle":
        done = array.sync_completed_ratio
        parts.append(array.sync_action + ("" if done is None else f" {percent(done)}"))
    members = [m.name if m.state in (None, "in_sync") else f"{m.name} ({m.state})"
               for m in array.members]
    parts.append("of " + (", ".join(members) or NA))
    return _SEP.join(parts)


def _mapped(device: MappedDevice) -> str:
    parts = [f"{device.kind or 'device-mapper'} {device.mapped_name or ''}".rstrip(),
             or_na(device.size_bytes, size)]
    parts.append("on " + (", ".join(device.members) or NA))
    return _SEP.join(parts)


def below(fs: FileSystem, disks: dict[str, Disk]) -> str:
    """What a filesystem sits on: "nvme0n1p2 (NVMe)", "md127 (HDD)", "nas:/export"."""
    if fs.network or fs.device is None:
        return fs.source
    kinds = sorted({kind_name(disks[d].kind) for d in fs.disks if d in disks})
    return fs.device + (f" ({', '.join(kinds)})" if kinds else "")


def used_share(fs: FileSystem) -> float | None:
    """How full a filesystem is, as df's Use% counts it: used over used plus what an
    unprivileged user may still write (root's reserve left out)."""
    if fs.size_bytes is None or fs.free_bytes is None or fs.available_bytes is None:
        return None
    used = fs.size_bytes - fs.free_bytes
    whole = used + fs.available_bytes
    return used / whole if whole > 0 and used >= 0 else None


def _filesystem(fs: FileSystem, disks: dict[str, Disk]) -> str:
    parts = [f"{fs.type} on {below(fs, disks)}"]
    if fs.size_bytes is None:
        parts.append("size not available")
    else:
        share = used_share(fs)
        parts += [size(fs.size_bytes), f"{or_na(fs.available_bytes, size)} available"
                  + ("" if share is None else f" ({percent(share)} used)")]
    if fs.read_only:
        parts.append("read-only")
    return _SEP.join(parts)


def render_storage(storage: Storage | None, style: Style) -> str:
    storage = printable_copy(storage)
    section = Section("Storage", style)
    if storage is None:
        return section.unavailable("storage")
    for disk in storage.disks:
        section.field(disk.name, _disk(disk, style))
    for array in storage.raid_arrays:
        section.field(array.name, _raid(array, style))
    for device in storage.mapped_devices:
        section.field(device.name, _mapped(device))
    if not (storage.disks or storage.raid_arrays or storage.mapped_devices):
        section.field("Disks", "none")
    disks = {d.name: d for d in storage.disks}
    if storage.filesystems:
        section.line("Filesystems")
        for fs in storage.filesystems:
            section.field(fs.mount_point, _filesystem(fs, disks), indent=2)
    return section.render()
