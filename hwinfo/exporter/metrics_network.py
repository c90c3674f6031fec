"""Network inventory metrics: what each interface is and where it sits, and each RDMA port.

Interfaces without a device (veth, tun) and bridges are left out: a container host makes and
removes them with its containers, and each would be a new series. node_exporter's
node_network_* counters have the traffic; these series join them on `device`.
"""

from __future__ import annotations

from collections.abc import Iterator

from hwinfo.exporter.metric import Metric, Sample, each, flag
from hwinfo.exporter.metrics_storage import pcie_metrics, text
from hwinfo.model.network import NetInterface, RdmaDevice, RdmaPort
from hwinfo.model.snapshot import Snapshot

_EXPORTED_KINDS = ("physical", "vf", "bond", "vlan")


def _interfaces(s: Snapshot) -> list[NetInterface]:
    interfaces = s.network.interfaces if s.network else []
    return [i for i in interfaces if i.kind in _EXPORTED_KINDS]


def _info(s: Snapshot) -> Iterator[Sample]:
    for i in _interfaces(s):
        yield (i.name, text(i.kind), text(i.driver), text(i.master), text(i.link_type),
               text(i.pci_address), text(i.numa_node)), 1.0


def _up(operstate: str | None) -> bool | None:
    return None if operstate is None else operstate == "up"


def _ports(s: Snapshot) -> list[tuple[RdmaDevice, RdmaPort]]:
    return [(d, p) for d in (s.network.rdma_devices if s.network else []) for p in d.ports]


def _port_labels(pair: tuple[RdmaDevice, RdmaPort]) -> tuple[str, str]:
    return pair[0].name, str(pair[1].port)


def _port_info(s: Snapshot) -> Iterator[Sample]:
    for device, port in _ports(s):
        yield (device.name, str(port.port), text(port.link_layer), text(port.netdev),
               text(device.hca_type), text(device.pci_address), text(device.numa_node)), 1.0


METRICS: tuple[Metric, ...] = (
    Metric(
        "network_info",
        "info",
        "A network interface (a NIC, SR-IOV function, bond or VLAN): its driver, the bond it "
        "is in, its link type, and the PCI function and NUMA node it sits on.",
        ("device", "kind", "driver", "master", "link_type", "pci_address", "numa_node"),
        "network.interfaces[]",
        _info,
    ),
    Metric(
        "network_up",
        "gauge",
        "1 when an interface's operstate is up.",
        ("device",),
        "network.interfaces[].operstate",
        lambda s: each(_interfaces(s), lambda i: (i.name,), lambda i: flag(_up(i.operstate))),
    ),
    Metric(
        "network_speed_bytes_per_second",
        "gauge",
        "An interface's negotiated link rate.",
        ("device",),
        "network.interfaces[].speed_bytes_per_second",
        lambda s: each(_interfaces(s), lambda i: (i.name,), lambda i: i.speed_bytes_per_second),
    ),
    Metric(
        "network_mtu_bytes",
        "gauge",
        "An interface's MTU.",
        ("device",),
        "network.interfaces[].mtu_bytes",
        lambda s: each(_interfaces(s), lambda i: (i.name,), lambda i: i.mtu_bytes),
    ),
    *pcie_metrics("network", _interfaces, lambda i: (i.name,), lambda i: i.pcie,
                  "network.interfaces[].pcie"),
    Metric(
        "rdma_port_info",
        "info",
        "An RDMA port: InfiniBand or Ethernet (RoCE), the interface it backs, its card, and "
        "the PCI function and NUMA node it sits on.",
        ("device", "port", "link_layer", "netdev", "hca_type", "pci_address", "numa_node"),
        "network.rdma_devices[].ports[]",
        _port_info,
    ),
    Metric(
        "rdma_port_up",
        "gauge",
        "1 when an RDMA port's state is ACTIVE.",
        ("device", "port"),
        "network.rdma_devices[].ports[].state",
        lambda s: each(_ports(s), _port_labels,
                       lambda p: flag(None if p[1].state is None else p[1].state == "ACTIVE")),
    ),
    Metric(
        "rdma_port_rate_bytes_per_second",
        "gauge",
        "An RDMA port's rate.",
        ("device", "port"),
        "network.rdma_devices[].ports[].rate_bytes_per_second",
        lambda s: each(_ports(s), _port_labels, lambda p: p[1].rate_bytes_per_second),
    ),
)
