"""A scenario's topology: its PCI tree (host bridges, bridges, GPUs, RDMA NICs, NVMe) and its
NVLink wiring (which GPU or NVSwitch each link reaches).

The PCI tree is what the machine's sysfs holds (the simulator writes it out for the
collectors, sysfs_tree.py) and what NVML's topology calls answer from; the wiring is what
`nvmlDeviceGetNvLinkRemotePciInfo` answers. docs/scenario-format.md describes both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hwinfo import inputs
from hwinfo.sim.scenario_bounds import MAX_NUMA_NODE
from hwinfo.sim.scenario_reader import Reader

# (domain, bus, device, function) of a PCI function.
Address = tuple[int, int, int, int]
# (domain, bus, device): a GPU's or NVSwitch's bus id as NVML names it (function 0).
BusId = tuple[int, int, int]

NODE_KINDS = ("bridge", "gpu", "nic", "nvme")
# A tree deeper than this, or larger, is no machine's: PCIe allows 256 buses per domain, and
# a real one nests a few switches.
MAX_DEPTH = 16
MAX_NODES = 4096
_ADDRESS = re.compile(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-1][0-9a-fA-F])\.([0-7])")
_HOST_BRIDGE = re.compile(r"([0-9a-fA-F]{4}):([0-9a-fA-F]{2})")
_RDMA_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_NVME_NAME = re.compile(r"nvme[0-9]{1,4}")


@dataclass(frozen=True)
class PciNode:
    """A PCI function: a bridge (switch port, root port) with functions below it, or an
    endpoint: a GPU (by its bus id), an RDMA NIC's function, an NVMe controller."""

    address: Address
    kind: str  # NODE_KINDS
    name: str | None = None  # the RDMA device (mlx5_0) or NVMe controller (nvme0)
    model: str | None = None  # an NVMe controller's model
    children: tuple[PciNode, ...] = ()


@dataclass(frozen=True)
class HostBridge:
    """A PCI root bus (sysfs `pciDDDD:BB`) and the NUMA node its devices sit on."""

    domain: int
    bus: int
    numa_node: int | None  # None: the kernel knows none (-1)
    children: tuple[PciNode, ...]

    @property
    def name(self) -> str:
        return f"pci{self.domain:04x}:{self.bus:02x}"


@dataclass(frozen=True)
class NvLinkWire:
    """`links` consecutive NVLink links of a GPU that reach `to`: a GPU or an NVSwitch."""

    to: BusId
    links: int


@dataclass(frozen=True)
class TopologySpec:
    host_bridges: tuple[HostBridge, ...]
    nvswitches: tuple[BusId, ...]
    nvlink: tuple[NvLinkWire, ...]  # the wiring of every GPU that gives none of its own


@dataclass(frozen=True)
class Placement:
    """Where a function sits: its host bridge and the bridges above it, root port first."""

    host_bridge: HostBridge
    bridges: tuple[Address, ...]
    node: PciNode


def address_text(address: Address) -> str:
    """sysfs's name of a PCI function: "0000:07:00.0"."""
    domain, bus, device, function = address
    return f"{domain:04x}:{bus:02x}:{device:02x}.{function}"


def walk(spec: TopologySpec) -> Iterator[Placement]:
    """Every function of the tree with its place, parents before children."""

    def below(bridge: HostBridge, bridges: tuple[Address, ...],
              nodes: tuple[PciNode, ...]) -> Iterator[Placement]:
        for node in nodes:
            yield Placement(bridge, bridges, node)
            yield from below(bridge, (*bridges, node.address), node.children)

    for bridge in spec.host_bridges:
        yield from below(bridge, (), bridge.children)


def _address(r: Reader, path: str, value: object) -> Address:
    text = r.str(path, value)
    m = _ADDRESS.fullmatch(text)
    if m is None:
        r.fail(path, f"expected a PCI address such as '0000:07:00.0', got {inputs.shown(text)}")
    return int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)


