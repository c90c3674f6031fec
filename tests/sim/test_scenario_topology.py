"""A scenario's topology: refused in one line where it is no machine's, and written out as the
sysfs a real machine shows (kernel Documentation/ABI/testing/sysfs-bus-pci, sysfs-class-
infiniband, sysfs-class-nvme) for the collectors to read."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import pytest

from hwinfo.sim import Machine, load_scenario
from hwinfo.sim.scenario import parse_scenario
from hwinfo.sim.scenario_model import ScenarioError
from hwinfo.sim.sysfs_tree import write_sysfs

GPU = {"board": "A100-SXM4-80GB", "pci_bus_id": "00000000:07:00.0"}


def _tree(*devices: dict[str, Any], bus: str = "0000:00") -> dict[str, Any]:
    return {"pci": [{"bus": bus, "numa_node": 0, "devices": list(devices)}]}


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"address": "0000:07:00.0", "kind": "gpu"}
    for level in range(depth):
        node = {"address": f"0000:{level:02x}:1f.0", "kind": "bridge", "devices": [node]}
    return node


@pytest.mark.parametrize(("topology", "gpu", "message"), [
    (_tree({"address": "0000:7:00.0", "kind": "gpu"}), {},
     "topology.pci[0].devices[0].address: expected a PCI address such as '0000:07:00.0'"),
    (_tree({"address": "0000:08:00.0", "kind": "gpu"}), {},
     "topology.pci[0].devices[0]: no GPU of the scenario has bus id 0000:08:00.0"),
    (_tree({"address": "0000:07:00.0", "kind": "gpu"}, {"address": "0000:07:00.0", "kind": "nic",
                                                         "name": "mlx5_0"}), {},
     "topology.pci[0].devices[1].address: same as topology.pci[0].devices[0]"),
    (_tree({"address": "0000:0c:00.0", "kind": "nic"}), {},
     "topology.pci[0].devices[0].name: required for a nic"),
    (_tree({"address": "0000:0c:00.0", "kind": "nvme", "name": "sda"}), {},
     "topology.pci[0].devices[0].name: not a nvme name: 'sda'"),
    (_tree({"address": "0000:0c:00.0", "kind": "nic", "name": "mlx5_0",
            "devices": []}), {}, "devices: only a bridge has devices below it"),
    (_tree({"address": "0000:0c:00.0", "kind": "switch"}), {}, "kind: unknown value 'switch'"),
    (_tree(_nested(17)), {}, "PCI bridges nest at most 16 deep"),
    ({"pci": [{"bus": "0000:00"}, {"bus": "0000:00"}]}, {},
     "topology.pci: a root bus is listed twice"),
    ({"pci": [{"bus": "00"}]}, {}, "topology.pci[0].bus: expected a root bus such as '0000:00'"),
    ({"pci": [{"bus": "0000:00", "numa_node": 1024}]}, {},
     "topology.pci[0].numa_node: must be at most 1023"),
    ({"nvswitches": ["0000:07:00.0"]}, {}, "an NVSwitch's bus id must be its own"),
    ({"nvlink": [{"to": "0000:c4:00.0", "links": 12}]}, {},
     "topology.nvlink[0].to: not another GPU's bus id nor one of topology.nvswitches"),
    ({"nvswitches": ["0000:c4:00.0"], "nvlink": [{"to": "0000:c4:00.0", "links": 13}]}, {},
     "topology.nvlink: wires 13 NVLink links; gpus[0] has 12 enabled"),
    ({}, {"nvlink_remote": [{"to": "0000:07:00.0", "links": 1}]},
     "gpus[0].nvlink_remote[0].to: not another GPU's bus id"),
    ({}, {"numa_affinity": "0-2000"}, "gpus[0].numa_affinity: NUMA nodes are at most 1023"),
])
def test_a_topology_that_is_no_machine_s_is_one_line(
    topology: dict[str, Any], gpu: dict[str, Any], message: str
) -> None:
    data = {"format": 1, "gpus": [{**GPU, **gpu}], "topology": topology}
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, "t.json", "t")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def _link(root: Path, rel: str) -> str:
    """Where a sysfs link of the tree leads, relative to the tree."""
    return os.path.relpath(os.path.realpath(root / rel), root)


def test_the_sysfs_of_a_dgx_h100(tmp_path: Path) -> None:
    write_sysfs(load_scenario("dgx-h100"), str(tmp_path))
    gpu0 = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:03.0/0000:1b:00.0"
    assert _link(tmp_path, "sys/bus/pci/devices/0000:1b:00.0") == gpu0
    assert {name: (tmp_path / gpu0 / name).read_text() for name in
            ("vendor", "device", "class", "numa_node")} == {
        "vendor": "0x10de\n", "device": "0x2330\n", "class": "0x030200\n", "numa_node": "0\n"}
    assert _link(tmp_path, "sys/class/infiniband/mlx5_0") == (
        "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0/"
        "infiniband/mlx5_0")
    # The two ports of the storage card: two functions of one device.
    assert [_link(tmp_path, f"sys/class/infiniband/mlx5_{n}").split("/")[-3] for n in (1, 2)] \
        == ["0000:1a:00.0", "0000:1a:00.1"]
    assert _link(tmp_path, "sys/class/nvme/nvme0") == \
        "sys/devices/pci0000:00/0000:00:1b.0/0000:02:00.0/nvme/nvme0"
    bridge = tmp_path / "sys/devices/pci0000:15/0000:15:01.0"
    assert (bridge / "class").read_text() == "0x060400\n"
    assert len(os.listdir(tmp_path / "sys/class/infiniband")) == 12
    assert len(os.listdir(tmp_path / "sys/class/nvme")) == 10


def test_a_geforce_board_is_a_vga_controller(tmp_path: Path) -> None:
    write_sysfs(load_scenario("workstation-geforce"), str(tmp_path))
    gpu = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    assert (gpu / "class").read_text() == "0x030000\n"


def test_a_machine_writes_its_sysfs_once_and_removes_it() -> None:
    machine = Machine(load_scenario("workstation-geforce"))
    first = machine.sysfs_root()
    assert machine.sysfs_root() == first and os.path.isdir(first)
    del machine
    gc.collect()
    assert not os.path.exists(first)
