"""`hwinfo report --topology`: the matrix nvidia-smi's `topo -m` prints, its legends, and the
GPUs' peer-to-peer status (what `topo -p2p` prints)."""

from __future__ import annotations

from hwinfo.cpulist import format_cpulist
from hwinfo.escape import printable_copy
from hwinfo.model.gpu import GpuPair
from hwinfo.model.snapshot import Snapshot
from hwinfo.model.topology import Topology, build_topology
from hwinfo.render.text.layout import Section
from hwinfo.render.text.style import Style

UNKNOWN = "?"
NOT_AVAILABLE = "N/A"  # nvidia-smi's spelling in these columns
# The words, in hwinfo's own words (nvidia-smi's legend says the same of each).
LEGEND = (
    ("X", "the device itself"),
    ("SYS", "through PCIe and the interconnect between NUMA nodes (QPI/UPI, Infinity Fabric)"),
    ("NODE", "through PCIe and the interconnect between host bridges of one NUMA node"),
    ("PHB", "through PCIe and a PCIe host bridge (the CPU's root complex)"),
    ("PXB", "through several PCIe bridges (switches), not a host bridge"),
    ("PIX", "through at most one PCIe bridge (one switch)"),
    ("NV#", "through # NVLink links (directly, or by NVSwitches both GPUs reach)"),
    (UNKNOWN, "not known (see the notes)"),
)
# nvmlGpuP2PStatus_t (GpuPair) as nvidia-smi's `topo -p2p` abbreviates it.
P2P_WORDS = {
    "ok": ("OK", "supported"),
    "chipset_not_supported": ("CNS", "the chipset does not support it"),
    "gpu_not_supported": ("GNS", "a GPU does not support it"),
    "topology_not_supported": ("TNS", "the topology does not support it"),
    "disabled_by_regkey": ("DR", "disabled by a registry key (driver setting)"),
    "not_supported": ("NS", "not supported"),
    "unknown": ("U", "unknown"),
}


def render_topology(snapshot: Snapshot, style: Style) -> str:
    snapshot = printable_copy(snapshot)
    topology = build_topology(snapshot)
    section = Section("GPU topology", style)
    if snapshot.gpu is None or snapshot.gpu.status != "ok":
        reason = "GPU collection switched off" if snapshot.gpu is None else (
            snapshot.gpu.message or snapshot.gpu.status)
        section.line(style.warn(f"no GPUs read: {reason}"))
    _matrix(section, topology)
    _legends(section, topology)
    if snapshot.gpu is not None and snapshot.gpu.pairs:
        _p2p(section, snapshot.gpu.pairs, style)
    for note in topology.notes:
        section.line(style.warn(note))
    for error in snapshot.errors:  # what makes the exit status 1, whichever section it cost
        section.line(style.warn(f"{error.source}: collection failed: {error.message}"))
    return section.render() + "\n"


def _affinity(values: list[int] | None) -> str:
    return NOT_AVAILABLE if not values else format_cpulist(values)


def _matrix(section: Section, topology: Topology) -> None:
    if not topology.devices:
        section.line("no GPU, RDMA NIC or NVMe drive found")
        return
    header = ["", *(d.label for d in topology.devices),
              "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    rows = []
    for device, cells in zip(topology.devices, topology.matrix):
        row = [device.label, *(UNKNOWN if cell is None else cell for cell in cells)]
        if device.kind == "gpu":
            row += [_affinity(device.cpu_affinity), _affinity(device.numa_affinity),
                    NOT_AVAILABLE if device.numa_node is None else str(device.numa_node)]
        else:
            row += ["", "", ""]
        rows.append(row)
    section.table(header, rows, indent=1)


def _legends(section: Section, topology: Topology) -> None:
    style = section.style
    section.line(style.dim("Legend"))
    for word, meaning in LEGEND:
        section.line(f"{word:<5}= {meaning}", 2)
    for kind, title in (("nic", "NIC legend (RDMA devices)"), ("nvme", "NVMe legend")):
        listed = [d for d in topology.devices if d.kind == kind]
        if not listed:
            continue
        section.line(style.dim(title))
        for device in listed:
            where = ", ".join(str(part) for part in (
                device.pci_bus_id, device.model,
                None if device.numa_node is None else f"NUMA node {device.numa_node}") if part)
            section.line(f"{device.label}: {device.name}" + (f" ({where})" if where else ""), 2)


def _p2p(section: Section, pairs: list[GpuPair], style: Style) -> None:
    """GPU peer-to-peer reads and writes (nvidia-smi topo -p2p rw): one code where both agree."""
    indices = sorted({i for pair in pairs for i in pair.gpus})
    by_pair = {tuple(pair.gpus): pair for pair in pairs}
    rows = []
    for a in indices:
        row = [f"GPU{a}"]
        for b in indices:
            pair = by_pair.get((min(a, b), max(a, b)))
            row.append("X" if a == b else UNKNOWN if pair is None else _p2p_cell(pair))
        rows.append(row)
    section.line(style.dim("GPU peer-to-peer reads and writes"))
    section.table(["", *(f"GPU{i}" for i in indices)], rows, indent=2)
    shown = {code for row in rows for cell in row[1:] for code in cell.split()}
    section.wrapped("codes", [f"{code} = {meaning}" for code, meaning in P2P_WORDS.values()
                              if code in shown or f"r:{code}" in shown or f"w:{code}" in shown],
                    sep=" · ", indent=2)


def _p2p_cell(pair: GpuPair) -> str:
    read, write = (UNKNOWN if s is None else P2P_WORDS.get(s, (UNKNOWN,))[0]
                   for s in (pair.p2p_read, pair.p2p_write))
    return read if read == write else f"r:{read} w:{write}"
