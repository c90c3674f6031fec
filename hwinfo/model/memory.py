"""System memory, swap and huge pages."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class HugePagePool:
    page_size_bytes: int
    total: int
    free: int
    reserved: int | None
    surplus: int | None


@dataclass
class Memory:
    total_bytes: int | None
    available_bytes: int | None
    # As free(1) of procps 4 computes it: total - available.
    used_bytes: int | None
    free_bytes: int | None
    buffers_bytes: int | None
    cached_bytes: int | None  # page cache + reclaimable slab, as free(1)'s buff/cache less buffers
    swap_total_bytes: int | None
    swap_used_bytes: int | None
    swap_free_bytes: int | None
    huge_pages: list[HugePagePool] = field(default_factory=list)
