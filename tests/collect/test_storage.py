"""The storage source: fixture servers read to the byte, hostile trees, and this machine's
disks and filesystems as lsblk and findmnt see them."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import require_tool
from fixtures.machines import MACHINES, shared_tree, write_tree

from hwinfo.collect import block, mounts
from hwinfo.collect.errors import NothingRead
from hwinfo.collect.inventory import REFRESH_SECONDS, Inventory
from hwinfo.collect.storage import StorageCollector
from hwinfo.collect.sysfs import ATTRIBUTE_LIMIT_BYTES, Root
from hwinfo.model.pcie import PcieLinkStatus
from hwinfo.model.storage import RaidMember, Storage


def _storage(machine: str) -> Storage:
    return StorageCollector(Root(shared_tree(machine))).collect()


def test_the_gpu_node_s_disks_are_what_their_dumps_say() -> None:
    disks = {d.name: d for d in _storage("x86-2s-smt").disks}
    # The hidden multipath path devices, the loop device and md and dm are no disks.
    assert list(disks) == ["nvme0n1", "nvme1n1", "sda", "sdb"]
    assert [(d.kind, d.transport, d.model, d.serial, d.size_bytes, d.rotational) for d in
            disks.values()] == [
        ("nvme", "nvme", "INTEL SSDPE2MX012T7", "BTPF752302HZ1P2NGN", 1_200_243_695_616, False),
        ("nvme", "nvme", "WUS5EA138ESP7E3", "23181L900125", 3_840_755_982_336, False),
        # The whole ATA model from VPD page 0x89, not the 16 characters of the SCSI model.
        ("hdd", "sata", "ST3000NM0005-1V410N", "ZC1AD5QP", 3_000_592_982_016, True),
        ("hdd", "sata", "ST4000NM000A-2HZ100", "WS20FYYN", 4_000_787_030_016, True),
    ]
    # NVMe disks through their controllers (native multipath); SATA disks through the HBA.
    assert [(d.pci_address, d.numa_node, d.pcie) for d in disks.values()] == [
        ("0000:16:00.0", 0, PcieLinkStatus(3, 3, 4, 4)),
        ("0000:98:00.0", 1, PcieLinkStatus(4, 4, 4, 4)),
        ("0000:00:17.0", 0, None),
        ("0000:00:17.0", 0, None),
    ]


def test_md_and_device_mapper_are_what_they_are() -> None:
    storage = _storage("x86-2s-smt")
    (array,) = storage.raid_arrays
    assert (array.name, array.level, array.state, array.raid_disks, array.degraded_disks,
            array.sync_action) == ("md127", "raid1", "clean", 2, 0, "check")
    # The smaller member (sda) less mdadm's 128 MiB data offset.
    assert array.size_bytes == 3_000_592_982_016 - (128 << 20)
    assert array.sync_completed_ratio == 5280104192 / 5860271024
    assert array.members == [RaidMember("sda", "in_sync"), RaidMember("sdb", "in_sync")]
    (volume,) = storage.mapped_devices
    assert (volume.name, volume.mapped_name, volume.kind, volume.members) == (
        "dm-0", "vg_scratch-lv_scratch", "lvm", ["nvme1n1"])
    assert volume.size_bytes == 7501471744 * 512


def test_filesystems_of_real_devices_and_where_their_data_sits() -> None:
    found = {(f.mount_point, f.type, f.source, f.device, tuple(f.disks), f.network, f.read_only)
             for f in _storage("x86-2s-smt").filesystems}
    # Not /proc, /sys, /dev, /run, the snap on loop0, Docker's overlay or a bind-mounted file.
    assert found == {
        ("/", "ext4", "/dev/nvme0n1p2", "nvme0n1p2", ("nvme0n1",), False, False),
        ("/boot/efi", "vfat", "/dev/nvme0n1p1", "nvme0n1p1", ("nvme0n1",), False, False),
        ("/raid", "xfs", "/dev/md127", "md127", ("sda", "sdb"), False, False),
        ("/scratch", "xfs", "/dev/mapper/vg_scratch-lv_scratch", "dm-0", ("nvme1n1",), False,
         False),
        ("/datasets", "nfs4", "nas01:/export/data sets", None, (), True, True),
    }


def test_below_root_sizes_are_not_available_never_zero() -> None:
    # A fixture tree's mount points are not mounted on this machine: statfs would measure
    # this machine's directories, so nothing is measured.
    for fs in _storage("x86-2s-smt").filesystems:
        assert fs.size_bytes is None and fs.free_bytes is None and fs.available_bytes is None


def test_a_kernel_without_nvme_multipath() -> None:
    disks = _storage("arm64-server").disks
    assert [(d.name, d.model, d.serial, d.size_bytes, d.pci_address, d.numa_node, d.pcie)
            for d in disks] == [
        ("nvme0n1", "Amazon Elastic Block Store", "vol01324f611e2463981", 8 << 30,
         "0000:00:04.0", None, None),  # numa_node -1: not known
        ("nvme1n1", "Amazon Elastic Block Store", "vol01234567890abcdef", 100 << 30,
         "0000:00:1f.0", None, None),
    ]


def test_no_sys_block_is_nothing_read(tmp_path: Path) -> None:
    with pytest.raises(NothingRead, match="nothing could be read below"):
        StorageCollector(Root(tmp_path)).collect()
    (tmp_path / "sys" / "block").mkdir(parents=True)
    assert StorageCollector(Root(tmp_path)).collect() == Storage()  # a diskless node


def _disk(tmp_path: Path, **files: str | bytes) -> Root:
    """A tree with one disk sdq whose files (below its directory) are `files`."""
    disk = tmp_path / "sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0"
    (disk / "block/sdq").mkdir(parents=True)
    (tmp_path / "sys/block").mkdir(parents=True)
    (tmp_path / "sys/block/sdq").symlink_to("../devices/pci0000:00/0000:00:17.0/ata1/host0/"
                                            "target0:0:0/0:0:0:0/block/sdq")
    (disk / "block/sdq/device").symlink_to("../../../0:0:0:0")
    for rel, content in files.items():
        path = disk / "block/sdq" / rel.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return Root(tmp_path)


def test_a_missing_attribute_is_not_available(tmp_path: Path) -> None:
    (disk,) = StorageCollector(_disk(tmp_path, size="100\n")).collect().disks
    assert disk.size_bytes == 51200
    assert (disk.kind, disk.model, disk.serial, disk.rotational, disk.transport,
            disk.removable, disk.numa_node) == (None,) * 7


def test_hostile_attributes_cost_only_themselves(tmp_path: Path) -> None:
    root = _disk(tmp_path, size="٣\n", queue__rotational="0\n",
                 device__model=b"caf\xe9 \x1b[31m\n",
                 device__vpd_pg80=bytes(range(256)) * 3,  # no page 0x80 header
                 device__vpd_pg89=b"\x00\x89" + b"\xff" * 100)  # shorter than the page
    disk_dir = Path(root.file("sys/block/sdq"))
    os.mkfifo(disk_dir / "removable")  # no writer: a plain read would wait for ever
    (disk_dir / "device" / "name").write_bytes(b"x" * (ATTRIBUTE_LIMIT_BYTES + 1))
    (disk_dir / "device" / "serial").symlink_to("serial")  # a link loop
    (disk,) = StorageCollector(root).collect().disks
    assert disk.size_bytes is None  # an Arabic-Indic digit is no sector count
    assert (disk.kind, disk.removable, disk.serial) == ("ssd", None, None)
    assert disk.model == "caf\udce9 \x1b[31m"  # kept as read; each output escapes it
    (model_file := disk_dir / "device" / "model").unlink()
    model_file.symlink_to("name")  # past a page: no sysfs attribute is that long
    (disk,) = StorageCollector(root).collect().disks
    assert disk.model is None


@pytest.mark.parametrize("text", ["none", "9 / 3", "1 / 0", "", "x / y", "5 /  10"])
def test_a_sync_completed_no_md_writes_is_not_a_ratio(text: str) -> None:
    assert block._completed(text) is None


def test_stacked_devices_in_a_loop_end(tmp_path: Path) -> None:
    for name, below in (("md0", "md1"), ("md1", "md0")):
        (tmp_path / "sys/class/block" / name / "slaves" / below).mkdir(parents=True)
    assert mounts.whole_disks(Root(tmp_path), "md0") == ["md0"]


def test_mountinfo_lines_no_kernel_writes_are_left_out() -> None:
    text = """\
