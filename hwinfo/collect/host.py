"""Host identity: name, OS, kernel, uptime, and whether it is a VM or a container."""

from __future__ import annotations

import dataclasses
import os
import re
import time

from hwinfo.collect.sysfs import Root, is_live
from hwinfo.inputs import decimal
from hwinfo.model.host import Host

# DMI vendor/product substrings -> hypervisor kind, the way systemd-detect-virt names them.
_DMI_VENDORS = (
    ("amazon ec2", "amazon"),
    ("google", "google"),
    ("microsoft corporation", "microsoft"),
    ("vmware", "vmware"),
    ("innotek", "oracle"),
    ("virtualbox", "oracle"),
    ("qemu", "kvm"),
    ("kvm", "kvm"),
    ("openstack", "kvm"),
    ("xen", "xen"),
)


def hostname(root: Root) -> str:
    name = root.read_value("proc/sys/kernel/hostname")
    if name is None and is_live(root):
        name = os.uname().nodename  # what gethostname() returns, without importing socket
    return name or "unknown"


def os_name(root: Root) -> str | None:
    """PRETTY_NAME of os-release (/etc first, then /usr/lib as os-release(5) says)."""
    for rel in ("etc/os-release", "usr/lib/os-release"):
        text = root.read_text(rel)
        if text is None:
            continue
        fields = dict(
            line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")
        )
        value = fields.get("PRETTY_NAME") or fields.get("NAME")
        if value:
            return value.strip().strip("\"'")
    return None


_SECONDS = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,9})?")


def boot_time_seconds(root: Root) -> float | None:
    text = root.read_text("proc/stat") or ""
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["btime"]:
            # The kernel writes whole seconds; anything else is not a boot time.
            seconds = decimal(words[1]) if len(words) == 2 else None
            return None if seconds is None else float(seconds)
    return None


def uptime_seconds(root: Root) -> float | None:
    words = (root.read_value("proc/uptime") or "").split()
    # The kernel writes "12345.67 23456.78": seconds with two decimals.
    return float(words[0]) if words and _SECONDS.fullmatch(words[0]) else None


def virtualization(root: Root) -> str | None:
    """The hypervisor this machine runs under, or None on bare metal."""
    dmi = " ".join(
        (root.read_value(f"sys/class/dmi/id/{f}") or "").lower()
        for f in ("sys_vendor", "product_name", "board_vendor")
    )
    for needle, kind in _DMI_VENDORS:
        if needle in dmi:
            return kind
    xen = root.read_value("sys/hypervisor/type")
    if xen:
        return xen
    cpuinfo = root.read_text("proc/cpuinfo") or ""
    for line in cpuinfo.splitlines():
        if line.startswith("flags") and " hypervisor" in line:
            return "vm"
    return None


def container(root: Root) -> str | None:
    """The container runtime this process runs in, or None when on the host."""
    marker = root.read_value("run/systemd/container")
    if marker:
        return marker
    if root.exists("run/.containerenv"):
        return "podman"
    if root.exists(".dockerenv"):
        return "docker"
    cgroup = root.read_text("proc/1/cgroup") or ""
    for needle, kind in (("kubepods", "kubernetes"), ("docker", "docker"), ("lxc", "lxc")):
        if needle in cgroup:
            return kind
    return None


class HostCollector:
    """Host facts; all but uptime are static, so they are read once."""

    def __init__(self, root: Root) -> None:
        self.root = root
        live = is_live(root)
        self._static = {
            "hostname": hostname(root),
            "os_name": os_name(root),
            "kernel_release": root.read_value("proc/sys/kernel/osrelease"),
            "architecture": os.uname().machine if live else None,
            "boot_time_seconds": boot_time_seconds(root),
            "virtualization": virtualization(root),
            "container": container(root),
        }

    def identity(self) -> Host:
        """The static facts read at start, with no uptime."""
        return Host(uptime_seconds=None, **self._static)

    def collect(self) -> Host:
        uptime = uptime_seconds(self.root)
        boot = self._static["boot_time_seconds"]
        if uptime is None and boot is not None:
            uptime = time.time() - boot
        return dataclasses.replace(self.identity(), uptime_seconds=uptime)
