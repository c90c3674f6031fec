"""The PCI function a disk or NIC hangs off: its address, NUMA node and PCIe link, from sysfs.

A device's directory under sys/devices is below its PCI function's: the function is the last
path component shaped like a PCI address (domain:bus:device.function). What the kernel says of
it is in that directory (Documentation/ABI/testing/sysfs-bus-pci).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hwinfo.collect.sysfs import Root
from hwinfo.inputs import decimal
from hwinfo.model.pcie import PcieLinkStatus

_ADDRESS = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
# The transfer rate of each PCIe generation, as current_link_speed writes it ("16.0 GT/s PCIe";
# kernels before 4.19 wrote "8 GT/s", before 5.x "8.0 GT/s").
_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}
_SPEED = re.compile(r"(\d{1,3}(?:\.\d{1,2})?) GT/s")


class PciFunction(NamedTuple):
    """Where a device sits: its PCI function's address and directory below the root."""

    address: str  # 0000:5e:00.0
    path: str  # sys/devices/pci0000:5d/0000:5d:02.0/0000:5e:00.0


def function_of(path: str | None) -> PciFunction | None:
    """The PCI function nearest below a device's resolved sysfs path (Root.resolve)."""
    if path is None:
        return None
    parts = path.split("/")
    for end in range(len(parts), 0, -1):
        if _ADDRESS.fullmatch(parts[end - 1]):
            return PciFunction(parts[end - 1], "/".join(parts[:end]))
    return None


def numa_node(root: Root, function: PciFunction | None) -> int | None:
    """The function's NUMA node; None where the kernel says -1 (one node, or not known)."""
    if function is None:
        return None
    value = root.attribute(f"{function.path}/numa_node")
    return None if value is None else decimal(value)


def generation(speed: str | None) -> int | None:
    """The PCIe generation of a link speed as sysfs writes it; None for "Unknown" and the like."""
    match = _SPEED.match(speed or "")
    return _GENERATIONS.get(float(match.group(1))) if match else None


def link(root: Root, function: PciFunction | None) -> PcieLinkStatus | None:
    """The function's PCIe link; None where sysfs has none (a virtual function, a non-PCIe bus)."""
    if function is None:
        return None

    def read(name: str) -> str | None:
        return root.attribute(f"{function.path}/{name}")

    status = PcieLinkStatus(
        generation=generation(read("current_link_speed")),
        max_generation=generation(read("max_link_speed")),
        width=_width(read("current_link_width")),
        max_width=_width(read("max_link_width")),
    )
    return None if status == PcieLinkStatus(None, None, None, None) else status


def _width(text: str | None) -> int | None:
    """Lanes; 0 (a link that is down) is not a width."""
    value = None if text is None else decimal(text)
    return value or None
