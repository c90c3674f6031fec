"""The network section: interfaces, their bonds and bridges, and RDMA ports."""

from __future__ import annotations

from hwinfo.escape import printable_copy
from hwinfo.model.network import NetInterface, Network, RdmaDevice, RdmaPort
from hwinfo.render.text.layout import Section
from hwinfo.render.text.pcie import link_text
from hwinfo.render.text.style import Style
from hwinfo.units import NA, link_rate

_SEP = " · "
# Interfaces without a device (veth, tun, ifb, ...) are named on one line; a container host
# has one per container, so past this many only their count is given.
_VIRTUAL_NAMED = 12
_LINK_TYPES = {"infiniband": "InfiniBand"}


def _state(interface: NetInterface, style: Style) -> str:
    state = interface.operstate or NA
    return style.good(state) if state == "up" else style.warn(state) if state == "down" else state


def _interface(interface: NetInterface, style: Style) -> str:
    kind = interface.kind or "interface"
    if interface.kind in ("bond", "bridge"):
        mode = f" {interface.bond_mode}" if interface.bond_mode else ""
        kind += f"{mode} of {', '.join(interface.members) or 'no interfaces'}"
    elif interface.parent:
        kind += f" on {interface.parent}"
    parts = [kind]
    if interface.driver and interface.kind in ("physical", "vf"):
        parts.append(interface.driver)
    if interface.link_type and interface.link_type != "ethernet":
        parts.append(_LINK_TYPES.get(interface.link_type, f"link type {interface.link_type}"))
    parts.append(_state(interface, style))
    if interface.speed_bytes_per_second is not None:
        parts.append(link_rate(interface.speed_bytes_per_second))
    if interface.mtu_bytes is not None:
        parts.append(f"MTU {interface.mtu_bytes}")
    if interface.master:
        parts.append(f"in {interface.master}")
    if interface.mac_address:
        parts.append(interface.mac_address)
    if interface.pci_address:
        parts.append(interface.pci_address)
    if interface.numa_node is not None:
        parts.append(f"NUMA {interface.numa_node}")
    if interface.pcie is not None:
        parts.append(link_text(interface.pcie, style))
    return _SEP.join(parts)


def _virtual(interfaces: list[NetInterface]) -> list[str]:
    named = [f"{i.name} ({i.operstate or NA})" for i in interfaces[:_VIRTUAL_NAMED]]
    rest = len(interfaces) - len(named)
    return named + ([f"+{rest} more"] if rest > 0 else [])


def _port(device: RdmaDevice, port: RdmaPort, style: Style) -> str:
    state = ", ".join(s for s in (port.state, port.physical_state) if s) or NA
    parts = [port.link_layer or NA,
             style.good(state) if port.state == "ACTIVE" else style.warn(state),
             port.rate or NA, f"netdev {port.netdev or NA}"]
    if device.numa_node is not None:
        parts.append(f"NUMA {device.numa_node}")
    if device.pci_address:
        parts.append(device.pci_address)
    identity = " ".join(p for p in (device.hca_type, device.firmware and f"fw {device.firmware}")
                        if p)
    if identity:
        parts.append(identity)
    return _SEP.join(parts)


def render_network(network: Network | None, style: Style) -> str:
    network = printable_copy(network)
    section = Section("Network", style)
    if network is None:
        return section.unavailable("network")
    virtual = [i for i in network.interfaces if i.kind == "virtual"]
    for interface in network.interfaces:
        if interface.kind != "virtual":
            section.field(interface.name, _interface(interface, style))
    if virtual:
        section.wrapped("Virtual", _virtual(virtual), sep=", ")
    if not network.interfaces:
        section.field("Interfaces", "none but loopback")
    if network.rdma_devices:
        section.line("RDMA")
        for device in network.rdma_devices:
            for port in device.ports:
                section.field(f"{device.name} port {port.port}", _port(device, port, style),
                              indent=2)
            if not device.ports:
                section.field(device.name, "no ports", indent=2)
    return section.render()
