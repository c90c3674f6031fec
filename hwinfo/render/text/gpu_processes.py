"""Process tables (per GPU or MIG device) and the per-user rollup."""

from __future__ import annotations

from hwinfo.model.gpu import GpuProcess, UserUsage
from hwinfo.render.text.layout import Section
from hwinfo.render.units import NA, or_na, size


def process_owner(proc: GpuProcess) -> tuple[str, str]:
    """(user, command) cells; a PID outside our namespace says so instead of guessing."""
    if not proc.visible:
        return "?", "(not in this PID namespace, or exited)"
    return proc.user or "?", proc.command or proc.name or "?"


def process_rows(procs: list[GpuProcess]) -> list[list[str]]:
    rows = []
    for proc in procs:
        user, command = process_owner(proc)
        rows.append([
            str(proc.pid),
            user,
            or_na(proc.used_memory_bytes, size).replace(NA, "n/a"),
            {"compute": "C", "graphics": "G"}.get(proc.type, "C+G"),
            command,
        ])
    return rows


PROCESS_HEADER = ("PID", "User", "Memory", "T", "Command")
PROCESS_ALIGN = (True, False, True, False, False)


def add_process_table(section: Section, procs: list[GpuProcess], indent: int) -> None:
    section.table(PROCESS_HEADER, process_rows(procs), PROCESS_ALIGN, indent=indent)


def render_users(users: list[UserUsage], section: Section) -> None:
    rows = [
        [u.user or "(unknown)", str(u.gpu_index), size(u.used_memory_bytes), str(u.processes)]
        for u in users
    ]
    section.table(("User", "GPU", "Memory", "Procs"), rows, (False, True, True, True))