class _TreeReader:
    """Reads the `pci` list, counting nodes and refusing duplicates as it goes."""

    def __init__(self, r: Reader) -> None:
        self.r = r
        self.seen: dict[Address, str] = {}
        self.names: dict[str, str] = {}

    def host_bridge(self, path: str, value: object) -> HostBridge:
        r = self.r
        data = r.obj(path, value, ("bus", "numa_node", "devices"), ("bus",))
        text = r.str(inputs.member(path, "bus"), data["bus"])
        m = _HOST_BRIDGE.fullmatch(text)
        if m is None:
            r.fail(inputs.member(path, "bus"), f"expected a root bus such as '0000:00', got "
                                               f"{inputs.shown(text)}")
        numa = data.get("numa_node")
        return HostBridge(
            int(m.group(1), 16), int(m.group(2), 16),
            None if numa is None else r.int(inputs.member(path, "numa_node"), numa, 0,
                                            MAX_NUMA_NODE),
            self.nodes(inputs.member(path, "devices"), data.get("devices", []), 1),
        )

    def nodes(self, path: str, value: object, depth: int) -> tuple[PciNode, ...]:
        r = self.r
        if depth > MAX_DEPTH:
            r.fail(path, f"PCI bridges nest at most {MAX_DEPTH} deep")
        return tuple(self.node(inputs.member(path, i), item, depth)
                     for i, item in enumerate(r.list(path, value)))

    def node(self, path: str, value: object, depth: int) -> PciNode:
        r = self.r
        data = r.obj(path, value, ("address", "kind", "name", "model", "devices"),
                     ("address", "kind"))
        address = _address(r, inputs.member(path, "address"), data["address"])
        if address in self.seen:
            r.fail(inputs.member(path, "address"), f"same as {self.seen[address]}")
        self.seen[address] = path
        if len(self.seen) > MAX_NODES:
            r.fail(path, f"at most {MAX_NODES} PCI functions")
        kind = r.choice(inputs.member(path, "kind"), data["kind"], NODE_KINDS)
        if "devices" in data and kind != "bridge":
            r.fail(inputs.member(path, "devices"), "only a bridge has devices below it")
        name = None
        if kind in ("nic", "nvme"):
            if "name" not in data:
                r.fail(inputs.member(path, "name"), f"required for a {kind}")
            name = r.str(inputs.member(path, "name"), data["name"], 64)
            pattern = _RDMA_NAME if kind == "nic" else _NVME_NAME
            if not pattern.fullmatch(name):
                r.fail(inputs.member(path, "name"), f"not a {kind} name: {inputs.shown(name)}")
            if name in self.names:
                r.fail(inputs.member(path, "name"), f"same as {self.names[name]}")
            self.names[name] = path
        elif "name" in data:
            r.fail(inputs.member(path, "name"), "only a nic or an nvme has a name")
        if "model" in data and kind != "nvme":
            r.fail(inputs.member(path, "model"), "only an nvme has a model")
        model = None if data.get("model") is None else r.str(inputs.member(path, "model"),
                                                              data["model"], 64)
        children = self.nodes(inputs.member(path, "devices"), data.get("devices", []), depth + 1)
        return PciNode(address, kind, name, model, children)


def read_wires(r: Reader, path: str, value: object) -> tuple[NvLinkWire, ...]:
    """An NVLink wiring: [{to: bus id, links: n}, ...], in link order."""
    wires = []
    for i, item in enumerate(r.list(path, value)):
        p = inputs.member(path, i)
        data = r.obj(p, item, ("to", "links"), ("to", "links"))
        domain, bus, device, _ = _address(r, inputs.member(p, "to"), data["to"])
        wires.append(NvLinkWire((domain, bus, device), r.int(inputs.member(p, "links"),
                                                                data["links"], 1, 64)))
    return tuple(wires)


def read_topology(r: Reader, value: object, gpu_bus_ids: dict[BusId, int]) -> TopologySpec:
    """The top-level `topology` object, its GPUs checked against the scenario's bus ids."""
    data = r.obj("topology", value, ("pci", "nvswitches", "nvlink"))
    tree = _TreeReader(r)
    bridges = tuple(tree.host_bridge(inputs.member("topology.pci", i), item)
                    for i, item in enumerate(r.list("topology.pci", data.get("pci", []))))
    roots = [(b.domain, b.bus) for b in bridges]
    if len(set(roots)) != len(roots):
        r.fail("topology.pci", "a root bus is listed twice")
    spec = TopologySpec(bridges, (), ())
    placed: dict[BusId, str] = {}
    for place in walk(spec):
        if place.node.kind != "gpu":
            continue
        bus_id = place.node.address[:3]
        where = tree.seen[place.node.address]
        if bus_id not in gpu_bus_ids or place.node.address[3] != 0:
            r.fail(where, f"no GPU of the scenario has bus id {address_text(place.node.address)}")
        if bus_id in placed:
            r.fail(where, f"GPU {gpu_bus_ids[bus_id]} is also at {placed[bus_id]}")
        placed[bus_id] = where
    switches = []
    for i, item in enumerate(r.list("topology.nvswitches", data.get("nvswitches", []))):
        p = inputs.member("topology.nvswitches", i)
        bus_id = _address(r, p, item)[:3]
        if bus_id in gpu_bus_ids or bus_id in switches:
            r.fail(p, "an NVSwitch's bus id must be its own")
        switches.append(bus_id)
    wires = read_wires(r, "topology.nvlink", data.get("nvlink", []))
    return TopologySpec(bridges, tuple(switches), wires)


def check_wiring(
    r: Reader, path: str, wires: tuple[NvLinkWire, ...], own: BusId, links: int,
    spec: TopologySpec | None, gpu_bus_ids: dict[BusId, int],
) -> None:
    """A GPU's wiring reaches other GPUs or the scenario's NVSwitches, over its own links."""
    switches = () if spec is None else spec.nvswitches
    for i, wire in enumerate(wires):
        if wire.to == own or (wire.to not in gpu_bus_ids and wire.to not in switches):
            r.fail(inputs.member(inputs.member(path, i), "to"),
                   "not another GPU's bus id nor one of topology.nvswitches")
    total = sum(wire.links for wire in wires)
    if total > links:
        r.fail(path, f"wires {total} NVLink links; gpus[{gpu_bus_ids[own]}] has {links} enabled")


def wiring(
    own: tuple[NvLinkWire, ...] | None, links: int | None, spec: TopologySpec | None
) -> tuple[NvLinkWire, ...]:
    """A GPU's NVLink wiring: its own, else the topology's for a GPU with enabled links."""
    if own is not None:
        return own
    return spec.nvlink if spec is not None and links else ()
