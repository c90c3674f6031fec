"""The memory section: a fact not read is "not available", never "none"."""

from __future__ import annotations

import dataclasses

from hwinfo.model.memory import HugePagePool, Memory
from hwinfo.render.text.memory import render_memory
from hwinfo.render.text.style import Style

GIB = 1 << 30
MEMORY = Memory(total_bytes=64 * GIB, available_bytes=48 * GIB, used_bytes=16 * GIB, free_bytes=40 * GIB,
                buffers_bytes=GIB, cached_bytes=7 * GIB, swap_total_bytes=0, swap_used_bytes=0,
                swap_free_bytes=0, huge_pages=[HugePagePool(2 << 20, 0, 0, 0, 0)])


def _field(memory: Memory, label: str) -> str:
    text = render_memory(memory, Style(color=False))
    (line,) = [line for line in text.splitlines() if line.strip().startswith(label)]
    return line.split(label, 1)[1].strip()


def test_no_swap_and_no_reserved_huge_pages_are_read_facts() -> None:
    assert _field(MEMORY, "Swap") == "none"
    assert _field(MEMORY, "Huge pages") == "none reserved"


def test_unread_swap_and_huge_pages_are_not_available() -> None:
    unread = dataclasses.replace(MEMORY, swap_total_bytes=None, swap_used_bytes=None, huge_pages=[])
    assert _field(unread, "Swap") == "not available"
    assert _field(unread, "Huge pages") == "not available"


def test_reserved_huge_pages_are_counted() -> None:
    reserved = dataclasses.replace(MEMORY, huge_pages=[HugePagePool(2 << 20, 512, 500, 0, 0)])
    assert _field(reserved, "Huge 2.00 MiB") == "12 used of 512 pages (1.00 GiB)"
