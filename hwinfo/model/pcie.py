"""The PCIe link of a device that is not a GPU (an NVMe disk, a NIC), as sysfs gives it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PcieLinkStatus:
    """The link now and the most the device and its slot allow, as the GPU's `pcie` names them."""

    generation: int | None  # from current_link_speed: 2.5 GT/s is 1, 64 GT/s is 6
    max_generation: int | None  # from max_link_speed
    width: int | None  # lanes, current_link_width
    max_width: int | None
