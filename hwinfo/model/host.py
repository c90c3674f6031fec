"""The host a snapshot was taken on."""

from __future__ import annotations

from dataclasses import dataclass

from hwinfo.model.unixtime import UnixTime


@dataclass
class Host:
    hostname: str
    os_name: str | None
    kernel_release: str | None
    architecture: str | None
    boot_time_seconds: UnixTime | None
    uptime_seconds: float | None
    # Hypervisor kind: "kvm", "vmware", "xen", "microsoft", "amazon", "google", "oracle", or "vm"
    # when the CPU says it runs under a hypervisor that the firmware does not name.
    virtualization: str | None
    container: str | None  # "docker", "podman", "kubernetes", "lxc", "container" (unnamed)
