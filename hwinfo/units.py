"""Human units for the text report; every formatter turns None into "not available"."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

NA = "not available"

T = TypeVar("T")

_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def or_na(value: T | None, fmt: Callable[[T], str]) -> str:
    return NA if value is None else fmt(value)


def size(n: float) -> str:
    """Bytes in IEC units with three significant digits: 1536 -> "1.50 KiB"."""
    value = float(n)
    for unit in _IEC:
        if abs(value) < 1024 or unit == _IEC[-1]:
            break
        value /= 1024
    if unit == "B":
        return f"{int(value)} B"
    digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
    return f"{value:.{digits}f} {unit}"


def size_short(n: float) -> str:
    """Bytes as a compact whole number of the largest fitting unit: "79G", "512M", for tables."""
    value = float(n)
    for unit in "BKMGTP":
        if abs(value) < 1024 or unit == "P":
            break
        value /= 1024
    return f"{value:.0f}{unit}" if value >= 10 or unit == "B" else f"{value:.1f}{unit}"


def pcie_link(gen: int | None, width: int | None) -> str:
    """A PCIe link as the report writes it: "gen4 x16"."""
    if gen is None and width is None:
        return NA
    return f"gen{or_na(gen, str)} x{or_na(width, str)}"


def link_rate(bytes_per_second: float) -> str:
    """A network link's rate in the bits per second it is sold by: "25 Gb/s", "100 Mb/s"."""
    bits = bytes_per_second * 8
    if abs(bits) >= 1e9:
        return f"{bits / 1e9:.4g} Gb/s"
    return f"{bits / 1e6:.4g} Mb/s"


def frequency(hz: float) -> str:
    if hz >= 1e9:
        return f"{hz / 1e9:.2f} GHz"
    return f"{hz / 1e6:.0f} MHz"


def celsius(t: float) -> str:
    return f"{t:.0f}°C"


def watts(w: float) -> str:
    return f"{w:.0f} W"


def percent(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"


def duration(seconds: float) -> str:
    """Uptime style: "3 d 4 h", "5 h 12 min", "42 s"."""
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min"
    return f"{s} s"
