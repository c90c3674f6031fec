"""The CPU section: identity, topology, clocks, caches, ML flags, NUMA layout and load."""

from __future__ import annotations

from hwinfo.cpulist import format_cpulist
from hwinfo.escape import printable_copy
from hwinfo.model.cpu import Cache, Cpu, NumaNode
from hwinfo.render.text.layout import INDENT, LABEL_WIDTH, Section
from hwinfo.render.text.style import Style
from hwinfo.units import NA, frequency, or_na, percent, size

WIDTH = 80
# Where a field's value starts, and so how much room it has.
VALUE_COLUMN = len(INDENT) + LABEL_WIDTH + 1


def fill(pieces: list[str], width: int) -> list[str]:
    """Greedy line filling of pieces that carry their own separators ("AVX ", "0-3,")."""
    lines: list[str] = []
    for piece in pieces:
        if lines and len(lines[-1] + piece.rstrip()) <= width:
            lines[-1] += piece
        else:
            lines.append(piece)
    return [line.rstrip() for line in lines]


def _continued(section: Section, label: str, lines: list[str]) -> None:
    """A field whose value runs over several lines, continued under the value column."""
    section.field(label, lines[0])
    for line in lines[1:]:
        section.line(" " * (VALUE_COLUMN - len(INDENT)) + line)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _identity(cpu: Cpu) -> str:
    """Vendor and the numbers that tell steppings apart: CPUID on x86, MIDR fields on Arm."""
    if (cpu.architecture or "").startswith(("aarch64", "arm")):
        parts = [
            cpu.model is not None and f"part {cpu.model:#05x}",
            cpu.stepping is not None and f"revision {cpu.stepping}",
        ]
    else:
        parts = [
            cpu.family is not None and f"family {cpu.family}",
            cpu.model is not None and f"model {cpu.model}",
            cpu.stepping is not None and f"stepping {cpu.stepping}",
        ]
    return " · ".join([cpu.vendor or NA] + [p for p in parts if p])


def _topology(cpu: Cpu) -> str:
    parts = [
        cpu.sockets and _count(cpu.sockets, "socket"),
        cpu.cores and _count(cpu.cores, "core"),
        cpu.logical_cpus and _count(cpu.logical_cpus, "thread"),
        cpu.threads_per_core and _count(cpu.threads_per_core, "thread") + " per core",
    ]
    return " · ".join(p for p in parts if p) or NA


def _frequencies(cpu: Cpu) -> str:
    parts = [
        (name, hz)
        for name, hz in (
            ("base", cpu.frequency_base_hertz),
            ("max", cpu.frequency_max_hertz),
            ("current", cpu.frequency_current_hertz),
        )
        if hz is not None
    ]
    return " · ".join(f"{name} {frequency(hz)}" for name, hz in parts) or NA


def cache_lines(caches: list[Cache]) -> list[str]:
    """One line per cache: "L2   2.00 MiB per core × 56 = 112 MiB", sizes aligned."""
    sizes = [or_na(c.size_bytes, size) for c in caches]
    width = max(map(len, sizes), default=0)
    lines = []
    for cache, one in zip(caches, sizes):
        line = f"{cache.name:<4} {one:>{width}}"
        if cache.instances is not None:
            total = or_na(cache.total_bytes, size)
            line += f" per {cache.scope or 'instance'} × {cache.instances} = {total}"
        lines.append(line)
    return lines


def _numa_table(section: Section, nodes: list[NumaNode]) -> None:
    """Node, memory and CPUs; the CPU list, last, wraps to stay inside the terminal."""
    header = ["node", "total", "free", "CPUs"]
    rows = [
        [str(n.id), or_na(n.memory_total_bytes, size), or_na(n.memory_free_bytes, size)]
        for n in nodes
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    room = WIDTH - len(INDENT) * 2 - sum(widths) - 2 * len(widths)
    table: list[list[str]] = []
    for node, row in zip(nodes, rows):
        ranges = format_cpulist(node.cpus).split(",") if node.cpus else ["none"]
        cpu_lines = fill([r + "," for r in ranges[:-1]] + ranges[-1:], room)
        table.append(row + cpu_lines[:1])
        table.extend(["", "", "", more] for more in cpu_lines[1:])
    section.table(header, table, right=[True, True, True, False], indent=2)


def render_cpu(cpu: Cpu | None, style: Style) -> str:
    cpu = printable_copy(cpu)
    section = Section("CPU", style)
    if cpu is None:
        return section.unavailable("CPU")
    section.field("Model", cpu.model_name or NA)
    section.field("Vendor", _identity(cpu))
    section.field("Microcode", cpu.microcode or NA)
    section.field("Architecture", cpu.architecture or NA)
    section.field("Topology", _topology(cpu))
    section.field("Frequency", _frequencies(cpu))
    _continued(section, "Caches", cache_lines(cpu.caches) or [NA])
    room = WIDTH - VALUE_COLUMN
    if not cpu.flags:
        section.field("ML flags", NA)
    else:
        _continued(section, "ML flags", fill([f + " " for f in cpu.ml_flags], room) or ["none"])
    if cpu.numa_nodes:
        section.field("NUMA nodes", str(len(cpu.numa_nodes)))
        _numa_table(section, cpu.numa_nodes)
    else:
        section.field("NUMA nodes", NA)
    section.field(
        "Load average",
        or_na(cpu.load_average, lambda avg: ", ".join(f"{a:.2f}" for a in avg) + " (1, 5, 15 min)"),
    )
    ratios = cpu.utilization_ratio
    section.field(
        "Utilization",
        f"{percent(sum(ratios) / len(ratios))} overall · busiest CPU {percent(max(ratios))}"
        if ratios
        else NA,
    )
    return section.render()
