"""Online CPUs, and which of them form each physical core and each socket."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hwinfo.collect.sysfs import Root
from hwinfo.cpulist import parse_cpulist
from hwinfo.inputs import decimal

CPU_DIR = "sys/devices/system/cpu"


@dataclass(frozen=True)
class Topology:
    """The online CPUs grouped by core and by package; the groups are empty when unknown."""

    cores: list[frozenset[int]] = field(default_factory=list)  # one set of SMT siblings per core
    packages: list[frozenset[int]] = field(default_factory=list)

    @property
    def sockets(self) -> int | None:
        return len(self.packages) or None

    @property
    def core_count(self) -> int | None:
        return len(self.cores) or None

    @property
    def threads_per_core(self) -> int | None:
        # The widest core, as lscpu reports it on hybrid parts where only some cores have SMT.
        return max((len(core) for core in self.cores), default=None)


def read_cpulist(root: Root, rel: str) -> list[int] | None:
    """A CPU list file such as .../online; None when absent or malformed."""
    text = root.read_value(rel)
    if text is None:
        return None
    try:
        return parse_cpulist(text)
    except ValueError:
        return None


def online_cpus(root: Root, blocks: list[dict[str, str]]) -> list[int]:
    """The online logical CPUs, as nproc counts them without an affinity mask."""
    cpus = read_cpulist(root, f"{CPU_DIR}/online")
    if cpus is not None:
        return cpus
    # /proc/cpuinfo lists exactly the online CPUs.
    return sorted(n for b in blocks if (n := decimal(b["processor"])) is not None)


def _sibling_groups(root: Root, cpus: list[int], names: tuple[str, str]) -> list[frozenset[int]]:
    """Distinct groups from a per-CPU topology list file (its current name, then the older one)."""
    online = frozenset(cpus)
    groups: list[frozenset[int]] = []
    covered: set[int] = set()
    for cpu in cpus:
        # A CPU already in a group has the same file content as the group's first member.
        if cpu in covered:
            continue
        members = None
        for name in names:
            members = read_cpulist(root, f"{CPU_DIR}/cpu{cpu}/topology/{name}")
            if members is not None:
                break
        if members is None:
            return []
        group = frozenset(members) & online
        groups.append(group)
        covered |= group
    return groups


def sysfs_topology(root: Root, cpus: list[int]) -> Topology:
    """Cores and packages from sys/devices/system/cpu/cpuN/topology; empty if any CPU lacks it."""
    cores = _sibling_groups(root, cpus, ("core_cpus_list", "thread_siblings_list"))
    packages = _sibling_groups(root, cpus, ("package_cpus_list", "core_siblings_list"))
    if not cores or not packages:
        return Topology()
    return Topology(cores=cores, packages=packages)


def cpuinfo_topology(blocks: list[dict[str, str]]) -> Topology:
    """Cores and packages from x86 /proc/cpuinfo's "physical id" and "core id"."""
    cores: dict[tuple[str, str], set[int]] = defaultdict(set)
    packages: dict[str, set[int]] = defaultdict(set)
    for block in blocks:
        package, core, cpu = block.get("physical id"), block.get("core id"), block["processor"]
        number = decimal(cpu)
        if package is None or core is None or number is None:
            return Topology()
        cores[(package, core)].add(number)
        packages[package].add(number)
    return Topology(
        cores=[frozenset(c) for c in cores.values()],
        packages=[frozenset(p) for p in packages.values()],
    )


def read_topology(root: Root, cpus: list[int], blocks: list[dict[str, str]]) -> Topology:
    """sysfs where the kernel provides it, else /proc/cpuinfo (which has it on x86 only)."""
    topology = sysfs_topology(root, cpus)
    return topology if topology.cores else cpuinfo_topology(blocks)
