"""Storage inventory metrics: what each disk is, md membership, and what filesystems sit on.

node_exporter already exports I/O rates per disk and sizes and free space per filesystem;
these series are what it does not have, labelled so that a query can join the two on
`device` and `mountpoint` (docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from hwinfo.exporter.metric import Metric, Sample, each
from hwinfo.model.pcie import PcieLinkStatus
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.storage import Disk, FileSystem, Storage

T = TypeVar("T")

# Mount points of container runtimes: a volume mounted there lives as long as its container,
# and each would be a new series.
_CONTAINER_MOUNTS = ("/var/lib/kubelet/", "/var/lib/docker/", "/var/lib/containers/",
                     "/run/containerd/", "/run/k3s/")


def text(value: Any) -> str:
    """A label value: "" for not available."""
    return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def pcie_metrics(subsystem: str, items: Callable[[Snapshot], list[T]],
                 labels: Callable[[T], tuple[str, ...]], link: Callable[[T], PcieLinkStatus | None],
                 json: str) -> tuple[Metric, ...]:
    """The four PCIe link gauges the GPU has, for a subsystem's devices (disk, network)."""

    def read(field: str) -> Callable[[Snapshot], Iterator[Sample]]:
        def samples(s: Snapshot) -> Iterator[Sample]:
            return each([i for i in items(s) if link(i) is not None], labels,
                        lambda i: getattr(link(i), field))

        return samples

    return tuple(
        Metric(f"{subsystem}_pcie_link_{name}", "gauge", help, ("device",), f"{json}.{field}",
               read(field))
        for name, field, help in (
            ("generation", "generation", "Current PCIe link generation."),
            ("max_generation", "max_generation", "Highest PCIe link generation."),
            ("width", "width", "Current PCIe link width (lanes)."),
            ("max_width", "max_width", "Highest PCIe link width."),
        )
    )


def _disks(s: Snapshot) -> list[Disk]:
    return s.storage.disks if s.storage else []


def _disk_info(s: Snapshot) -> Iterator[Sample]:
    for d in _disks(s):
        yield (d.name, text(d.kind), text(d.transport), text(d.model), text(d.serial),
               text(d.rotational), text(d.pci_address), text(d.numa_node)), 1.0


def _md_members(s: Snapshot) -> Iterator[Sample]:
    for array in s.storage.raid_arrays if s.storage else []:
        for member in array.members:
            yield (array.name, member.name, text(member.state)), 1.0


def filesystem_kind(fs: FileSystem, storage: Storage) -> str:
    """What a filesystem's data sits on: a disk kind, "mixed", "network", or "" (not known)."""
    if fs.network:
        return "network"
    kinds = {d.kind for d in storage.disks if d.name in fs.disks}
    return "" if not kinds or None in kinds else kinds.pop() if len(kinds) == 1 else "mixed"


def _filesystems(s: Snapshot) -> Iterator[Sample]:
    storage = s.storage
    if storage is None:
        return
    for fs in storage.filesystems:
        if not fs.mount_point.startswith(_CONTAINER_MOUNTS):
            yield (fs.source, fs.mount_point, fs.type, ",".join(fs.disks),
                   filesystem_kind(fs, storage)), 1.0


METRICS: tuple[Metric, ...] = (
    Metric(
        "disk_info",
        "info",
        "A whole disk: its kind (nvme, ssd, hdd, virtual, ram), transport, model, serial, and "
        "the PCI function and NUMA node it is reached through.",
        ("device", "kind", "transport", "model", "serial", "rotational", "pci_address",
         "numa_node"),
        "storage.disks[]",
        _disk_info,
    ),
    Metric(
        "disk_size_bytes",
        "gauge",
        "Size of a whole disk.",
        ("device",),
        "storage.disks[].size_bytes",
        lambda s: each(_disks(s), lambda d: (d.name,), lambda d: d.size_bytes),
    ),
    *pcie_metrics("disk", _disks, lambda d: (d.name,), lambda d: d.pcie, "storage.disks[].pcie"),
    Metric(
        "md_info",
        "info",
        "An md RAID array and its level.",
        ("device", "level"),
        "storage.raid_arrays[].level",
        lambda s: each(s.storage.raid_arrays if s.storage else [],
                       lambda a: (a.name, text(a.level)), lambda _: 1),
    ),
    Metric(
        "md_member_info",
        "info",
        "A member of an md array, with md's state of it (in_sync, faulty, spare, ...).",
        ("device", "member", "state"),
        "storage.raid_arrays[].members[]",
        _md_members,
    ),
    Metric(
        "filesystem_info",
        "info",
        "A filesystem data can sit on, the disks below it and their kind (or network, or "
        "mixed); node_exporter's node_filesystem_* has its size and free space.",
        ("device", "mountpoint", "fstype", "disks", "kind"),
        "storage.filesystems[]",
        _filesystems,
    ),
)
