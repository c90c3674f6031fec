"""Process tables (per GPU or MIG device) and the per-user rollup."""

from __future__ import annotations

from dataclasses import dataclass

from hwinfo.model.gpu import Gpu, GpuProcess, UserUsage
from hwinfo.render.text.layout import Section
from hwinfo.render.units import NA, or_na, printable, size


def process_owner(proc: GpuProcess) -> tuple[str, str]:
    """(user, command) cells; a PID outside our namespace says so instead of guessing.

    Any local user names their own processes: control characters in them are escaped.
    """
    if not proc.visible:
        return "?", "(not in this PID namespace, or exited)"
    return printable(proc.user or "?"), printable(proc.command or proc.name or "?")


def process_rows(procs: list[tuple[str, GpuProcess]]) -> list[list[str]]:
    """Rows for (where, process) pairs: `where` is the MIG device index, or "" outside MIG."""
    rows = []
    for where, proc in procs:
        user, command = process_owner(proc)
        rows.append([
            where,
            str(proc.pid),
            user,
            or_na(proc.used_memory_bytes, size).replace(NA, "n/a"),
            {"compute": "C", "graphics": "G"}.get(proc.type, "C+G"),
            command,
        ])
    return rows


def add_process_table(section: Section, gpu: Gpu) -> None:
    """One table for the whole GPU; on a MIG GPU its first column names the MIG device."""
    procs = [("", p) for p in gpu.processes or ()]
    if gpu.mig is not None:
        procs += [(str(dev.index), p) for dev in gpu.mig.devices for p in dev.processes or ()]
    if not procs:
        return
    header = ("MIG", "PID", "User", "Memory", "T", "Command")
    align = (True, True, False, True, False, False)
    rows = process_rows(procs)
    if not any(where for where, _ in procs):
        header, align, rows = header[1:], align[1:], [row[1:] for row in rows]
    section.line(section.style.dim("Processes"))
    section.table(header, rows, align, indent=2)


@dataclass
class UserTotal:
    """One user's GPU use across every GPU."""

    user: str | None
    used_memory_bytes: int | None  # None: NVML told the memory of none of their processes
    processes: int
    gpu_indices: list[int]


def user_totals(users: list[UserUsage]) -> list[UserTotal]:
    """The per-(GPU, user) rollup summed per user, most memory first."""
    totals: dict[str | None, UserTotal] = {}
    for usage in users:
        total = totals.setdefault(usage.user, UserTotal(usage.user, None, 0, []))
        if usage.used_memory_bytes is not None:
            total.used_memory_bytes = (total.used_memory_bytes or 0) + usage.used_memory_bytes
        total.processes += usage.processes
        total.gpu_indices.append(usage.gpu_index)
    return sorted(totals.values(),
                  key=lambda t: (-(t.used_memory_bytes or 0), -t.processes, t.user or "~"))


def render_users(users: list[UserUsage], section: Section) -> None:
    """A row per user with their totals across GPUs, most memory first."""
    rows = [
        [printable(t.user or "(unknown)"), ",".join(map(str, t.gpu_indices)),
         or_na(t.used_memory_bytes, size).replace(NA, "n/a"), str(t.processes)]
        for t in user_totals(users)
    ]
    section.table(("User", "GPUs", "Memory", "Procs"), rows, (False, False, True, True))
