"""Storage inventory series: one per disk, array member and data filesystem, none per
container volume."""

from __future__ import annotations

from health.factories import make_snapshot

from hwinfo.exporter.metrics_storage import METRICS, filesystem_kind
from hwinfo.model.storage import Disk, FileSystem, Storage


def _disk(name: str, kind: str | None) -> Disk:
    return Disk(name, kind, None, None, 1 << 40, None, None, None, None, None, None)


def _fs(mount_point: str, disks: list[str], network: bool = False) -> FileSystem:
    return FileSystem(mount_point, f"/dev/{mount_point}", "xfs", None, disks, network, False,
                      None, None, None)


def test_what_a_filesystem_sits_on() -> None:
    storage = Storage(disks=[_disk("nvme0n1", "nvme"), _disk("sda", "hdd"), _disk("sdb", None)])
    assert filesystem_kind(_fs("a", ["nvme0n1"]), storage) == "nvme"
    assert filesystem_kind(_fs("b", ["nvme0n1", "sda"]), storage) == "mixed"
    assert filesystem_kind(_fs("c", ["sdb"]), storage) == ""  # its disk's kind is not known
    assert filesystem_kind(_fs("d", []), storage) == ""  # a pool: no disk named
    assert filesystem_kind(_fs("e", [], network=True), storage) == "network"


def test_container_volumes_are_no_series() -> None:
    snapshot = make_snapshot()
    snapshot.storage = Storage(disks=[_disk("sda", "hdd")], filesystems=[
        _fs("/data", ["sda"]),
        _fs("/var/lib/kubelet/pods/0125ec2f/volumes/kubernetes.io~csi/pvc-1/mount", ["sda"]),
        _fs("/var/lib/docker/volumes/cache/_data", ["sda"])])
    (info,) = [m for m in METRICS if m.name == "filesystem_info"]
    assert [labels[1] for labels, _ in info.read(snapshot)] == ["/data"]
    assert make_snapshot().storage is None
    assert all(list(m.read(make_snapshot())) == [] for m in METRICS)  # not read: no series
