"""The memory section: RAM, swap and huge pages."""

from __future__ import annotations

from hwinfo.escape import printable_copy
from hwinfo.model.memory import Memory
from hwinfo.render.text.layout import Section
from hwinfo.render.text.style import Style
from hwinfo.units import NA, or_na, percent, size


def share(part: int | None, whole: int | None) -> str:
    """" (45%)" of a whole; nothing where either is unknown or the whole is 0."""
    if part is None or not whole:
        return ""
    return f" ({percent(part / whole)})"


def render_memory(memory: Memory | None, style: Style) -> str:
    memory = printable_copy(memory)
    section = Section("Memory", style)
    if memory is None:
        return section.unavailable("memory")
    section.field("Total", or_na(memory.total_bytes, size))
    section.field(
        "Used",
        or_na(memory.used_bytes, size) + share(memory.used_bytes, memory.total_bytes),
    )
    section.field("Available", or_na(memory.available_bytes, size))
    section.field(
        "Buff/cache",
        NA
        if memory.buffers_bytes is None or memory.cached_bytes is None
        else size(memory.buffers_bytes + memory.cached_bytes),
    )
    if memory.swap_total_bytes is None:
        section.field("Swap", NA)
    elif memory.swap_total_bytes == 0:
        section.field("Swap", "none")
    else:
        section.field(
            "Swap",
            f"{or_na(memory.swap_used_bytes, size)} used of {or_na(memory.swap_total_bytes, size)}"
            + share(memory.swap_used_bytes, memory.swap_total_bytes),
        )
    pools = [p for p in memory.huge_pages if p.total or p.surplus]
    if not memory.huge_pages:
        # Every kernel with huge pages lists at least one pool size, reserved or not: no
        # pool at all means none could be read (or the kernel has no huge pages).
        section.field("Huge pages", NA)
    elif pools:
        for pool in pools:
            section.field(
                f"Huge {size(pool.page_size_bytes)}",
                f"{pool.total - pool.free} used of {pool.total} pages "
                f"({size(pool.total * pool.page_size_bytes)})",
            )
    else:
        section.field("Huge pages", "none reserved")
    return section.render()
