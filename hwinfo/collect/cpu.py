"""The CPU collector: static inventory read once, load and clocks on every collect()."""

from __future__ import annotations

import os
from dataclasses import replace
from time import monotonic, sleep

from hwinfo.collect import cpu_load
from hwinfo.collect.cpu_caches import read_caches
from hwinfo.collect.cpu_flags import ml_flags
from hwinfo.collect.cpu_frequency import (
    base_frequency,
    current_frequency,
    max_frequency,
    min_frequency,
)
from hwinfo.collect.cpu_info import architecture, parse_cpuinfo, read_identity
from hwinfo.collect.cpu_load import busy_ratios, parse_cpu_times, parse_load_average
from hwinfo.collect.cpu_topology import online_cpus, read_topology
from hwinfo.collect.numa import node_cpus, node_ids, node_memory_bytes
from hwinfo.collect.sysfs import Root, is_live
from hwinfo.model.cpu import Cpu, NumaNode


class CpuCollector:
    """Keeps the CPU inventory (read once; a daemon holds this for days) and the last CPU times."""

    def __init__(self, root: Root, min_window_seconds: float = 0.05) -> None:
        self.root = root
        self.min_window_seconds = min_window_seconds
        live = is_live(root)
        # The first end of the first utilization window: this machine's as the process
        # started (cpu_load.note_start), so a fresh report's window spans its whole run;
        # else now, before the inventory, whose reading then overlaps the window.
        first = cpu_load.at_start() if live else None
        if first is None:
            first = monotonic(), parse_cpu_times(root.read_text("proc/stat"))
        self.times_at, self.times = first
        cpuinfo = root.read_text("proc/cpuinfo")
        blocks = parse_cpuinfo(cpuinfo or "")
        identity = read_identity(blocks, use_py_cpuinfo=live and cpuinfo is None)
        self.cpus = online_cpus(root, blocks)
        topology = read_topology(root, self.cpus, blocks)
        logical = len(self.cpus) or None
        if logical is None and live:
            logical = os.cpu_count()  # no procfs or sysfs (macOS): the OS's own count
        self.inventory = Cpu(
            vendor=identity.vendor,
            model_name=identity.model_name,
            family=identity.family,
            model=identity.model,
            stepping=identity.stepping,
            microcode=identity.microcode,
            architecture=architecture(blocks, live),
            sockets=topology.sockets,
            cores=topology.core_count,
            logical_cpus=logical,
            threads_per_core=topology.threads_per_core,
            frequency_base_hertz=base_frequency(root, self.cpus),
            frequency_min_hertz=min_frequency(root, self.cpus),
            frequency_max_hertz=max_frequency(root, self.cpus),
            frequency_current_hertz=None,
            caches=read_caches(root, self.cpus, topology),
            flags=identity.flags,
            ml_flags=ml_flags(identity.flags),
        )
        self.node_cpus = {node: node_cpus(root, node) for node in node_ids(root)}

    def _utilization(self) -> list[float]:
        """Busy ratios since the previous reading, waiting until the window is long enough."""
        remaining = self.min_window_seconds - (monotonic() - self.times_at)
        if remaining > 0:
            sleep(remaining)
        times = parse_cpu_times(self.root.read_text("proc/stat"))
        ratios = busy_ratios(self.times, times)
        self.times, self.times_at = times, monotonic()
        return ratios

    def _numa_nodes(self) -> list[NumaNode]:
        return [
            NumaNode(node, list(cpus), *node_memory_bytes(self.root, node))
            for node, cpus in self.node_cpus.items()
        ]

    def collect(self) -> Cpu:
        """A new Cpu: the inventory (copied, so callers may change it) and the current load."""
        inv = self.inventory
        return replace(
            inv,
            caches=[replace(cache) for cache in inv.caches],
            flags=list(inv.flags),
            ml_flags=list(inv.ml_flags),
            frequency_current_hertz=current_frequency(self.root, self.cpus),
            numa_nodes=self._numa_nodes(),
            utilization_ratio=self._utilization(),
            load_average=parse_load_average(self.root.read_text("proc/loadavg")),
        )
