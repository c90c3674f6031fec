"""Mounted filesystems from /proc/self/mountinfo, the disks below them, and their statfs(2).

Only the filesystems data can sit on are kept: those on a block device (not a loop device's
image), ZFS and btrfs pools, and network and cluster filesystems. tmpfs, proc, overlay and
the other in-memory or stacked ones are left out, and so are bind mounts of a directory (a
container's /etc/hosts): their space is their filesystem's, listed once.

The mountinfo format is proc(5)'s. Sizes come from statfs(2) of the mount point. A local
filesystem answers it from memory; a network one can hang for as long as its server does
not answer, so those are asked on a thread with a deadline, and a mount point that did not
answer is not asked again until its call returns (node_exporter's filesystem collector does
the same).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import NamedTuple

from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal

MOUNTINFO = "proc/self/mountinfo"
CLASS_DIR = "sys/class/block"
# Network and cluster filesystems, where data sets live; their mountinfo source is a server.
NETWORK_TYPES = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "lustre", "beegfs", "gpfs", "ceph", "glusterfs",
    "fuse.glusterfs", "wekafs", "virtiofs", "9p", "fuse.juicefs", "fuse.s3fs",
    "fuse.mountpoint-s3", "fuse.gcsfuse", "fuse.blobfuse2", "fuse.sshfs", "fuse.rclone",
})
# Pools that span disks: their mountinfo device number is not a block device's.
POOL_TYPES = frozenset({"zfs", "btrfs"})
_LOOP_MAJOR = 7
_ESCAPE = re.compile(r"\\([0-7]{3})")
# md over dm over partitions is three levels; a loop in a hostile tree ends here.
_MAX_STACK = 16


class Mount(NamedTuple):
    """One mountinfo line's facts, as this module keeps them (a tuple: a dataclass would
    cost a fresh report's start more to define)."""

    mount_point: str
    source: str
    type: str
    device_number: tuple[int, int] | None  # major, minor
    fs_root: str  # the directory of the filesystem mounted here ("/" unless a bind mount)
    read_only: bool


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040)."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """Every well-formed line; the last mount of a mount point hides those before it."""
    mounts: dict[str, Mount] = {}
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        tail = fields[fields.index("-", 6) + 1:]
        if len(tail) < 2:
            continue
        major_text, _, minor_text = fields[2].partition(":")
        major, minor = decimal(major_text), decimal(minor_text)
        mount = Mount(
            mount_point=_unescape(fields[4]),
            source=_unescape(tail[1]),
            type=tail[0],
            device_number=None if major is None or minor is None else (major, minor),
            fs_root=_unescape(fields[3]),
            read_only="ro" in fields[5].split(","),
        )
        mounts.pop(mount.mount_point, None)  # re-inserted last: mountinfo order is kept
        mounts[mount.mount_point] = mount
    return list(mounts.values())


def block_device(root: Root, mount: Mount) -> str | None:
    """The kernel's name of the block device a mount is on (nvme0n1p2, dm-0, md127)."""
    if mount.device_number and mount.device_number[0]:
        path = root.resolve("sys/dev/block/{}:{}".format(*mount.device_number))
        return None if path is None else path.rsplit("/", 1)[-1]
    # btrfs shows an anonymous device number; its source names the device.
    name = mount.source.rsplit("/", 1)[-1]
    if mount.source.startswith("/dev/") and name and root.exists(f"{CLASS_DIR}/{name}"):
        return name
    return None


def is_data(mount: Mount, device: str | None) -> bool:
    """Whether a mount is where data can sit (see the module's docstring)."""
    if mount.type in NETWORK_TYPES:
        return True
    if mount.fs_root != "/" and mount.type != "btrfs":  # a bind mount (btrfs: a subvolume)
        return False
    if mount.device_number and mount.device_number[0] == _LOOP_MAJOR:
        return False
    return device is not None or mount.type in POOL_TYPES


def whole_disks(root: Root, name: str) -> list[str]:
    """The disks a block device lives on: a partition's disk, and through md and dm their members'."""
    found: list[str] = []
    pending = [(name, 0)]
    while pending:
        current, depth = pending.pop()
        rel = f"{CLASS_DIR}/{current}"
        if root.exists(f"{rel}/partition"):
            path = root.resolve(rel)
            parent = path.rsplit("/", 2)[-2] if path and path.count("/") >= 2 else None
            below = [parent] if parent else []
        else:
            below = root.listdir(f"{rel}/slaves")
        if not below or depth >= _MAX_STACK:
            if current not in found:
                found.append(current)
            continue
        pending.extend((b, depth + 1) for b in reversed(below))
    return found


class Usage(NamedTuple):
    size_bytes: int
    free_bytes: int
    available_bytes: int


def statfs(mount_point: str) -> Usage:
    """os.statvfs in bytes, as df computes them (fragment size times blocks)."""
    st = os.statvfs(mount_point)
    return Usage(st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize)


class MountUsage:
    """statfs(2) of mount points. A local filesystem answers from memory; a network one is
    asked on a thread, all within one deadline, and one whose call has not returned is
    skipped (not available) until it does."""

    def __init__(self, deadline_seconds: float = 1.0,
                 read: Callable[[str], Usage] = statfs) -> None:
        self.deadline_seconds = deadline_seconds
        self._read = read
        self._lock = threading.Lock()
        self._hanging: set[str] = set()

    def read(self, local: list[str], remote: list[str]) -> dict[str, Usage]:
        """Usage of the mount points that answered (the remote ones in time); the others are
        absent."""
        found = {point: usage for point in local if (usage := self._ask(point)) is not None}
        found.update(self._read_remote(remote))
        return found

    def _ask(self, point: str) -> Usage | None:
        try:
            return self._read(point)
        except OSError:  # gone, or no permission: not available
            return None

    def _read_remote(self, mount_points: list[str]) -> dict[str, Usage]:
        with self._lock:
            asked = [m for m in mount_points if m not in self._hanging]
        found: dict[str, Usage] = {}
        current: list[str] = []  # the mount point being read now, if any
        done = threading.Event()
        given_up = threading.Event()

        def run() -> None:
            for point in asked:
                if given_up.is_set():
                    return
                with self._lock:
                    current[:] = [point]
                usage = self._ask(point)
                with self._lock:
                    current.clear()
                    self._hanging.discard(point)
                    if usage is not None and not given_up.is_set():
                        found[point] = usage
            done.set()

        if asked:
            threading.Thread(target=run, name="hwinfo-statfs", daemon=True).start()
            if not done.wait(self.deadline_seconds):
                with self._lock:
                    given_up.set()
                    self._hanging.update(current)
                    return dict(found)
        return found
