"""CPU clock frequencies from sysfs cpufreq, or /proc/cpuinfo's "cpu MHz" without it."""

from __future__ import annotations

from hwinfo.collect.cpu_info import parse_cpuinfo
from hwinfo.collect.cpu_topology import CPU_DIR
from hwinfo.collect.sysfs import Root


def _cpufreq_hertz(root: Root, cpus: list[int], name: str) -> list[float]:
    """One cpufreq file (in kHz) of every CPU that has it, in Hz."""
    values = (root.read_int(f"{CPU_DIR}/cpu{cpu}/cpufreq/{name}") for cpu in cpus)
    return [khz * 1000.0 for khz in values if khz is not None]


def base_frequency(root: Root, cpus: list[int]) -> float | None:
    """The guaranteed (non-turbo) clock; intel_pstate publishes it, most other drivers do not."""
    # The fastest cores' figure, as on a datasheet, where core types differ.
    return max(_cpufreq_hertz(root, cpus, "base_frequency"), default=None)


def min_frequency(root: Root, cpus: list[int]) -> float | None:
    return min(_cpufreq_hertz(root, cpus, "cpuinfo_min_freq"), default=None)


def max_frequency(root: Root, cpus: list[int]) -> float | None:
    """The highest clock any core reaches (turbo included), lscpu's "CPU max MHz"."""
    return max(_cpufreq_hertz(root, cpus, "cpuinfo_max_freq"), default=None)


def current_frequency(root: Root, cpus: list[int]) -> float | None:
    """The mean current clock of the online CPUs."""
    values = _cpufreq_hertz(root, cpus, "scaling_cur_freq")
    if not values:
        # Without a cpufreq driver (most VMs), x86 kernels still print a clock per CPU here.
        blocks = parse_cpuinfo(root.read_text("proc/cpuinfo") or "")
        values = [mhz * 1e6 for b in blocks if (mhz := _float(b.get("cpu MHz"))) is not None]
    return sum(values) / len(values) if values else None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
