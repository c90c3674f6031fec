"""A disk's or NIC's PCIe link, as the storage and network sections write it."""

from __future__ import annotations

from hwinfo.model.pcie import PcieLinkStatus
from hwinfo.render.text.style import Style
from hwinfo.units import pcie_link


def link_text(link: PcieLinkStatus, style: Style) -> str:
    """"PCIe gen4 x4 of gen4 x4"; fewer lanes than the device and slot allow is a fault, said."""
    text = f"PCIe {pcie_link(link.generation, link.width)} of " \
           f"{pcie_link(link.max_generation, link.max_width)}"
    narrow = link.width is not None and link.max_width is not None and link.width < link.max_width
    return style.warn(text + " (degraded)") if narrow else text
