"""The storage section and the brief's disk line: what each disk is, arrays in trouble, and
filesystems counted as df counts them."""

from __future__ import annotations

import dataclasses

from fixtures.machines import shared_tree

from hwinfo.collect.storage import StorageCollector
from hwinfo.collect.sysfs import Root
from hwinfo.model.pcie import PcieLinkStatus
from hwinfo.model.storage import Disk, FileSystem, RaidArray, RaidMember, Storage
from hwinfo.render.text.brief import storage_text
from hwinfo.render.text.storage import render_storage, used_share
from hwinfo.render.text.style import Style

PLAIN = Style(color=False)
GIB = 1 << 30
DISK = Disk("vda", "virtual", None, None, 256 * GIB, True, "virtio", False, "0000:00:02.0",
            None, None)


def _fields(storage: Storage | None) -> dict[str, str]:
    """Each field's label and value, continuation lines joined."""
    found: dict[str, str] = {}
    last = ""
    for line in render_storage(storage, PLAIN).splitlines()[1:]:
        if line.startswith(" " * 17):
            found[last] += " " + line.strip()
        elif line.strip():
            last, _, value = line.strip().partition("  ")
            found[last] = value.strip()
    return found


def test_the_gpu_node_s_storage_fits_80_columns() -> None:
    storage = StorageCollector(Root(shared_tree("x86-2s-smt"))).collect()
    text = render_storage(storage, PLAIN)
    assert max(len(line) for line in text.splitlines()) <= 80
    fields = _fields(storage)
    assert fields["md127"] == "RAID raid1 · 2.73 TiB · clean · check 90% · of sda, sdb"
    assert fields["/raid"] == "xfs on md127 (HDD) · size not available"
    assert fields["/datasets"] == "nfs4 on nas01:/export/data sets · size not available · read-only"


def test_a_virtual_disk_says_what_the_kernel_says_of_it() -> None:
    assert _fields(Storage(disks=[DISK]))["vda"] == (
        "virtual disk · virtio · 256 GiB · the kernel says rotational")
    empty = dataclasses.replace(DISK, name="zram0", kind="ram", size_bytes=0, transport=None)
    assert _fields(Storage(disks=[empty]))["zram0"] == "RAM disk · empty"


def test_faults_are_said() -> None:
    narrow = Disk("nvme0n1", "nvme", "M", "S", GIB, False, "nvme", False, "0000:01:00.0", 0,
                  PcieLinkStatus(4, 4, 2, 4))
    array = RaidArray("md0", "raid1", GIB, "active", 2, 1, "recover", 0.25,
                      [RaidMember("sdb1", "in_sync"), RaidMember("sdc1", "faulty")])
    fields = _fields(Storage(disks=[narrow], raid_arrays=[array]))
    assert "PCIe gen4 x2 of gen4 x4 (degraded)" in fields["nvme0n1"]
    assert fields["md0"] == ("RAID raid1 · 1.00 GiB · active · degraded: 1 of 2 disks missing · "
                             "recover 25% · of sdb1, sdc1 (faulty)")
    line = storage_text(Storage(disks=[narrow], raid_arrays=[array]), PLAIN)
    assert line == "1 × NVMe 1.00 GiB · md0 degraded"


def _fs(size: int | None, free: int | None, available: int | None) -> FileSystem:
    return FileSystem("/", "/dev/vda", "ext4", "vda", ["vda"], False, False, size, free,
                      available)


def test_used_is_counted_as_df_counts_it() -> None:
    # df's Use%: used over used plus what users can still write (root's reserve left out).
    assert used_share(_fs(100, 40, 30)) == 60 / 90
    assert used_share(_fs(None, None, None)) is None
    assert used_share(_fs(100, 140, 0)) is None  # more free than there is: no share
    assert used_share(_fs(0, 0, 0)) is None
    line = storage_text(Storage(disks=[DISK], filesystems=[_fs(100, 40, 30)]), PLAIN)
    assert line == "1 × virtual disk 256 GiB · fullest / 67%"


def test_not_read_is_not_available_and_none_is_none() -> None:
    assert render_storage(None, PLAIN).splitlines()[1].strip() == (
        "storage information is not available")
    assert _fields(Storage()) == {"Disks": "none"}
    assert storage_text(None, PLAIN) == "not available"


def test_a_document_of_an_hwinfo_that_read_no_disks_has_no_storage_section() -> None:
    from health.factories import make_snapshot

    from hwinfo.model.sources import SourceError, SourceState
    from hwinfo.render.text.report import render_text

    snapshot = make_snapshot()  # as `report --from` an older daemon loads it: no storage
    assert "\nStorage\n" not in render_text(snapshot, PLAIN)
    snapshot.sources = [SourceState("storage", "failed", None, None, "no sys/block")]
    snapshot.errors = [SourceError("storage", "no sys/block")]
    text = render_text(snapshot, PLAIN)
    assert "\nStorage\n  storage information is not available\n" in text
    assert text.rstrip().endswith("storage: collection failed: no sys/block")