garbage
1 2 3
36 35 98:0 / /mnt - ext3
36 35 x:y / /mnt\\040two rw - ext3 /dev/sdz rw
36 35 8:1 / /a\\134b rw shared:1 master:2 - ext4 /dev/sda1 rw
"""  # the third has no source after the separator
    assert [(m.mount_point, m.device_number, m.source) for m in mounts.parse_mountinfo(text)] == [
        ("/mnt two", None, "/dev/sdz"), ("/a\\b", (8, 1), "/dev/sda1")]


def test_inventory_is_read_again_when_devices_change_or_it_is_old() -> None:
    now, reads = [0.0], []

    def read(names: list[str]) -> list[str]:
        reads.append(names)
        return names

    inventory = Inventory(read, clock=lambda: now[0])
    inventory.of(["sda"])
    inventory.of(["sda"])
    now[0] = REFRESH_SECONDS - 1
    inventory.of(["sda"])
    assert reads == [["sda"]]
    inventory.of(["sda", "sdb"])
    now[0] += REFRESH_SECONDS
    inventory.of(["sda", "sdb"])
    assert reads == [["sda"], ["sda", "sdb"], ["sda", "sdb"]]


def test_a_disk_s_model_is_read_once_its_size_every_sample(tmp_path: Path) -> None:
    root = Root(write_tree(MACHINES["arm64-server"], tmp_path))
    collector = StorageCollector(root)
    collector.collect()
    disk = Path(root.file("sys/block/nvme1n1"))
    (disk / "size").write_text("419430400\n")  # the volume grown to 200 GiB
    (disk / "device" / "model").write_text("changed\n")
    (grown, *_) = [d for d in collector.collect().disks if d.name == "nvme1n1"]
    assert grown.size_bytes == 200 << 30 and grown.model == "Amazon Elastic Block Store"


def test_a_statfs_that_hangs_costs_its_mount_only() -> None:
    release, returned, calls = threading.Event(), threading.Event(), []

    def read(point: str) -> mounts.Usage:
        calls.append(point)
        if point == "/nfs":
            release.wait(60)  # a server that does not answer
            returned.set()
        return mounts.Usage(100, 50, 40)

    usage = mounts.MountUsage(deadline_seconds=0.5, read=read)
    remote = ["/home", "/nfs", "/data"]
    assert usage.read(["/"], remote) == {"/": mounts.Usage(100, 50, 40),
                                         "/home": mounts.Usage(100, 50, 40)}
    # Not asked again while its call hangs; the others are.
    assert set(usage.read(["/"], remote)) == {"/", "/home", "/data"}
    assert calls.count("/nfs") == 1
    release.set()
    assert returned.wait(60)
    found = {}
    for _ in range(100):  # its thread marks it answering just after the call returns
        found = usage.read([], ["/nfs"])
        if found:
            break
        threading.Event().wait(0.05)
    assert found == {"/nfs": mounts.Usage(100, 50, 40)}


def _lsblk() -> dict[str, dict[str, object]]:
    done = subprocess.run([require_tool("lsblk"), "-J", "-b", "-d", "-o", "NAME,SIZE,TYPE,ROTA"],
                          capture_output=True, text=True, check=True, timeout=60)
    return {d["name"]: d for d in json.loads(done.stdout)["blockdevices"]}


def test_every_disk_lsblk_lists_with_its_size() -> None:
    before = _lsblk()
    storage = StorageCollector(Root("/")).collect()
    after = _lsblk()
    ours = {d.name: d for d in storage.disks}
    # Devices seen by lsblk both before and after (a loop device may come and go meanwhile).
    seen = {n: d for n, d in before.items() if after.get(n) == d and d["type"] == "disk"}
    assert set(seen) == set(ours) - (set(ours) - set(before) - set(after))
    for name, device in seen.items():
        assert (ours[name].size_bytes, ours[name].rotational) == (device["size"], device["rota"])


def _findmnt() -> dict[str, dict[str, object]]:
    done = subprocess.run([require_tool("findmnt"), "-J", "-l", "-b", "-o",
                           "TARGET,SOURCE,FSTYPE,SIZE,AVAIL,FSROOT,MAJ:MIN"],
                          capture_output=True, text=True, check=True, timeout=60)
    return {f["target"]: f for f in json.loads(done.stdout)["filesystems"]}  # the last wins


def test_the_filesystems_findmnt_lists_with_their_sizes() -> None:
    listed = _findmnt()
    ours = {f.mount_point: f for f in StorageCollector(Root("/")).collect().filesystems}
    on_disks = {target for target, f in listed.items() if str(f["source"]).startswith("/dev/")
                and f["fsroot"] == "/" and not str(f["maj:min"]).startswith("7:")}
    assert on_disks <= set(ours) <= set(listed)
    for target, fs in ours.items():
        assert (fs.type, fs.size_bytes) == (listed[target]["fstype"], listed[target]["size"])
        # Free space moves while other work writes; within a GiB of what findmnt saw.
        assert fs.available_bytes is not None
        assert abs(fs.available_bytes - int(listed[target]["avail"])) < 1 << 30


def test_who_made_a_device_mapper_device(tmp_path: Path) -> None:
    for n, uuid in enumerate(["CRYPT-LUKS2-2c1b6f0e-luks", "part1-mpath-3600a0b80", "mpath-3600a0",
                              "", "stratis-1-private", "part²-x"]):
        dm = tmp_path / "sys/block" / f"dm-{n}" / "dm"
        dm.mkdir(parents=True)
        if uuid:
            (dm / "uuid").write_text(uuid + "\n")
    kinds = [d.kind for d in StorageCollector(Root(tmp_path)).collect().mapped_devices]
    assert kinds == ["crypt", "partition", "multipath", None, "stratis", "part²"]
