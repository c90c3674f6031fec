"""Host, CPU and memory metrics."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hwinfo.exporter.metric import Metric, Sample, each
from hwinfo.model.memory import HugePagePool
from hwinfo.model.snapshot import Snapshot

_LOAD_WINDOWS = ("1", "5", "15")


def _host_info(s: Snapshot) -> Iterator[Sample]:
    h = s.host
    yield (
        (
            h.hostname,
            h.os_name or "",
            h.kernel_release or "",
            h.architecture or "",
            h.virtualization or "",
            h.container or "",
        ),
        1.0,
    )


def _cpu_info(s: Snapshot) -> Iterator[Sample]:
    c = s.cpu
    if c is None:
        return
    yield (
        tuple(
            "" if v is None else str(v)
            for v in (
                c.vendor,
                c.model_name,
                c.family,
                c.model,
                c.stepping,
                c.microcode,
                c.architecture,
            )
        ),
        1.0,
    )


def _section_field(section: str, field: str) -> Callable[[Snapshot], Iterator[Sample]]:
    """One unlabelled value: snapshot.<section>.<field>, absent when either is unknown."""

    def read(s: Snapshot) -> Iterator[Sample]:
        part = getattr(s, section)
        return each([part] if part else [], lambda _: (), lambda p: getattr(p, field))

    return read


def _caches(s: Snapshot, value: Callable[[Any], Any]) -> Iterator[Sample]:
    caches = s.cpu.caches if s.cpu else []
    return each(caches, lambda c: (str(c.level), c.type, c.scope or ""), value)


def _numa(s: Snapshot, value: Callable[[Any], Any]) -> Iterator[Sample]:
    nodes = s.cpu.numa_nodes if s.cpu else []
    return each(nodes, lambda n: (str(n.id),), value)


def _hugepages(field: str) -> Callable[[Snapshot], Iterator[Sample]]:
    def read(s: Snapshot) -> Iterator[Sample]:
        pools: list[HugePagePool] = s.memory.huge_pages if s.memory else []
        return each(pools, lambda p: (str(p.page_size_bytes),), lambda p: getattr(p, field))

    return read


def _load(s: Snapshot) -> Iterator[Sample]:
    loads = s.cpu.load_average if s.cpu and s.cpu.load_average else []
    return each(zip(_LOAD_WINDOWS, loads), lambda p: (p[0],), lambda p: p[1])


def _busy(s: Snapshot) -> Iterator[Sample]:
    ratios = s.cpu.utilization_ratio if s.cpu else []
    if ratios:
        yield (), sum(ratios) / len(ratios)


def _cpu_field(name: str, field: str, help: str) -> Metric:
    return Metric(name, "gauge", help, (), f"cpu.{field}", _section_field("cpu", field))


def _memory_field(name: str, field: str, help: str) -> Metric:
    return Metric(name, "gauge", help, (), f"memory.{field}", _section_field("memory", field))


METRICS: tuple[Metric, ...] = (
    Metric(
        "host_info",
        "info",
        "The host: name, OS, kernel, hypervisor and container runtime.",
        ("hostname", "os", "kernel", "architecture", "virtualization", "container"),
        "host",
        _host_info,
    ),
    Metric(
        "host_boot_time_seconds",
        "gauge",
        "When the host booted, as Unix time.",
        (),
        "host.boot_time_seconds",
        lambda s: each([s.host], lambda _: (), lambda h: h.boot_time_seconds),
    ),
    Metric(
        "cpu_info",
        "info",
        "The CPU model.",
        ("vendor", "model_name", "family", "model", "stepping", "microcode", "architecture"),
        "cpu.vendor, cpu.model_name, ...",
        _cpu_info,
    ),
    _cpu_field("cpu_sockets", "sockets", "CPU sockets (packages)."),
    _cpu_field("cpu_cores", "cores", "Physical CPU cores in all sockets."),
    _cpu_field("cpu_logical_cpus", "logical_cpus", "Online logical CPUs."),
    _cpu_field("cpu_threads_per_core", "threads_per_core", "Hardware threads per core (SMT)."),
    _cpu_field("cpu_frequency_base_hertz", "frequency_base_hertz", "Base CPU frequency."),
    _cpu_field("cpu_frequency_min_hertz", "frequency_min_hertz", "Lowest CPU frequency."),
    _cpu_field("cpu_frequency_max_hertz", "frequency_max_hertz", "Highest CPU frequency."),
    _cpu_field(
        "cpu_frequency_current_hertz",
        "frequency_current_hertz",
        "Current CPU frequency, mean over online CPUs.",
    ),
    Metric(
        "cpu_cache_size_bytes",
        "gauge",
        "Size of one instance of a CPU cache.",
        ("level", "type", "scope"),
        "cpu.caches[].size_bytes",
        lambda s: _caches(s, lambda c: c.size_bytes),
    ),
    Metric(
        "cpu_cache_instances",
        "gauge",
        "How many instances of a CPU cache the machine has.",
        ("level", "type", "scope"),
        "cpu.caches[].instances",
        lambda s: _caches(s, lambda c: c.instances),
    ),
    Metric(
        "cpu_flag_info",
        "info",
        "An ISA extension that matters for ML work is present.",
        ("flag",),
        "cpu.ml_flags[]",
        lambda s: each(s.cpu.ml_flags if s.cpu else [], lambda f: (f,), lambda _: 1),
    ),
    Metric(
        "cpu_busy_ratio",
        "gauge",
        "Share of time the CPUs were busy over the last sample.",
        (),
        "cpu.utilization_ratio[] (mean)",
        _busy,
    ),
    Metric(
        "cpu_load_average",
        "gauge",
        "Load average over 1, 5 and 15 minutes.",
        ("minutes",),
        "cpu.load_average[]",
        _load,
    ),
    Metric(
        "numa_node_memory_total_bytes",
        "gauge",
        "Memory of a NUMA node.",
        ("node",),
        "cpu.numa_nodes[].memory_total_bytes",
        lambda s: _numa(s, lambda n: n.memory_total_bytes),
    ),
    Metric(
        "numa_node_memory_free_bytes",
        "gauge",
        "Free memory of a NUMA node.",
        ("node",),
        "cpu.numa_nodes[].memory_free_bytes",
        lambda s: _numa(s, lambda n: n.memory_free_bytes),
    ),
    Metric(
        "numa_node_cpus",
        "gauge",
        "Logical CPUs of a NUMA node.",
        ("node",),
        "cpu.numa_nodes[].cpus",
        lambda s: _numa(s, lambda n: len(n.cpus)),
    ),
    _memory_field("memory_total_bytes", "total_bytes", "Physical memory (MemTotal)."),
    _memory_field(
        "memory_available_bytes",
        "available_bytes",
        "Memory available for new work without swapping (MemAvailable).",
    ),
    _memory_field("memory_used_bytes", "used_bytes", "Memory in use: total - available."),
    _memory_field("memory_free_bytes", "free_bytes", "Unused memory (MemFree)."),
    _memory_field("memory_buffers_bytes", "buffers_bytes", "Kernel buffers."),
    _memory_field("memory_cached_bytes", "cached_bytes", "Page cache and reclaimable slab."),
    _memory_field("swap_total_bytes", "swap_total_bytes", "Swap space."),
    _memory_field("swap_used_bytes", "swap_used_bytes", "Swap in use."),
    _memory_field("swap_free_bytes", "swap_free_bytes", "Free swap."),
    Metric(
        "memory_hugepages",
        "gauge",
        "Huge pages reserved in a pool.",
        ("page_size_bytes",),
        "memory.huge_pages[].total",
        _hugepages("total"),
    ),
    Metric(
        "memory_hugepages_free",
        "gauge",
        "Free huge pages in a pool.",
        ("page_size_bytes",),
        "memory.huge_pages[].free",
        _hugepages("free"),
    ),
)
