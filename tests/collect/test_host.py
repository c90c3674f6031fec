import os
import socket
from pathlib import Path

import pytest

from hwinfo.collect.host import HostCollector, container, virtualization
from hwinfo.collect.sysfs import Root, RootError


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_fixture_host_facts(tmp_path: Path) -> None:
    _write(tmp_path, "proc/sys/kernel/hostname", "gpu-node-07\n")
    _write(tmp_path, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n")
    _write(tmp_path, "etc/os-release", 'NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
    _write(tmp_path, "proc/uptime", "93784.12 180000.00\n")
    host = HostCollector(Root(tmp_path)).collect()
    assert host.hostname == "gpu-node-07"
    assert host.os_name == "Debian GNU/Linux 12 (bookworm)"
    assert host.kernel_release == "6.1.0-18-amd64"
    assert host.uptime_seconds == pytest.approx(93784.12)
    assert host.architecture is None  # not the live machine: not guessed from this one
    assert host.virtualization is None and host.container is None


@pytest.mark.parametrize(
    ("vendor", "product", "kind"),
    [("QEMU", "Standard PC (Q35 + ICH9, 2009)", "kvm"), ("Amazon EC2", "g4dn.xlarge", "amazon"),
     ("Microsoft Corporation", "Virtual Machine", "microsoft"), ("Dell Inc.", "PowerEdge XE9680", None)],
)
def test_virtualization_from_dmi(tmp_path: Path, vendor: str, product: str, kind: str | None) -> None:
    _write(tmp_path, "sys/class/dmi/id/sys_vendor", vendor + "\n")
    _write(tmp_path, "sys/class/dmi/id/product_name", product + "\n")
    assert virtualization(Root(tmp_path)) == kind


def test_unnamed_hypervisor_from_cpu_flag(tmp_path: Path) -> None:
    _write(tmp_path, "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme hypervisor avx2\n")
    assert virtualization(Root(tmp_path)) == "vm"


def test_container_markers(tmp_path: Path) -> None:
    assert container(Root(tmp_path)) is None
    _write(tmp_path, "proc/1/cgroup", "0::/kubepods/burstable/pod1234/abcd\n")
    assert container(Root(tmp_path)) == "kubernetes"
    _write(tmp_path, "run/systemd/container", "podman\n")
    assert container(Root(tmp_path)) == "podman"


def test_live_hostname_and_kernel() -> None:
    host = HostCollector(Root("/")).collect()
    assert host.hostname == socket.gethostname()
    assert host.kernel_release == os.uname().release
    assert host.architecture == os.uname().machine
    assert host.uptime_seconds is not None and host.uptime_seconds > 0


def test_unusable_root_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RootError, match="not a readable directory"):
        Root(tmp_path / "missing")


@pytest.mark.parametrize(("stat", "uptime", "boot", "up"), [
    ("btime 1700000000\n", "12.50 3.00\n", 1700000000.0, 12.5),
    ("btime \n", "nan 1\n", None, None),
    ("btime abc\n", "inf\n", None, None),
    ("btime ²\n", "   \n", None, None),
])
def test_kernel_numbers_that_are_not_numbers_are_not_available(
    tmp_path: Path, stat: str, uptime: str, boot: float | None, up: float | None
) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "stat").write_text(stat)
    (tmp_path / "proc" / "uptime").write_text(uptime)
    host = HostCollector(Root(str(tmp_path))).collect()
    assert host.boot_time_seconds == boot
    if up is not None or boot is None:
        assert host.uptime_seconds == up
