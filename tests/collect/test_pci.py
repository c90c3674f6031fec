"""Where sysfs places GPUs, RDMA NICs and NVMe drives: read from a simulated machine's sysfs,
from hostile trees, and from this machine's own /sys (checked against the kernel's links)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hwinfo.collect.pci import PciCollector
from hwinfo.collect.sysfs import Root, is_live
from hwinfo.sim import load_scenario
from hwinfo.sim.sysfs_tree import write_sysfs


def _collect(root: Path) -> dict[str, tuple[str, str, list[str], str, int | None]]:
    tree = PciCollector(Root(str(root))).collect()
    return {d.name or d.address: (d.kind, d.host_bridge, d.bridges, d.address, d.numa_node)
            for d in tree.devices}


def test_a_simulated_dgx_a100_as_its_sysfs_places_it(tmp_path: Path) -> None:
    write_sysfs(load_scenario("dgx-a100-mig"), str(tmp_path))
    found = _collect(tmp_path)
    assert sorted(k for k, v in found.items() if v[0] == "gpu") == [
        "0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
        "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"]
    assert len([v for v in found.values() if v[0] == "nic"]) == 12
    assert len([v for v in found.values() if v[0] == "nvme"]) == 10
    # GPU0 behind three switches, as NCCL's dump of a DGX A100 nests it (nvidia/nccl#1505).
    assert found["0000:07:00.0"] == ("gpu", "pci0000:00", [
        "0000:00:01.1", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0",
        "0000:05:00.0", "0000:06:00.0"], "0000:07:00.0", 3)
    assert found["mlx5_0"] == ("nic", "pci0000:00", [
        "0000:00:01.1", "0000:01:00.0", "0000:02:01.0", "0000:0a:00.0", "0000:0b:00.0"],
        "0000:0c:00.0", 3)
    assert found["mlx5_5"][2:] == (["0000:60:03.1"], "0000:61:00.1", 0)


def _function(root: Path, path: str, **files: str) -> Path:
    directory = root / "sys/devices" / path
    directory.mkdir(parents=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def _link(root: Path, rel: str, target: str) -> None:
    link = root / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def test_what_is_not_a_pci_function_is_left_out(tmp_path: Path) -> None:
    """An NVSwitch and a GPU's audio function (NVIDIA, not a display class), an NVMe-over-
    fabrics controller and a software RDMA device (no PCI parent), a link out of the tree."""
    _function(tmp_path, "pci0000:00/0000:00:01.0/0000:01:00.0", vendor="0x10de\n",
              **{"class": "0x030200\n", "numa_node": "-1\n"})
    _function(tmp_path, "pci0000:00/0000:00:01.0/0000:01:00.1", vendor="0x10de\n",
              **{"class": "0x040300\n"})
    _function(tmp_path, "pci0000:00/0000:00:02.0/0000:c4:00.0", vendor="0x10de\n",
              **{"class": "0x068000\n"})
    for address, path in (("0000:01:00.0", "0000:00:01.0/0000:01:00.0"),
                          ("0000:01:00.1", "0000:00:01.0/0000:01:00.1"),
                          ("0000:c4:00.0", "0000:00:02.0/0000:c4:00.0")):
        _link(tmp_path, f"sys/bus/pci/devices/{address}", f"../../../devices/pci0000:00/{path}")
    (tmp_path / "sys/devices/virtual/nvme-fabrics/ctl/nvme5").mkdir(parents=True)
    _link(tmp_path, "sys/class/nvme/nvme5", "../../devices/virtual/nvme-fabrics/ctl/nvme5")
    (tmp_path / "sys/devices/virtual/infiniband/rxe0").mkdir(parents=True)
    _link(tmp_path, "sys/class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0")
    _link(tmp_path, "sys/class/infiniband/mlx5_9", "/sys/devices")  # out of the tree
    assert _collect(tmp_path) == {
        "0000:01:00.0": ("gpu", "pci0000:00", ["0000:00:01.0"], "0000:01:00.0", None)}


@pytest.mark.parametrize("numa_node", ["x" * 10_000, "\x00\xff", "-7", "4096", "", "2\n"])
def test_a_hostile_attribute_costs_its_value_only(tmp_path: Path, numa_node: str) -> None:
    _function(tmp_path, "pci0000:00/0000:00:03.0/0000:05:00.0", numa_node=numa_node)
    _link(tmp_path, "sys/class/nvme/nvme0",
          "../../devices/pci0000:00/0000:00:03.0/0000:05:00.0/nvme/nvme0")
    (tmp_path / "sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0/nvme/nvme0").mkdir(parents=True)
    os.mkfifo(tmp_path / "sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0/nvme/nvme0/model")
    (device,) = PciCollector(Root(str(tmp_path))).collect().devices
    assert (device.name, device.model) == ("nvme0", None)  # a FIFO is never waited on
    assert device.numa_node == (2 if numa_node == "2\n" else None)


def test_a_link_loop_and_a_deep_tree_are_bounded(tmp_path: Path) -> None:
    _link(tmp_path, "sys/class/infiniband/mlx5_0", "mlx5_0")  # itself
    deep = "pci0000:00/" + "/".join(f"0000:{n:02x}:00.0" for n in range(40))
    _function(tmp_path, deep)
    _link(tmp_path, "sys/class/infiniband/mlx5_1", f"../../devices/{deep}")
    assert PciCollector(Root(str(tmp_path))).collect().devices == []


def test_this_machine_s_sysfs_agrees_with_the_kernel_s_links() -> None:
    """Every NVIDIA display function, RDMA device and NVMe controller the kernel links is
    found where its link leads (this machine may have none of them)."""
    root = Root("/")
    assert is_live(root)
    tree = PciCollector(root).collect()
    expected = set()
    for directory, kind in (("/sys/class/infiniband", "nic"), ("/sys/class/nvme", "nvme")):
        for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
            target = os.path.realpath(os.path.join(directory, name))
            if "/sys/devices/pci" in target:
                expected.add((kind, name, target.split("/")[-3]))
    for name in os.listdir("/sys/bus/pci/devices"):
        path = f"/sys/bus/pci/devices/{name}"
        with open(f"{path}/vendor") as v, open(f"{path}/class") as c:
            if int(v.read(), 16) == 0x10DE and int(c.read(), 16) >> 8 in (0x300, 0x302):
                expected.add(("gpu", None, name))
    found = {(d.kind, d.name, d.address) for d in tree.devices}
    assert found == expected
    for device in tree.devices:
        path = os.path.join("/sys/devices", device.host_bridge, *device.bridges, device.address)
        assert os.path.isdir(path)
