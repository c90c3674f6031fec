"""The whole text report: the sections of a snapshot, in reading order."""

from __future__ import annotations

from hwinfo.model.snapshot import Snapshot
from hwinfo.render.text.cpu import render_cpu
from hwinfo.render.text.gpu import render_gpus
from hwinfo.render.text.host import render_host
from hwinfo.render.text.memory import render_memory
from hwinfo.render.text.style import Style


def render_text(snapshot: Snapshot, style: Style, show_processes: bool = True) -> str:
    blocks = [
        render_host(snapshot, style),
        render_cpu(snapshot.cpu, style),
        render_memory(snapshot.memory, style),
        render_gpus(snapshot.gpu, style, show_processes),
    ]
    for error in snapshot.errors:
        blocks.append(style.warn(f"{error.source}: collection failed: {error.message}"))
    return "\n\n".join(b for b in blocks if b) + "\n"
